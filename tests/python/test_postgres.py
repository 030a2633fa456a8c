"""Two ``parley.Forum`` objects on one PostgreSQL forum, in one process, are two
engines sharing a database: what one writes the other reads, a revocation counts at
once everywhere, a post through one wakes a read waiting on the other; and a bad
URL is a :class:`parley.StorageError` that names no password.

Needs the server of ``tests/pg/server.sh`` (``PARLEY_TEST_PG``): skipped without
it, failed without it when ``PARLEY_TEST_PG_REQUIRED`` is set. Runs on both passes
of ``tests/python/run.sh`` alike: every forum here is named by its URL, except in
the first test, which checks that the postgres pass runs where it says.
"""

from __future__ import annotations

import asyncio
import os
import threading
import time
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, Optional, Tuple

import pytest

import parley
import parley.aio

# Longer than any test should take: a wait that runs out fails the test by its timing.
LONG = 20.0
SETTINGS: Dict[str, Any] = {"limits": {"writes_per_minute": 0}}
PASSWORD = "secretpw"

Pair = Tuple[parley.Forum, parley.Forum]


@pytest.fixture
def shared(pg_url: Callable[[], str]) -> Iterator[Pair]:
    """Two engines on one fresh forum."""
    url = pg_url()
    with parley.Forum(url, **SETTINGS) as one, parley.Forum(url, **SETTINGS) as two:
        yield one, two


def test_the_pass_opens_its_forums_on_its_backend(forum: parley.Forum, backend: str, tmp_path: Path) -> None:
    """On the postgres pass (conftest.py) the fixtures' forums, in-memory forums and
    forums in temporary files are PostgreSQL forums, one per file; else redb's."""
    file = tmp_path / "f.redb"
    with parley.Forum(file) as first:
        token = first.create_token("alice")
    with parley.Forum(file) as again, parley.Forum() as other:
        assert again.session(token).whoami()["identity"] == "ainotes:alice"
        if backend == "postgres":
            assert forum.path is not None and forum.path.startswith("postgres://")
            assert again.path == first.path and other.path not in (None, first.path, forum.path)
            assert not file.exists()
        else:
            assert forum.path is None and other.path is None and again.path == str(file)

    async def opened() -> Optional[str]:
        async with await parley.aio.open(None) as aio:
            return aio.forum.path

    path = asyncio.run(opened())
    if backend == "postgres":
        assert path is not None and path.startswith("postgres://")
    else:
        assert path is None


def test_a_post_through_one_is_read_by_the_other(shared: Pair) -> None:
    one, two = shared
    alice_token = one.create_token("alice", label="Alice")
    bob_token = two.create_token("bob")
    assert {i["identity"] for i in one.identities()} == {i["identity"] for i in two.identities()} == {
        "ainotes:alice",
        "ainotes:bob",
    }
    alice, bob = one.session(alice_token), two.session(bob_token)
    asked = alice.ask("Which port does the dev server use?", to="ainotes:bob")
    thread = asked["thread"]["id"]
    assert [i["thread"]["id"] for i in bob.inbox()["items"]] == [thread]
    answered = bob.answer("Port 7878.", thread=thread)
    view = alice.thread(thread)
    assert view["thread"]["state"] == "answered"
    assert view["messages"][0]["replies"][0]["id"] == answered["message"]["id"]
    # Ids come from the one database: the engines never hand out the same one twice.
    again = two.session(alice_token).ask("And the staging server?")
    assert again["message"]["id"] not in (asked["message"]["id"], answered["message"]["id"])
    assert len(alice.threads()["items"]) == len(bob.threads()["items"]) == 2


def test_a_token_revoked_through_one_is_refused_at_once_by_the_other(shared: Pair) -> None:
    one, two = shared
    token = one.create_token("alice")
    there = two.session(token)
    assert there.whoami()["identity"] == "ainotes:alice"  # known, and used, on both
    there.ask("Still allowed?")
    assert one.revoke_token(token) is True
    with pytest.raises(parley.Unauthorized) as info:
        there.whoami()
    assert (info.value.reason, info.value.status) == ("token_invalid", 401)
    with pytest.raises(parley.Unauthorized):
        there.ask("And now?")
    assert two.revoke_token(token) is False  # already revoked, seen from the other engine
    assert {i["identity"]: i for i in two.identities()}["ainotes:alice"]["active_tokens"] == 0


def test_a_waiting_read_on_one_wakes_on_a_post_on_the_other(shared: Pair) -> None:
    one, two = shared
    alice = one.session(one.create_token("alice"))
    bob = two.session(two.create_token("bob"))
    out: Dict[str, Any] = {}

    def wait() -> None:
        start = time.monotonic()
        try:
            out["result"] = bob.inbox(wait=LONG)
        except BaseException as exc:  # checked below
            out["error"] = exc
        out["took"] = time.monotonic() - start

    waiting = threading.Thread(target=wait)
    waiting.start()
    time.sleep(0.3)
    assert waiting.is_alive()  # nothing for bob yet: the read waits
    asked = alice.ask("Anyone there?", to="ainotes:bob")
    waiting.join(LONG + 5)
    assert "error" not in out, out.get("error")
    assert out["took"] < LONG / 4, out["took"]
    assert [i["thread"]["id"] for i in out["result"]["items"]] == [asked["thread"]["id"]]


def test_a_waiting_coroutine_on_one_wakes_on_a_post_on_the_other(shared: Pair) -> None:
    one, two = shared
    alice = one.session(one.create_token("alice"))
    bob_token = two.create_token("bob")

    async def scenario() -> float:
        bob = parley.aio.AsyncForum(two).session(bob_token)
        loop = asyncio.get_running_loop()
        start = loop.time()
        waiting = asyncio.ensure_future(bob.inbox(wait=LONG))
        await asyncio.sleep(0.3)
        assert not waiting.done()
        asked = await asyncio.to_thread(alice.ask, "A word, bob?", to="ainotes:bob")
        page = await asyncio.wait_for(waiting, LONG + 5)
        assert [i["message"]["id"] for i in page["items"]] == [asked["message"]["id"]]
        return loop.time() - start

    assert asyncio.run(scenario()) < LONG / 4


def test_forums_of_other_names_are_apart(pg_url: Callable[[], str]) -> None:
    with parley.Forum(pg_url(), **SETTINGS) as here, parley.Forum(pg_url(), **SETTINGS) as there:
        token = here.create_token("alice")
        here.session(token).ask("Only here?")
        with pytest.raises(parley.Unauthorized) as info:
            there.session(token).threads()
        assert info.value.reason == "token_invalid"
        assert there.identities() == []


def test_a_forum_reopened_by_its_url_keeps_its_threads(pg_url: Callable[[], str]) -> None:
    url = pg_url()
    with parley.Forum(url) as forum:
        token = forum.create_token("alice")
        asked = forum.session(token).ask("Kept?")
    with parley.Forum(url) as again:
        view = again.session(token).thread(asked["thread"]["id"])
        assert view["thread"]["topic"] == "Kept?"
        assert again.session(token).ask("Next?")["message"]["id"] != asked["message"]["id"]


@pytest.mark.parametrize(
    "url, says",
    [
        (f"postgres://u:{PASSWORD}@localhost/x?host=/nonexistent&connect_timeout=1", "cannot reach PostgreSQL"),
        (f"postgresql://u:{PASSWORD}@localhost/x?host=/nonexistent&connect_timeout=1", "cannot reach PostgreSQL"),
        (f"postgres://u:{PASSWORD}@localhost/x?forum=Not-A-Name", "forum name"),
        (f"postgres://u:{PASSWORD}@localhost/x?forum=", "forum name"),
        (f"postgres://u:{PASSWORD}@localhost/x?forum={'a' * 41}", "forum name"),
        (f"postgres://u:{PASSWORD}@localhost/x?no_such_parameter=1", "not a PostgreSQL URL"),
        (f"postgres://u:{PASSWORD}@[::1/x", "not a PostgreSQL URL"),
    ],
    ids=["unreachable", "postgresql-scheme", "bad-name", "empty-name", "long-name", "unknown-parameter", "malformed"],
)
def test_a_bad_url_is_a_storage_error_naming_no_password(url: str, says: str) -> None:
    start = time.monotonic()
    with pytest.raises(parley.StorageError) as info:
        parley.Forum(url)
    assert time.monotonic() - start < 10
    message = str(info.value)
    assert says in message, message
    assert PASSWORD not in message and PASSWORD not in repr(info.value), message
    assert "://u:***@" in message, message  # the URL is shown, its password masked
    assert not isinstance(info.value, parley.Refusal)


def test_a_url_of_another_database_is_a_storage_error() -> None:
    with pytest.raises(parley.StorageError) as info:
        parley.Forum("mysql://u@localhost/x")
    assert "mysql://" in str(info.value)


# No password is ever shown, and an engine hears only the other engines' commits.


def test_a_password_parameter_is_not_shown() -> None:
    with pytest.raises(parley.StorageError) as info:
        parley.Forum(f"postgres://u@localhost/x?host=/nonexistent&connect_timeout=1&password={PASSWORD}")
    assert PASSWORD not in str(info.value), str(info.value)


def test_a_url_of_another_database_names_no_password() -> None:
    with pytest.raises(parley.StorageError) as info:
        parley.Forum(f"mysql://u:{PASSWORD}@localhost/x")
    assert PASSWORD not in str(info.value), str(info.value)


def test_the_repr_names_no_password(pg_url: Callable[[], str]) -> None:
    url = pg_url()
    if "://parley@" not in url:
        pytest.skip("the server's URL is not tests/pg/server.sh's (user parley, no password)")
    url = url.replace("://parley@", f"://parley:{PASSWORD}@", 1)
    # The test server trusts local connections: any password is accepted.
    with parley.Forum(url) as forum:
        assert PASSWORD not in repr(forum), repr(forum)


def test_an_own_commit_rings_the_commit_descriptor_once(shared: Pair) -> None:
    one, two = shared
    alice = one.session(one.create_token("alice"))
    time.sleep(0.5)  # the listening threads have heard that commit
    mine, theirs = one._commit_fd(), two._commit_fd()
    try:
        alice.ask("How many bytes?")
        time.sleep(0.5)
        assert len(_drain(theirs)) >= 1  # another engine's commit rings
        got = _drain(mine)
        assert got == b"\x01", got  # one byte after each durable commit
    finally:
        os.close(mine)
        os.close(theirs)


def _drain(fd: int) -> bytes:
    got = b""
    while True:
        try:
            chunk = os.read(fd, 1 << 16)
        except BlockingIOError:
            return got
        if not chunk:
            return got
        got += chunk
