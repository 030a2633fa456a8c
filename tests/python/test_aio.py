"""``parley.aio``: the same API as coroutines, off the event loop."""

from __future__ import annotations

import asyncio
import inspect
from pathlib import Path

import pytest

import parley
import parley.aio

CLOCK = "2026-11-30T12:00:00.000Z"


def test_async_session_walkthrough(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with await parley.aio.open(tmp_path / "aio.redb", clock=CLOCK) as forum:
            assert isinstance(forum.forum, parley.Forum)
            alice = forum.session(await forum.create_token("alice"))
            bob = forum.session(await forum.create_token("bob"), "w1")
            judge = forum.session(await forum.create_token("judge", rights=("read", "write", "verify")))
            asked = await alice.ask("Which port?")
            thread = asked["thread"]["id"]
            answered = await bob.answer("7878.", thread=thread)
            assert answered["thread"]["awaiting"]["identity"] == "ainotes:alice"
            assert [i["thread"]["id"] for i in (await alice.inbox())["items"]] == [thread]
            await alice.note("Thanks.", parent=answered["message"]["id"])
            await alice.propose("Keep 7878?", parent=answered["message"]["id"])
            objected = await bob.object("Not sure.", thread=thread)
            await alice.handoff("Judge, please.", to="ainotes:judge", parent=objected["message"]["id"])
            decided = await alice.decide("7878 it is.", thread=thread)
            assert decided["thread"]["state"] == "decided"
            marked = await alice.mark("Done.", state="closed", thread=thread)
            assert marked["thread"]["state"] == "closed" and marked["thread"]["locked"] is False
            claim = (await bob.claim("CI is green.", thread=thread))["claim"]["id"]
            await alice.attest("Seen it.", claim=claim, evidence=[{"kind": "log", "ref": "ci/1"}])
            await judge.verify("Sealed.", claim=claim)
            assert (await alice.claim_status(claim))["status"] == "verified"
            await judge.refute("Red again.", claim=claim, evidence=[{"kind": "log", "ref": "ci/2"}])
            assert (await alice.get_claim(claim))["status"] == "refuted"
            reopened = await alice.reopen("Again.", thread=thread)
            assert reopened["thread"]["state"] == "open"
            assert (await alice.thread(thread))["thread"]["message_count"] == 13
            assert len((await alice.events(thread=thread))["items"]) >= 4
            assert (await alice.threads())["items"][0]["id"] == thread
            assert (await alice.whoami())["identity"] == "ainotes:alice"
            assert (await alice.manifest())["parley"] == "1"
            assert (await alice.call("get_manifest"))["parley"] == "1"
            assert (await alice.post("note", "Generic.", parent=answered["message"]["id"]))["message"]["kind"] == "note"
            assert [t["name"] for t in await alice.tools()] == list(parley.OPERATIONS)
            result = await alice.dispatch("get_thread", {"thread": "th_99"})
            assert result["error"]["reason"] == "thread_not_found"
            with pytest.raises(parley.NotFound):
                await alice.thread("th_99")
            assert len(await forum.identities()) == 3
            assert (await forum.call(None, "get_manifest"))["realm"] == "ainotes"
            assert (await forum.mcp(None, {"jsonrpc": "2.0", "id": 1, "method": "ping"})) is not None
            assert (await forum.manifest())["parley"] == "1"
            assert await forum.revoke_token(bob.sync.token) is True
            assert bob.with_extension("w2").extension == "w2"
        assert forum.closed

    asyncio.run(scenario())


def test_calls_do_not_block_the_event_loop(tmp_path: Path) -> None:
    """A heartbeat task keeps running while a coroutine awaits one durable post after another."""

    async def scenario() -> int:
        forum = parley.aio.AsyncForum(parley.Forum(tmp_path / "loop.redb", limits={"writes_per_minute": 0}))
        alice = forum.session(await forum.create_token("alice"))
        beats = 0
        done = asyncio.Event()

        async def heartbeat() -> None:
            nonlocal beats
            while not done.is_set():
                beats += 1
                await asyncio.sleep(0)

        task = asyncio.create_task(heartbeat())
        for i in range(20):
            await alice.ask(f"Question {i}?")
        done.set()
        await task
        await forum.close()
        return beats

    assert asyncio.run(scenario()) >= 20


def test_concurrent_coroutines_all_land() -> None:
    async def scenario() -> int:
        async with parley.aio.AsyncForum(parley.Forum(limits={"writes_per_minute": 0})) as forum:
            sessions = [forum.session(await forum.create_token(f"agent{i}")) for i in range(5)]
            await asyncio.gather(*(s.ask(f"Question {n} from {i}?") for i, s in enumerate(sessions) for n in range(10)))
            listing = await sessions[0].threads(limit=200)
            return len(listing["items"])

    assert asyncio.run(scenario()) == 50


ACTS = ["ask", "answer", "note", "propose", "object", "handoff", "decide", "mark", "reopen", "claim", "attest", "refute", "verify"]


def test_both_sessions_take_the_act_methods_from_one_definition() -> None:
    from parley._acts import Acts

    for name in ACTS:
        assert getattr(parley.Session, name) is getattr(Acts, name), name
        assert getattr(parley.aio.AsyncSession, name) is getattr(Acts, name), name
    # Each session gives `post`: a function, and a coroutine function.
    assert not inspect.iscoroutinefunction(parley.Session.post)
    assert inspect.iscoroutinefunction(parley.aio.AsyncSession.post)


def test_an_async_act_returns_an_awaitable_and_refuses_a_wrong_type_when_called(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with await parley.aio.open(tmp_path / "acts.redb", clock=CLOCK) as forum:
            alice = forum.session(await forum.create_token("alice"))
            pending = alice.ask("Awaited later?")
            assert inspect.isawaitable(pending)
            asked = await pending
            assert asked["message"]["kind"] == "ask"
            with pytest.raises(TypeError, match="to"):
                alice.handoff("To whom?", to=5, thread=asked["thread"]["id"])  # type: ignore[arg-type]

    asyncio.run(scenario())
