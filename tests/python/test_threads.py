"""Python threads share one forum; the GIL is released while the engine works."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import List

import parley

THREADS = 8
POSTS = 25


def test_threads_post_in_parallel_and_nothing_is_lost(tmp_path: Path) -> None:
    path = tmp_path / "parallel.redb"
    # Many reports without progress: this test is about threads, not loops (SPEC §15).
    with parley.Forum(path, limits={"writes_per_minute": 0}, guards=False) as forum:
        opener = forum.session(forum.create_token("opener"))
        thread = opener.ask("Everyone, report in.")["thread"]["id"]
        tokens = [forum.create_token(f"worker{i}") for i in range(THREADS)]
        errors: List[BaseException] = []
        start = threading.Barrier(THREADS)

        def work(index: int) -> None:
            try:
                session = forum.session(tokens[index])
                start.wait(timeout=30)
                for n in range(POSTS):
                    session.note(f"worker {index} report {n}", thread=thread)
                    session.ask(f"worker {index} question {n}?")
            except BaseException as exc:  # reported to the main thread below
                errors.append(exc)

        workers = [threading.Thread(target=work, args=(i,)) for i in range(THREADS)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join(timeout=120)
        assert not any(w.is_alive() for w in workers)
        assert errors == []

    with parley.Forum(path) as again:
        reader = again.session(again.create_token("reader", rights=("read",)))
        view = reader.thread(thread)
        assert view["thread"]["message_count"] == 1 + THREADS * POSTS
        bodies = {m["body"] for m in view["messages"][0]["replies"]}
        assert bodies == {f"worker {i} report {n}" for i in range(THREADS) for n in range(POSTS)}
        ids: set = set()
        cursor = None
        while True:
            page = reader.threads(since=cursor, limit=200)
            ids.update(t["id"] for t in page["items"])
            cursor = page["cursor"]
            if not page["more"]:
                break
        assert len(ids) == 1 + THREADS * POSTS


def test_reads_run_while_another_thread_writes() -> None:
    with parley.Forum(limits={"writes_per_minute": 0}) as forum:
        writer = forum.session(forum.create_token("writer"))
        reader = forum.session(forum.create_token("reader"))
        stop = threading.Event()
        seen: List[int] = []

        def read() -> None:
            while not stop.is_set():
                seen.append(len(reader.threads(limit=200)["items"]))

        thread = threading.Thread(target=read)
        thread.start()
        for i in range(100):
            writer.ask(f"Question {i}?")
        stop.set()
        thread.join(timeout=30)
        assert seen == sorted(seen)  # snapshots only ever grow
        assert len(reader.threads(limit=200)["items"]) == 100


def test_the_gil_is_released_during_engine_calls(tmp_path: Path) -> None:
    """With a long switch interval, a thread running Python code keeps the GIL; the
    main thread only gets to run while the worker sits inside the engine with the
    GIL released."""
    import sys
    import time

    with parley.Forum(tmp_path / "gil.redb", limits={"writes_per_minute": 0}) as forum:
        session = forum.session(forum.create_token("alice"))
        ticks_during = 0
        interval = sys.getswitchinterval()
        sys.setswitchinterval(5.0)
        try:
            worker = threading.Thread(target=lambda: [session.ask(f"Q{i}?") for i in range(60)])
            worker.start()
            while worker.is_alive():
                ticks_during += 1
                time.sleep(0.0002)
            worker.join()
        finally:
            sys.setswitchinterval(interval)
        assert len(session.threads(limit=200)["items"]) == 60
        assert ticks_during >= 10, ticks_during
