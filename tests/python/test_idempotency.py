"""Idempotent posts (SPEC §14.3) from Python: ``idempotency_key`` on every posting
method, ``replayed`` on every post result, conflicts, racing retries, and a session
that keys its posts and retries storage failures itself."""

from __future__ import annotations

import asyncio
import copy
import re
import threading
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple

import pytest

import parley
import parley.aio

KEY_FORM = re.compile(r"[A-Za-z0-9._:-]{1,128}")


def message_count(forum: parley.Forum, token: str) -> int:
    """Every message of the forum, counted through ``get_messages``."""
    count, since = 0, None
    while True:
        page = forum.session(token).messages(since=since, limit=200)
        count += len(page["items"])
        since = page["cursor"]
        if not page["more"]:
            return count


def event_count(forum: parley.Forum, token: str) -> int:
    return len(forum.session(token).events(limit=200)["items"])


# Every posting method, each step as (actor, method, positional args, keyword args);
# "$name" in a keyword argument is the id an earlier step saved as `name`.
Step = Tuple[str, str, Tuple[Any, ...], Dict[str, Any], Optional[str]]
STEPS: List[Step] = [
    ("alice", "ask", ("Which port?",), {}, "asked"),
    ("bob", "answer", ("7878.",), {"thread": "$thread"}, "answered"),
    ("alice", "note", ("Thanks.",), {"parent": "$answered"}, None),
    ("alice", "propose", ("Keep 7878?",), {"parent": "$answered"}, None),
    ("bob", "object", ("Not sure.",), {"thread": "$thread"}, "objected"),
    ("alice", "handoff", ("Judge, please.",), {"to": "ainotes:judge", "parent": "$objected"}, None),
    ("alice", "decide", ("7878 it is.",), {"thread": "$thread"}, None),
    ("alice", "mark", ("Done.",), {"state": "closed", "thread": "$thread"}, None),
    ("bob", "claim", ("CI is green.",), {"thread": "$thread"}, "claim"),
    ("alice", "attest", ("Seen it.",), {"claim": "$claim", "evidence": [{"kind": "log", "ref": "ci/1"}]}, None),
    ("judge", "verify", ("Sealed.",), {"claim": "$claim"}, None),
    ("judge", "refute", ("Red again.",), {"claim": "$claim", "evidence": [{"kind": "log", "ref": "ci/2"}]}, None),
    ("alice", "reopen", ("Again.",), {"thread": "$thread"}, None),
    ("alice", "post", ("note", "Generic."), {"parent": "$answered"}, None),
]


def resolve(kwargs: Dict[str, Any], saved: Dict[str, str]) -> Dict[str, Any]:
    return {k: saved[v[1:]] if isinstance(v, str) and v.startswith("$") else v for k, v in kwargs.items()}


def save(saved: Dict[str, str], name: Optional[str], result: Dict[str, Any]) -> None:
    if name == "asked":
        saved["thread"] = result["thread"]["id"]
    if name == "claim":
        saved["claim"] = result["claim"]["id"]
    elif name is not None:
        saved[name] = result["message"]["id"]


def test_every_posting_method_replays_under_its_key(forum: parley.Forum, tokens: Dict[str, str]) -> None:
    sessions = {name: forum.session(tokens[name]) for name in ("alice", "bob", "judge")}
    saved: Dict[str, str] = {}
    for n, (actor, method, args, kwargs, name) in enumerate(STEPS):
        call = getattr(sessions[actor], method)
        key = f"step-{n}:{method}"
        first = call(*args, **resolve(kwargs, saved), idempotency_key=key)
        assert first["replayed"] is False, method
        written = message_count(forum, tokens["alice"])
        events = event_count(forum, tokens["alice"])
        again = call(*args, **resolve(kwargs, saved), idempotency_key=key)
        assert again["replayed"] is True, method
        assert again["message"] == first["message"], method
        assert again["thread"]["id"] == first["thread"]["id"]
        assert "event" not in again and "events" not in again
        # Nothing written: no message, no event.
        assert message_count(forum, tokens["alice"]) == written == n + 1
        assert event_count(forum, tokens["alice"]) == events
        save(saved, name, first)


def test_async_posting_methods_replay_under_their_keys(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with await parley.aio.open(tmp_path / "aio.redb", limits={"writes_per_minute": 0}) as forum:
            tokens = {
                "alice": await forum.create_token("alice"),
                "bob": await forum.create_token("bob"),
                "judge": await forum.create_token("judge", rights=("read", "write", "verify")),
            }
            sessions = {name: forum.session(token) for name, token in tokens.items()}
            saved: Dict[str, str] = {}
            for n, (actor, method, args, kwargs, name) in enumerate(STEPS):
                call = getattr(sessions[actor], method)
                first = await call(*args, **resolve(kwargs, saved), idempotency_key=f"k{n}")
                again = await call(*args, **resolve(kwargs, saved), idempotency_key=f"k{n}")
                assert (first["replayed"], again["replayed"]) == (False, True), method
                assert again["message"]["id"] == first["message"]["id"]
                save(saved, name, first)
            assert message_count(forum.forum, tokens["alice"]) == len(STEPS)
            # The generic call returns the engine's result as it is: `replayed` only on a replay.
            raw = await sessions["alice"].call("post", {"kind": "ask", "body": "Raw?", "idempotency_key": "raw"})
            assert "replayed" not in raw
            raw = await sessions["alice"].call("post", {"kind": "ask", "body": "Raw?", "idempotency_key": "raw"})
            assert raw["replayed"] is True

    asyncio.run(scenario())


def test_a_replay_returns_the_thread_as_it_is_now(forum: parley.Forum, tokens: Dict[str, str]) -> None:
    alice, bob = forum.session(tokens["alice"]), forum.session(tokens["bob"])
    asked = alice.ask("Which port?", idempotency_key="q-1")
    bob.answer("7878.", thread=asked["thread"]["id"])
    again = alice.ask("Which port?", idempotency_key="q-1")
    assert again["replayed"] is True and again["message"] == asked["message"]
    assert (again["thread"]["message_count"], again["thread"]["state"]) == (2, "answered")
    # A post without a key is never a replay, and the generic call adds nothing.
    assert alice.ask("Another?")["replayed"] is False
    assert "replayed" not in forum.call(tokens["alice"], "post", {"kind": "ask", "body": "Raw?"})


def test_another_envelope_under_a_key_is_a_conflict(forum: parley.Forum, tokens: Dict[str, str]) -> None:
    alice = forum.session(tokens["alice"])
    alice.ask("Which port?", idempotency_key="q-1")
    for attempt in (
        lambda: alice.ask("Which port, again?", idempotency_key="q-1"),
        lambda: alice.ask("Which port?", to="ainotes:bob", idempotency_key="q-1"),
        lambda: alice.note("Which port?", thread=1, idempotency_key="q-1"),
        lambda: alice.with_extension("planner").ask("Which port?", idempotency_key="q-1"),
    ):
        with pytest.raises(parley.Conflict) as info:
            attempt()
        refusal = info.value
        assert type(refusal) is parley.Conflict
        assert (refusal.reason, refusal.status, refusal.field) == ("idempotency_conflict", 409, "idempotency_key")
        assert "q-1" in refusal.message
    assert message_count(forum, tokens["alice"]) == 1
    # Keys are per identity: bob's "q-1" is his own.
    assert forum.session(tokens["bob"]).ask("Which port?", idempotency_key="q-1")["replayed"] is False
    assert message_count(forum, tokens["alice"]) == 2


def test_a_refused_post_is_not_remembered(forum: parley.Forum, tokens: Dict[str, str]) -> None:
    alice = forum.session(tokens["alice"])
    with pytest.raises(parley.NotFound):
        alice.answer("Lost.", thread="th_99", idempotency_key="again")
    fresh = alice.ask("A fresh post under the key of a refused one", idempotency_key="again")
    assert fresh["replayed"] is False


def test_malformed_keys_are_refused_by_the_engine(forum: parley.Forum, tokens: Dict[str, str]) -> None:
    alice = forum.session(tokens["alice"])
    for key in ("", "has space", "ü", "k" * 129):
        with pytest.raises(parley.BadRequest) as info:
            alice.ask("Keyed?", idempotency_key=key)
        assert (info.value.reason, info.value.field) == ("invalid_body", "idempotency_key")
    assert alice.ask("The longest key", idempotency_key="k" * 128)["replayed"] is False
    assert alice.ask("Every character", idempotency_key="Az09._:-")["replayed"] is False


def test_new_idempotency_key() -> None:
    keys = {parley.new_idempotency_key() for _ in range(1000)}
    assert len(keys) == 1000
    for key in keys:
        assert KEY_FORM.fullmatch(key), key
    assert "new_idempotency_key" in parley.__all__


def test_racing_threads_with_one_key_write_once(tmp_path: Path) -> None:
    with parley.Forum(tmp_path / "race.redb", limits={"writes_per_minute": 0}) as forum:
        token = forum.create_token("alice")
        forum.create_token("bob")
        racers = 16
        barrier = threading.Barrier(racers)
        results: List[Dict[str, Any]] = []
        errors: List[BaseException] = []
        lock = threading.Lock()

        def post() -> None:
            session = forum.session(token)
            barrier.wait()
            try:
                result = session.ask("Which port?", to="ainotes:bob", idempotency_key="race-1")
            except BaseException as exc:  # checked below
                with lock:
                    errors.append(exc)
                return
            with lock:
                results.append(result)

        threads = [threading.Thread(target=post) for _ in range(racers)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(30)
        assert not errors and len(results) == racers
        assert sorted(r["replayed"] for r in results) == [False] + [True] * (racers - 1)
        assert len({r["message"]["id"] for r in results}) == 1
        assert message_count(forum, token) == 1


def test_sub_agents_of_one_token_share_its_keys(forum: parley.Forum, tokens: Dict[str, str]) -> None:
    """Keys belong to the identity: two extensions under one key are two envelopes."""
    planner = forum.session(tokens["alice"], "planner")
    worker = planner.with_extension("worker")
    planner.ask("Which port?", idempotency_key="shared")
    with pytest.raises(parley.Conflict) as info:
        worker.ask("Which port?", idempotency_key="shared")
    assert info.value.reason == "idempotency_conflict"
    # Generated keys never collide.
    planner_keyed = forum.session(tokens["alice"], "planner", retries=1)
    worker_keyed = planner_keyed.with_extension("worker")
    assert worker_keyed.retries == 1
    assert planner_keyed.ask("Which port?")["replayed"] is False
    assert worker_keyed.ask("Which port?")["replayed"] is False


# Retries ---------------------------------------------------------------------------


class Flaky:
    """Stands in for ``Forum.call``: records every attempt, and makes the first ``fail``
    calls of ``operation`` raise a StorageError, after the real call (``after``: the
    write committed, its answer was lost) or instead of it."""

    def __init__(self, forum: parley.Forum, *, fail: int = 1, after: bool = True, operation: str = "post") -> None:
        self.real: Callable[..., Dict[str, Any]] = forum.call
        self.fail = fail
        self.after = after
        self.operation = operation
        self.attempts: List[Tuple[str, Any]] = []
        self.lock = threading.Lock()

    def __call__(self, token: Optional[str], operation: str, args: Any = None) -> Dict[str, Any]:
        with self.lock:
            self.attempts.append((operation, copy.deepcopy(args)))
            failing = operation == self.operation and self.fail > 0
            if failing:
                self.fail -= 1
        if failing:
            if self.after:
                self.real(token, operation, args)
            raise parley.StorageError("injected: the disk went away")
        return self.real(token, operation, args)

    def posts(self) -> List[Any]:
        return [args for operation, args in self.attempts if operation == "post"]


def test_a_storage_error_after_the_commit_is_retried_and_replayed(
    forum: parley.Forum, tokens: Dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    flaky = Flaky(forum)
    monkeypatch.setattr(forum, "call", flaky)
    alice = forum.session(tokens["alice"], retries=3, retry_backoff=0)
    result = alice.ask("Which port?")
    assert result["replayed"] is True
    first, second = flaky.posts()
    assert first == second and KEY_FORM.fullmatch(first["idempotency_key"])
    monkeypatch.undo()
    assert message_count(forum, tokens["alice"]) == 1
    assert alice.thread(result["thread"]["id"])["thread"]["message_count"] == 1


def test_a_storage_error_before_the_write_is_retried_and_writes_once(
    forum: parley.Forum, tokens: Dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    flaky = Flaky(forum, fail=2, after=False)
    monkeypatch.setattr(forum, "call", flaky)
    alice = forum.session(tokens["alice"], retries=2, retry_backoff=0)
    result = alice.ask("Which port?")
    assert result["replayed"] is False
    assert len(flaky.posts()) == 3 and len({p["idempotency_key"] for p in flaky.posts()}) == 1
    monkeypatch.undo()
    assert message_count(forum, tokens["alice"]) == 1


def test_each_call_gets_its_own_key_and_a_given_key_is_kept(
    forum: parley.Forum, tokens: Dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    flaky = Flaky(forum, fail=0)
    monkeypatch.setattr(forum, "call", flaky)
    keyed = forum.session(tokens["alice"], retries=1)
    keyed.ask("One?")
    keyed.ask("Two?")
    keyed.ask("Three?", idempotency_key="mine")
    keyed.call("post", {"kind": "ask", "body": "Four?"})
    keyed.call("post", {"kind": "ask", "body": "Five?", "idempotency_key": None})
    keys = [p["idempotency_key"] for p in flaky.posts()]
    assert keys[2] == "mine" and len(set(keys)) == 5
    assert all(KEY_FORM.fullmatch(k) for k in keys)
    # Without retries the session sends no key of its own.
    forum.session(tokens["alice"]).ask("Six?")
    assert "idempotency_key" not in flaky.posts()[-1]


def test_retries_run_out(forum: parley.Forum, tokens: Dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    flaky = Flaky(forum, fail=10, after=False)
    monkeypatch.setattr(forum, "call", flaky)
    alice = forum.session(tokens["alice"], retries=2, retry_backoff=0.01)
    start = time.monotonic()
    with pytest.raises(parley.StorageError, match="injected"):
        alice.ask("Which port?")
    # Three attempts, paused 0.01 s and then 0.02 s.
    assert len(flaky.posts()) == 3 and time.monotonic() - start >= 0.03
    with pytest.raises(parley.StorageError):
        forum.session(tokens["alice"]).ask("Which port?")
    assert len(flaky.posts()) == 4


def test_refusals_and_host_errors_are_never_retried(monkeypatch: pytest.MonkeyPatch) -> None:
    with parley.Forum(limits={"writes_per_minute": 1}) as forum:
        token = forum.create_token("alice")
        flaky = Flaky(forum, fail=0)
        monkeypatch.setattr(forum, "call", flaky)
        alice = forum.session(token, retries=5, retry_backoff=0)
        with pytest.raises(parley.NotFound):
            alice.answer("Lost.", thread="th_99")
        assert len(flaky.attempts) == 1
        alice.ask("One?")
        with pytest.raises(parley.RateLimited):
            alice.ask("Two?")
        assert len(flaky.attempts) == 3
        with pytest.raises(parley.BadRequest):
            alice.search("")
        assert len(flaky.attempts) == 4
        with pytest.raises(ValueError, match="unknown operation"):
            alice.call("fly")
        assert len(flaky.attempts) == 5
        monkeypatch.undo()
        forum.close()
        with pytest.raises(ValueError, match="closed"):
            alice.ask("Three?")


def test_reads_are_retried_as_they_are(
    forum: parley.Forum, tokens: Dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    forum.session(tokens["bob"]).ask("Anyone?")
    flaky = Flaky(forum, fail=1, after=False, operation="get_inbox")
    monkeypatch.setattr(forum, "call", flaky)
    alice = forum.session(tokens["alice"], retries=1, retry_backoff=0)
    assert len(alice.inbox()["items"]) == 1
    assert [operation for operation, _ in flaky.attempts] == ["get_inbox", "get_inbox"]
    assert flaky.attempts[0][1] == flaky.attempts[1][1]


def test_dispatch_retries_a_model_post_under_one_key(
    forum: parley.Forum, tokens: Dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    flaky = Flaky(forum)
    monkeypatch.setattr(forum, "call", flaky)
    alice = forum.session(tokens["alice"], "planner", retries=1, retry_backoff=0)
    result = alice.dispatch("post", '{"kind": "ask", "body": "Which port?"}')
    assert result["replayed"] is True and result["message"]["from"]["extension"] == "planner"
    first, second = flaky.posts()
    assert first == second and KEY_FORM.fullmatch(first["idempotency_key"])
    # A key the model chose is kept.
    flaky.fail = 1
    chosen = alice.dispatch("post", {"kind": "ask", "body": "Which host?", "idempotency_key": "model-1"})
    assert chosen["replayed"] is True and flaky.posts()[-1]["idempotency_key"] == "model-1"
    monkeypatch.undo()
    assert message_count(forum, tokens["alice"]) == 2


def test_async_retries_pause_on_the_loop(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    async def scenario() -> None:
        async with await parley.aio.open(tmp_path / "retry.redb") as forum:
            token = await forum.create_token("alice")
            flaky = Flaky(forum.forum, fail=2)
            monkeypatch.setattr(forum.forum, "call", flaky)
            alice = forum.session(token, retries=2, retry_backoff=0.05)
            assert alice.retries == 2
            # The pauses are asyncio.sleep: no thread sleeps through them.
            real_sleep, slept = time.sleep, []
            monkeypatch.setattr(time, "sleep", lambda s: (slept.append(s), real_sleep(s)))
            beats = 0
            done = asyncio.Event()

            async def heartbeat() -> None:
                nonlocal beats
                while not done.is_set():
                    beats += 1
                    await asyncio.sleep(0.005)

            task = asyncio.create_task(heartbeat())
            result = await alice.ask("Which port?")
            done.set()
            await task
            assert result["replayed"] is True
            posts = flaky.posts()
            assert len(posts) == 3 and len({p["idempotency_key"] for p in posts}) == 1
            # The loop ran on through the pauses (0.05 s, then 0.1 s).
            assert beats >= 3 and slept == []
            flaky.fail, flaky.operation, flaky.after = 1, "search", False
            assert (await alice.search("port"))["items"][0]["message"]["id"] == result["message"]["id"]
            flaky.fail, flaky.operation = 1, "post"
            dispatched = await alice.dispatch("post", {"kind": "ask", "body": "Which host?"})
            # A tool result is the engine's, as over MCP: `replayed` only on a replay.
            assert "error" not in dispatched and "replayed" not in dispatched
            assert flaky.posts()[-1] == flaky.posts()[-2]
            monkeypatch.undo()
            assert message_count(forum.forum, token) == 2

    asyncio.run(scenario())


def test_retry_settings_are_checked(forum: parley.Forum, tokens: Dict[str, str]) -> None:
    for retries, error in (("3", TypeError), (True, TypeError), (1.0, TypeError), (-1, ValueError)):
        with pytest.raises(error, match="retries"):
            forum.session(tokens["alice"], retries=retries)  # type: ignore[arg-type]
    for backoff, error in (("0.1", TypeError), (False, TypeError), (-0.1, ValueError), (float("inf"), ValueError)):
        with pytest.raises(error, match="retry_backoff"):
            forum.session(tokens["alice"], retry_backoff=backoff)  # type: ignore[arg-type]
    session = forum.session(tokens["alice"], retries=4, retry_backoff=1)
    assert (session.retries, session.retry_backoff) == (4, 1.0)
    assert forum.session(tokens["alice"]).retries == 0
