"""The listen profile from Python threads: reads that wait (SPEC §14.2), feeds, the
commit descriptor, and what ends a wait."""

from __future__ import annotations

import inspect
import os
import select
import threading
import time
from typing import Any, Callable, Dict, Iterator, List

import pytest

import parley
from parley import _args

# Longer than any test should take: a wait that runs out fails the test by its timing.
LONG = 20.0


@pytest.fixture
def listening() -> Iterator[parley.Forum]:
    with parley.Forum(limits={"writes_per_minute": 0}) as forum:
        yield forum


def in_thread(work: Callable[[], Any]) -> Dict[str, Any]:
    """Starts ``work`` in a thread; the dict gets its ``result`` (or ``error``) and ``took``."""
    out: Dict[str, Any] = {}

    def run() -> None:
        start = time.monotonic()
        try:
            out["result"] = work()
        except BaseException as exc:  # checked by the test
            out["error"] = exc
        out["took"] = time.monotonic() - start

    thread = threading.Thread(target=run)
    out["thread"] = thread
    thread.start()
    return out


def test_listen_is_on_by_default(listening: parley.Forum) -> None:
    manifest = listening.manifest()
    assert manifest["profiles"]["listen"]["operations"] == list(_args.WAITING_READS)
    assert "dialectic" in manifest["profiles"]
    # New operations come after the eight of v1, in a fixed order (SPEC §11).
    assert manifest["operations"] == list(parley.OPERATIONS)
    assert parley.OPERATIONS[8:10] == ("get_messages", "search")
    assert len(parley.OPERATIONS) == 20
    assert (
        str(inspect.signature(parley.Forum).parameters["profiles"])
        == "profiles=['dialectic', 'listen', 'guards', 'coordination', 'provenance']"
    )
    assert parley.OPERATIONS[15:] == ("get_digest", "put_artifact", "get_artifact", "export_claim", "import_claim")


def test_a_waiting_read_releases_the_gil_and_returns_when_a_post_lands(listening: parley.Forum) -> None:
    alice = listening.session(listening.create_token("alice"))
    bob = listening.session(listening.create_token("bob"))
    waiting = in_thread(lambda: bob.inbox(wait=LONG))
    # This thread runs Python (the sleep, the post) while the other one waits: the
    # wait holds no GIL. Had it held it, the post would only come after LONG.
    time.sleep(0.2)
    asked = alice.ask("Anyone there?", to="ainotes:bob")
    waiting["thread"].join(LONG + 5)
    assert "error" not in waiting, waiting.get("error")
    assert waiting["took"] < LONG / 2
    assert [i["thread"]["id"] for i in waiting["result"]["items"]] == [asked["thread"]["id"]]


def test_every_waiting_read_wakes(listening: parley.Forum) -> None:
    alice = listening.session(listening.create_token("alice"))
    bob = listening.session(listening.create_token("bob"))
    start = {
        "inbox": bob.inbox()["cursor"],
        "messages": bob.messages()["cursor"],
        "events": bob.events()["cursor"],
        "threads": bob.threads()["cursor"],
    }
    waits = [
        in_thread(lambda: bob.inbox(since=start["inbox"], wait=LONG)),
        in_thread(lambda: bob.messages(since=start["messages"], wait=LONG)),
        in_thread(lambda: bob.threads(since=start["threads"], wait=LONG)),
        in_thread(lambda: alice.events(since=start["events"], wait=LONG)),
    ]
    time.sleep(0.2)
    asked = alice.ask("Which port?")
    # The question is in bob's inbox only until he answers: answer once it was seen.
    for waiting in waits[:3]:
        waiting["thread"].join(LONG + 5)
    assert waits[3]["thread"].is_alive()  # a new thread records no event
    bob.answer("7878.", thread=asked["thread"]["id"])
    for waiting in waits:
        waiting["thread"].join(LONG + 5)
        assert "error" not in waiting, waiting.get("error")
        assert waiting["took"] < LONG / 2
        assert waiting["result"]["items"]


def test_a_wait_that_runs_out_returns_the_plain_empty_page(listening: parley.Forum) -> None:
    alice = listening.session(listening.create_token("alice"))
    alice.ask("My own question?")
    start = time.monotonic()
    page = alice.inbox(wait=0.1)  # an agent is never told it is due to answer itself
    assert time.monotonic() - start >= 0.09
    assert page["items"] == [] and page["more"] is False and page["cursor"]
    assert alice.inbox(wait=0) == alice.inbox()


def test_closing_the_forum_ends_waits_with_their_current_result() -> None:
    forum = parley.Forum(limits={"writes_per_minute": 0})
    bob = forum.session(forum.create_token("bob"))
    waiting = in_thread(lambda: bob.messages(wait=LONG))
    time.sleep(0.2)
    forum.close()
    waiting["thread"].join(LONG + 5)
    assert waiting["took"] < LONG / 2
    assert waiting["result"]["items"] == []
    assert forum.closed and forum.waits_ended


def test_end_waits_ends_every_wait_now_and_later(listening: parley.Forum) -> None:
    bob = listening.session(listening.create_token("bob"))
    assert listening.waits_ended is False
    waiting = in_thread(lambda: bob.inbox(wait=LONG))
    time.sleep(0.2)
    listening.end_waits()
    waiting["thread"].join(LONG + 5)
    assert waiting["took"] < LONG / 2 and waiting["result"]["items"] == []
    assert listening.waits_ended is True
    start = time.monotonic()
    assert bob.events(wait=LONG)["items"] == []
    assert time.monotonic() - start < LONG / 2
    listening.end_waits()  # idempotent
    # The forum itself goes on.
    assert bob.ask("Still here?")["thread"]["state"] == "open"


def test_wait_out_of_range_is_refused_like_wait_ms(listening: parley.Forum) -> None:
    bob = listening.session(listening.create_token("bob"))
    most = listening.limits["wait_max_ms"]
    assert most == 30_000
    for wait in (most / 1000 + 0.001, -1, -0.5):
        with pytest.raises(parley.BadRequest) as info:
            bob.inbox(wait=wait)
        assert (info.value.reason, info.value.field) == ("invalid_argument", "wait_ms")
    assert info.value.limit == "wait_max_ms"
    with pytest.raises(parley.BadRequest):
        bob.messages(wait=1e300)  # out of every range, still the engine's refusal
    # The same refusal as the raw argument.
    with pytest.raises(parley.BadRequest) as raw:
        listening.call(bob.token, "get_inbox", {"wait_ms": most + 1})
    with pytest.raises(parley.BadRequest) as typed:
        bob.inbox(wait=(most + 1) / 1000)
    assert raw.value.data == typed.value.data


def test_without_the_profile_wait_is_an_unknown_argument() -> None:
    with parley.Forum(profiles=["dialectic"]) as forum:
        assert "listen" not in forum.manifest()["profiles"]
        bob = forum.session(forum.create_token("bob"))
        assert bob.inbox()["items"] == []
        with pytest.raises(parley.BadRequest) as info:
            bob.inbox(wait=1)
        assert (info.value.reason, info.value.field) == ("invalid_argument", "wait_ms")
        with pytest.raises(parley.BadRequest):
            next(bob.feed("messages"))


def test_wait_takes_seconds_as_int_or_float(listening: parley.Forum) -> None:
    bob = listening.session(listening.create_token("bob"))
    for wrong in ("1", True, [1], b"1"):
        with pytest.raises(TypeError, match="wait must be a number of seconds"):
            bob.inbox(wait=wrong)  # type: ignore[arg-type]
    for not_finite in (float("nan"), float("inf")):
        with pytest.raises(ValueError, match="finite"):
            bob.threads(wait=not_finite)
    assert _args.wait_ms(1) == 1000 and _args.wait_ms(0.25) == 250 and _args.wait_ms(None) is None


def test_the_sync_feed_resumes_from_its_cursor(listening: parley.Forum) -> None:
    alice = listening.session(listening.create_token("alice"))
    bob = listening.session(listening.create_token("bob"))
    for n in range(5):
        (bob if n % 2 else alice).ask(f"Question {n}?")
    feed = bob.feed("messages")
    assert feed.cursor is None and feed.kind == "messages"
    got: List[Dict[str, Any]] = []
    for message in feed:
        got.append(message)
        if len(got) == 3:
            break
    resumed = bob.feed("messages", since=feed.cursor)

    def later() -> None:
        time.sleep(0.2)
        for n in range(5, 8):
            (bob if n % 2 else alice).ask(f"Question {n}?")
        time.sleep(0.2)
        listening.end_waits()

    poster = threading.Thread(target=later)
    poster.start()
    got.extend(resumed)  # waits for the later posts, ends with end_waits
    poster.join(LONG)
    ids = [m["id"] for m in got]
    assert ids == [m["id"] for m in bob.messages()["items"]]
    assert len(ids) == 8 == len(set(ids))
    assert next(bob.feed("messages"), None) is None  # the waits are over


def test_a_feed_of_one_thread(listening: parley.Forum) -> None:
    alice = listening.session(listening.create_token("alice"))
    bob = listening.session(listening.create_token("bob"))
    asked = alice.ask("Which port?")
    alice.ask("Elsewhere?")
    answered = bob.answer("7878.", thread=asked["thread"]["id"])
    events = bob.feed("events", thread=asked["thread"]["id"])
    assert next(events)["message"] == answered["message"]["id"]
    messages = bob.feed("messages", thread=asked["thread"]["id"])
    assert [next(messages)["id"], next(messages)["id"]] == [asked["message"]["id"], answered["message"]["id"]]
    listening.end_waits()
    assert list(messages) == [] and list(events) == []


def test_an_inbox_feed_hands_over_each_turn_once(listening: parley.Forum) -> None:
    alice = listening.session(listening.create_token("alice"))
    bob = listening.session(listening.create_token("bob"), "worker")
    feed = bob.feed()  # "inbox"
    first = alice.ask("One?")
    item = next(feed)
    assert item["thread"]["id"] == first["thread"]["id"]
    second = alice.ask("Two?", to="ainotes:bob")
    assert next(feed)["message"]["id"] == second["message"]["id"]
    # Bob answers: the turn goes to alice, never back to bob's own inbox.
    answered = bob.answer("Yes.", thread=second["thread"]["id"])
    again = alice.object("Are you sure?", parent=answered["message"]["id"])
    assert next(feed)["message"]["id"] == again["message"]["id"]
    listening.close()
    assert next(feed, None) is None


def test_a_feed_checks_its_arguments(listening: parley.Forum) -> None:
    bob = listening.session(listening.create_token("bob"))
    with pytest.raises(ValueError, match="kinds are inbox, messages, events"):
        bob.feed("threads")
    with pytest.raises(TypeError, match="kind"):
        bob.feed(1)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="no thread"):
        bob.feed("inbox", thread="th_1")
    with pytest.raises(TypeError, match="thread"):
        bob.feed("messages", thread=1.5)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="since"):
        bob.feed("events", since=3)  # type: ignore[arg-type]
    with pytest.raises(parley.BadRequest) as info:
        next(bob.feed("events", since="not-a-cursor"))
    assert info.value.reason == "invalid_cursor"
    with pytest.raises(parley.NotFound):
        next(bob.feed("messages", thread="th_99"))


def drain(fd: int) -> "tuple[int, bool]":
    """Reads what is waiting: the bytes read, and whether the end of file came."""
    count = 0
    while True:
        try:
            chunk = os.read(fd, 1 << 16)
        except BlockingIOError:
            return count, False
        if not chunk:
            return count, True
        count += len(chunk)


def test_the_commit_descriptor(listening: parley.Forum) -> None:
    alice = listening.session(listening.create_token("alice"))
    fd = listening._commit_fd()
    other = listening._commit_fd()
    try:
        assert fd != other
        assert select.select([fd], [], [], 0)[0] == []
        alice.ask("Ring?")
        assert select.select([fd], [], [], 5)[0] == [fd]
        assert os.read(fd, 64) == b"\x01"
        with pytest.raises(BlockingIOError):
            os.read(fd, 64)  # non-blocking, and drained
        assert os.read(other, 64) == b"\x01"  # each descriptor gets its own byte
        for n in range(600):  # more commits than a socket buffer holds: never blocks
            alice.ask(f"Question {n}?")
        count, end = drain(fd)
        assert 1 <= count <= 600 and not end
        listening.end_waits()  # one byte more
        assert select.select([fd], [], [], 5)[0] == [fd]
        assert drain(fd) == (1, False)
        listening.close()  # ends the waits (a byte), then end-of-file
        assert select.select([fd], [], [], 5)[0] == [fd]
        assert drain(fd) == (1, True)
        with pytest.raises(ValueError, match="closed"):
            listening._commit_fd()
    finally:
        os.close(fd)
        os.close(other)
