"""``parley.connect`` against a real ``parley serve --http``: the conformance transcripts,
one agent run in-process and remotely with the same results, the same refusals,
waiting reads and ``parley.aio.connect``. A server that dies, stalls, is full or
closes idle connections, a peer that is no Parley server, and bad arguments are in
``test_remote_failures.py``; the server itself in ``served.py``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
import time
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple

import pytest

import parley
import parley.aio
import transcripts
from served import BOUND_S, CLOCK, SERVED_ONLY, SETTINGS, Cast, Server

# ------------------------------------------------------------------ the transcripts


class ServedHost:
    """A transcript's forum behind a server: tokens issued before it starts, and each
    revocation made with the server stopped, then served again on the same port."""

    def __init__(self, server: Server) -> None:
        self.server = server

    def create_token(self, handle: str, kind: str, rights: List[str], label: Optional[str]) -> str:
        return self.server.token(handle, kind, rights, label)

    def serve(self) -> str:
        return self.server.start()

    def revoke_token(self, token: str) -> bool:
        self.server.stop()
        try:
            # Exit 0: revoked; 1: no active token matched.
            return self.server.run("token", "revoke", token).returncode == 0
        finally:
            self.server.start()


PATHS = transcripts.transcript_paths()


@SERVED_ONLY
@pytest.mark.parametrize("path", PATHS, ids=[p.stem for p in PATHS])
def test_transcript_through_connect(path: Path, servers: Callable[..., Server]) -> None:
    @contextlib.contextmanager
    def host(settings: Dict[str, Any]) -> Iterator[ServedHost]:
        server = servers(settings)
        try:
            yield ServedHost(server)
        finally:
            server.stop()

    failures = transcripts.run_remote(path, host)
    assert not failures, "\n".join(failures)


@SERVED_ONLY
def test_the_remote_runner_sees_a_wrong_expectation(tmp_path: Path, servers: Callable[..., Server]) -> None:
    path = tmp_path / "wrong.json"
    path.write_text(
        json.dumps(
            {
                "name": "wrong",
                "description": "a wrong state, a refusal that does not come, then a revocation",
                "settings": {"clock": CLOCK},
                "tokens": [{"actor": "alice", "handle": "alice"}],
                "steps": [
                    {"actor": "alice", "op": "post", "args": {"kind": "ask", "body": "Q?"},
                     "expect": {"ok": {"thread": {"state": "closed"}}}},
                    {"actor": "alice", "op": "whoami", "args": {},
                     "expect": {"refused": {"reason": "token_invalid", "status": 401}}},
                    {"revoke": "alice"},
                    {"actor": "alice", "op": "whoami", "args": {},
                     "expect": {"ok": {}}},
                ],
            }
        ),
        encoding="utf-8",
    )

    @contextlib.contextmanager
    def host(settings: Dict[str, Any]) -> Iterator[ServedHost]:
        server = servers(settings)
        try:
            yield ServedHost(server)
        finally:
            server.stop()

    failures = transcripts.run_remote(path, host)
    assert len(failures) == 3, failures
    assert 'thread.state: expected "closed", got "open"' in failures[0]
    assert "expected a refusal, got success" in failures[1]
    assert "expected success, got a refusal" in failures[2] and "token_invalid" in failures[2]


# ------------------------------------------------------- one agent, in-process and remote


def agent(alice: parley.Session, bob: parley.Session) -> List[Any]:
    """A short conversation touching every kind of method; returns all it was given."""
    seen: List[Any] = []
    asked = alice.ask("Which port does the dev server use?")
    thread = asked["thread"]["id"]
    seen += [asked, bob.inbox(), bob.answer("Port 7878.", thread=thread)]
    seen += [alice.thread(thread), alice.whoami(), bob.threads(state="answered")]
    source = [{"kind": "url", "ref": "https://example.org/port"}]
    claimed = bob.claim("The port is 7878.", evidence=source, thread=thread)
    claim, parent = claimed["claim"]["id"], claimed["message"]["id"]
    evidence = [{"kind": "log", "ref": "port 7878"}]
    seen += [claimed, alice.attest("Seen it.", claim=claim, evidence=evidence, parent=parent)]
    seen += [alice.claim_status(claimed["claim"]["id"]), alice.events(), alice.messages(thread=thread)]
    seen += [alice.search("port"), alice.with_extension("helper").inbox(), alice.manifest()]
    seen += [bob.note("Noted.", thread=thread, idempotency_key="note-1") for _ in range(2)]  # a replay
    seen += [bob.dispatch("get_inbox", {})]
    seen += [bob.dispatch("post", json.dumps({"kind": "note", "body": "Again.", "thread": thread}))]
    seen += [bob.dispatch("post", {"kind": "answer", "body": "Port 7878.", "thread": thread})]  # repeated_body
    seen += [bob.dispatch("no_such_tool", {}), alice.tools("openai", strict=True)]
    feed = alice.feed("messages", thread=thread)
    seen += [[next(feed) for _ in range(3)], {"cursor": feed.cursor}]
    for refused in (
        lambda: bob.decide("Settled.", thread=thread),  # thread_authority_missing
        lambda: alice.answer("Me again.", thread=thread, parent=asked["message"]["id"]),
        lambda: alice.thread("th_99"),
        lambda: alice.inbox(since="not-a-cursor"),
        lambda: bob.note("Noted.", thread=thread, idempotency_key="note-1", parent=asked["message"]["id"]),
    ):
        try:
            refused()
            seen.append("not refused")
        except parley.Refusal as refusal:
            seen.append((type(refusal).__name__, refusal.reason, refusal.status, refusal.data))
    return seen


def test_the_same_agent_runs_in_process_and_remote(cast: Cast) -> None:
    with parley.Forum(None, **SETTINGS) as forum:
        local = agent(
            forum.session(forum.create_token("alice", label="Alice")), forum.session(forum.create_token("bob"))
        )
    remote = agent(cast.session("alice"), cast.session("bob"))
    assert len(remote) == len(local)
    for i, (here, there) in enumerate(zip(local, remote)):
        if isinstance(here, dict) and "server" in here:  # the manifest names its host
            here, there = dict(here, server=None), dict(there, server=None)
        if isinstance(here, dict) and "realm_key" in here:  # and each forum's own key
            here, there = dict(here, realm_key=None), dict(there, realm_key=None)
        assert without_cursors(there) == without_cursors(here), f"result {i} differs"


def without_cursors(value: Any) -> Any:
    """``value`` with every cursor blanked: cursors are sealed with a key of each forum."""
    if isinstance(value, dict):
        return {k: "<cursor>" if k == "cursor" and isinstance(v, str) else without_cursors(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [without_cursors(v) for v in value]
    return value


def test_refusals_raise_the_same_exceptions(cast: Cast) -> None:
    with parley.Forum(None, **SETTINGS) as forum:
        local = {
            "alice": forum.session(forum.create_token("alice", label="Alice")),
            "bob": forum.session(forum.create_token("bob")),
            "reader": forum.session(forum.create_token("reader", rights=["read"])),
            "stranger": forum.session("pt_not_a_token"),
            "spaced": forum.session(" not a header value\u00e9"),
            "nobody": forum.session(""),
        }
        remote = {who: cast.session(who) for who in ["alice", "bob", "reader", "pt_not_a_token"]}
        remote["stranger"] = remote.pop("pt_not_a_token")
        remote["spaced"] = cast.session(" not a header value\u00e9")
        remote["nobody"] = cast.session("")

        def attempts(s: Dict[str, parley.Session]) -> List[Tuple[str, Any]]:
            first = s["alice"].ask("Which port?")
            thread = first["thread"]["id"]
            calls: List[Callable[[], Any]] = [
                lambda: s["alice"].answer("Mine.", thread=thread),  # self_reply, 409
                lambda: s["bob"].thread("th_42"),  # thread_not_found, 404
                lambda: s["bob"].ask("   "),  # invalid_body, 400
                lambda: s["bob"].post("shout", "Hey."),  # unknown_kind, 400
                lambda: s["reader"].note("Hi.", thread=thread),  # token_right_missing, 403
                lambda: s["bob"].decide("Done.", thread=thread),  # thread_authority_missing, 403
                lambda: s["stranger"].whoami(),  # token_invalid, 401
                lambda: s["spaced"].inbox(),  # token_invalid, 401 (no such token can exist)
                lambda: s["nobody"].whoami(),  # token_missing, 401
                lambda: s["bob"].inbox(wait=3600),  # invalid_argument (over wait_max_ms), 400
                lambda: s["bob"].events(since="bogus"),  # invalid_cursor, 400
                lambda: s["alice"].call("get_thread", {"thread": thread, "extra": 1}),  # invalid_argument
                lambda: s["alice"].call("no_such_operation"),  # ValueError
                lambda: s["alice"].call("whoami", {"x": {1, 2}}),  # TypeError: not JSON
                lambda: s["alice"].call("whoami", {"x": float("nan")}),  # ValueError: not JSON
                lambda: s["alice"].call("post", ["ask", "Not an object."]),  # TypeError: not a mapping
                lambda: s["spaced"].manifest()["realm"],  # get_manifest ignores the token
            ]
            out: List[Tuple[str, Any]] = []
            for call in calls:
                try:
                    out.append(("ok", call()))
                except parley.Refusal as refusal:
                    assert type(refusal) is type(parley.Refusal.from_data(refusal.data))
                    out.append((type(refusal).__name__, (refusal.reason, refusal.status, refusal.data)))
                except (TypeError, ValueError) as exc:
                    out.append((type(exc).__name__, None))
            return out

        here, there = attempts(local), attempts(remote)
    assert there == here
    assert [kind for kind, _ in there] == [
        "Conflict", "NotFound", "BadRequest", "BadRequest", "Forbidden", "Forbidden", "Unauthorized",
        "Unauthorized", "Unauthorized", "BadRequest", "BadRequest", "BadRequest", "ValueError",
        "TypeError", "ValueError", "TypeError", "ok",
    ]


@SERVED_ONLY
def test_a_request_over_request_max_bytes_is_payload_too_large(cast: Cast) -> None:
    alice = cast.session("alice")
    with pytest.raises(parley.PayloadTooLarge) as caught:
        alice.ask("x" * 70_000)
    assert (caught.value.reason, caught.value.status) == ("payload_too_large", 413)
    assert alice.whoami()["identity"] == "ainotes:alice"  # the connection goes on


# ------------------------------------------------------------------------ waiting reads


@SERVED_ONLY
def test_a_waiting_inbox_wakes_on_a_post_from_another_client(cast: Cast) -> None:
    alice, bob = cast.session("alice"), cast.session("bob")
    got: Dict[str, Any] = {}

    def wait() -> None:
        got["start"] = time.monotonic()
        got["page"] = bob.inbox(wait=20)
        got["end"] = time.monotonic()

    waiter = threading.Thread(target=wait)
    waiter.start()
    time.sleep(0.5)
    posted_at = time.monotonic()
    asked = alice.ask("Anyone there?")
    waiter.join(BOUND_S)
    assert not waiter.is_alive()
    assert got["start"] < posted_at < got["end"], "the read was waiting when the post came"
    assert got["end"] - got["start"] < 15, "woken by the post, not by the end of the wait"
    assert [item["thread"]["id"] for item in got["page"]["items"]] == [asked["thread"]["id"]]
    # Nothing new: the wait runs out and the page is empty, as in-process.
    start = time.monotonic()
    page = bob.inbox(since=got["page"]["cursor"], wait=0.3)
    assert page["items"] == [] and time.monotonic() - start >= 0.25
    # A feed reads through the waits too.
    feed = bob.feed("inbox")
    assert next(feed)["thread"]["id"] == asked["thread"]["id"]


@SERVED_ONLY
def test_aio_connect(cast: Cast) -> None:
    async def main() -> None:
        alice = parley.aio.connect(cast.server.url, cast.tokens["alice"])
        bob = parley.aio.connect(cast.server.url, cast.tokens["bob"], retries=1)
        assert isinstance(alice, parley.aio.AsyncSession) and bob.retries == 1
        try:
            assert (await alice.whoami())["identity"] == "ainotes:alice"
            waiter = asyncio.ensure_future(bob.inbox(wait=20))
            await asyncio.sleep(0.5)
            assert not waiter.done(), "the read waits"
            asked = await alice.ask("Which port?")
            page = await asyncio.wait_for(waiter, BOUND_S)
            assert [item["thread"]["id"] for item in page["items"]] == [asked["thread"]["id"]]
            with pytest.raises(parley.Conflict) as caught:
                await alice.answer("Mine.", thread=asked["thread"]["id"])
            assert caught.value.reason == "self_reply"
            answered = await bob.answer("7878.", thread=asked["thread"]["id"])
            assert answered["replayed"] is False  # a key was made for the retries
            feed = alice.feed("messages", since=None)
            async for message in feed:
                assert message["id"] == asked["message"]["id"]
                break
            waited = await bob.dispatch("get_messages", {"since": feed.cursor, "wait_ms": 200})
            assert [m["id"] for m in waited["items"]] == [answered["message"]["id"]]
            assert [tool["name"] for tool in await alice.tools()][:3] == ["get_manifest", "whoami", "post"]
        finally:
            alice.sync.forum.close()
            bob.sync.forum.close()

    asyncio.run(main())


async def async_agent(alice: parley.aio.AsyncSession, bob: parley.aio.AsyncSession) -> List[Any]:
    """The coroutine version of a short conversation, waits and refusals included."""
    seen: List[Any] = []
    asked = await alice.ask("Which port?")
    thread = asked["thread"]["id"]
    seen += [asked, await bob.inbox(wait=5), await bob.answer("7878.", thread=thread)]
    seen += [await alice.thread(thread), await alice.events(wait=0.2), await alice.messages(thread=thread)]
    seen += [await alice.search("port"), await bob.dispatch("get_thread", {"thread": thread})]
    seen += [await bob.dispatch("get_inbox", {"wait_ms": 100})]
    feed = alice.feed("messages", thread=thread)
    seen += [[await feed.__anext__() for _ in range(2)]]
    for refused in (alice.answer("Mine.", thread=thread), bob.thread("th_9"), bob.inbox(wait=3600)):
        try:
            seen.append(await refused)
        except parley.Refusal as refusal:
            seen.append((type(refusal).__name__, refusal.data))
    return seen


def test_the_same_async_agent_runs_in_process_and_remote(cast: Cast) -> None:
    async def both() -> Tuple[List[Any], List[Any]]:
        async with await parley.aio.open(None, **SETTINGS) as forum:
            alice, bob = await forum.create_token("alice", label="Alice"), await forum.create_token("bob")
            here = await async_agent(forum.session(alice), forum.session(bob))
        alice_r = parley.aio.connect(cast.server.url, cast.tokens["alice"])
        bob_r = parley.aio.connect(cast.server.url, cast.tokens["bob"])
        try:
            there = await async_agent(alice_r, bob_r)
        finally:
            alice_r.sync.forum.close()
            bob_r.sync.forum.close()
        return here, there

    here, there = asyncio.run(both())
    assert without_cursors(there) == without_cursors(here)


# ---------------------------------------------------------------- transport failures
