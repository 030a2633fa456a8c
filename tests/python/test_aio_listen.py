"""The listen profile in ``parley.aio``: waits on the event loop, not in threads."""

from __future__ import annotations

import asyncio
import os
import threading
from typing import Any, Dict, List, Optional

import pytest

import parley
import parley.aio

LONG = 20.0
WAITERS = 1000
IDENTITIES = 10
# The main thread, the default executor's workers (at most 32) and a few of the
# runtime's own: far below one thread per waiter.
THREAD_BOUND = 48


def os_threads() -> int:
    return len(os.listdir("/proc/self/task"))


def open_forum(**settings: Any) -> parley.aio.AsyncForum:
    limits = {"writes_per_minute": 0, **settings.pop("limits", {})}
    return parley.aio.AsyncForum(parley.Forum(limits=limits, **settings))


async def waiters_on(forum: parley.aio.AsyncForum, count: int) -> None:
    """Returns once ``count`` coroutines await the loop's watch on ``forum``."""
    loop = asyncio.get_running_loop()
    for _ in range(int(LONG / 0.01)):
        watch = parley._waits._watches.get(forum.forum, {}).get(loop)
        if watch is not None and len(watch._waiters) >= count:
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"{count} coroutines did not start waiting")


def test_a_thousand_waiting_coroutines_hold_no_threads() -> None:
    async def scenario() -> None:
        async with open_forum() as forum:
            alice = forum.session(await forum.create_token("alice"))
            agents = [forum.session(await forum.create_token(f"agent{i}")) for i in range(IDENTITIES)]
            before = threading.active_count(), os_threads()
            waits = [
                asyncio.ensure_future(agents[n % IDENTITIES].inbox(wait=LONG)) for n in range(WAITERS)
            ]
            await waiters_on(forum, WAITERS)
            during = threading.active_count(), os_threads()
            assert during[0] <= THREAD_BOUND and during[1] <= THREAD_BOUND, (before, during)
            assert not any(w.done() for w in waits)

            # One post wakes those whose read now has an item; the others wait on.
            one = await alice.ask("agent0, a word?", to="ainotes:agent0")
            mine = waits[0::IDENTITIES]
            done, _ = await asyncio.wait(mine, timeout=LONG)
            assert len(done) == len(mine)
            for wait in mine:
                assert [i["message"]["id"] for i in wait.result()["items"]] == [one["message"]["id"]]
            await waiters_on(forum, WAITERS - len(mine))
            assert sum(w.done() for w in waits) == len(mine)

            # A question for anyone wakes everyone left.
            anyone = await alice.ask("Anyone?")
            done, pending = await asyncio.wait(waits, timeout=LONG)
            assert not pending
            for n, wait in enumerate(waits):
                if n % IDENTITIES:
                    assert [i["message"]["id"] for i in wait.result()["items"]] == [anyone["message"]["id"]]
            assert threading.active_count() <= THREAD_BOUND and os_threads() <= THREAD_BOUND

    asyncio.run(scenario())


def test_waiting_blocks_neither_the_loop_nor_returns_early() -> None:
    async def scenario() -> None:
        async with open_forum() as forum:
            alice = forum.session(await forum.create_token("alice"))
            loop = asyncio.get_running_loop()
            beats = 0
            stop = asyncio.Event()

            async def heartbeat() -> None:
                nonlocal beats
                while not stop.is_set():
                    beats += 1
                    await asyncio.sleep(0.005)

            task = asyncio.create_task(heartbeat())
            start = loop.time()
            page = await alice.inbox(wait=0.3)  # her own question is not her inbox
            took = loop.time() - start
            stop.set()
            await task
            assert page["items"] == [] and page["more"] is False
            assert 0.29 <= took < LONG
            assert beats >= 10
            # Items at once: no wait.
            await alice.ask("Mine?")
            start = loop.time()
            assert (await alice.threads(wait=LONG))["items"]
            assert (await alice.messages(wait=LONG))["items"]
            assert loop.time() - start < LONG / 2
            assert await alice.inbox(wait=0) == await alice.inbox()

    asyncio.run(scenario())


def test_every_waiting_read_wakes_on_the_loop() -> None:
    async def scenario() -> None:
        async with open_forum() as forum:
            alice = forum.session(await forum.create_token("alice"))
            bob = forum.session(await forum.create_token("bob"))
            cursors = {
                "threads": (await bob.threads())["cursor"],
                "messages": (await bob.messages())["cursor"],
                "events": (await bob.events())["cursor"],
            }
            waits = [
                asyncio.ensure_future(bob.inbox(wait=LONG)),
                asyncio.ensure_future(bob.threads(since=cursors["threads"], wait=LONG)),
                asyncio.ensure_future(bob.messages(since=cursors["messages"], wait=LONG)),
                asyncio.ensure_future(alice.events(since=cursors["events"], wait=LONG)),
            ]
            await waiters_on(forum, len(waits))
            asked = await alice.ask("Which port?")
            # The question is in bob's inbox only until he answers: answer once it was seen.
            done, pending = await asyncio.wait(waits[:3], timeout=LONG)
            assert not pending
            assert not waits[3].done()  # a new thread records no event
            await bob.answer("7878.", thread=asked["thread"]["id"])
            done, pending = await asyncio.wait(waits, timeout=LONG)
            assert not pending
            assert all(w.result()["items"] for w in waits)

    asyncio.run(scenario())


def test_the_feed_resumes_from_its_cursor_without_loss_or_repeats() -> None:
    async def scenario() -> None:
        async with open_forum() as forum:
            alice = forum.session(await forum.create_token("alice"))
            bob = forum.session(await forum.create_token("bob"))
            for n in range(5):
                await (bob if n % 2 else alice).ask(f"Question {n}?")
            got: List[Dict[str, Any]] = []
            feed = bob.feed("messages")
            async for message in feed:
                got.append(message)
                if len(got) == 3:
                    break
            cursor: Optional[str] = feed.cursor
            assert cursor is not None

            async def later() -> None:
                await waiters_on(forum, 1)
                for n in range(5, 9):
                    await (bob if n % 2 else alice).ask(f"Question {n}?")

            poster = asyncio.create_task(later())
            async for message in bob.feed("messages", since=cursor):
                got.append(message)
                if len(got) == 9:
                    break
            await poster
            everything = (await bob.messages())["items"]
            assert [m["id"] for m in got] == [m["id"] for m in everything]
            assert len({m["id"] for m in got}) == 9

    asyncio.run(scenario())


def test_end_waits_and_close_end_feeds_and_waits() -> None:
    async def scenario() -> None:
        forum = open_forum()
        alice = forum.session(await forum.create_token("alice"))
        bob = forum.session(await forum.create_token("bob"), "worker")
        seen: List[str] = []

        async def follow() -> str:
            async for item in bob.feed("inbox"):
                seen.append(item["thread"]["id"])
            return "ended"

        follower = asyncio.create_task(follow())
        asked = await alice.ask("First?")
        waiter = asyncio.ensure_future(bob.messages(thread=asked["thread"]["id"], since=None, limit=1, wait=0.001))
        assert (await waiter)["items"]  # had an item at once
        for _ in range(int(LONG / 0.01)):
            if seen:
                break
            await asyncio.sleep(0.01)
        assert seen == [asked["thread"]["id"]]
        blocked = asyncio.ensure_future(alice.inbox(wait=LONG))
        await waiters_on(forum, 2)
        loop = asyncio.get_running_loop()
        start = loop.time()
        await forum.close()  # ends every wait first
        assert await asyncio.wait_for(follower, LONG) == "ended"
        assert (await asyncio.wait_for(blocked, LONG))["items"] == []
        assert loop.time() - start < LONG / 2
        assert forum.closed and forum.waits_ended
        assert [item async for item in bob.feed("messages")] == []
        with pytest.raises(ValueError, match="closed"):
            await bob.inbox(wait=1)

        again = open_forum()
        carol = again.session(await again.create_token("carol"))
        follower = asyncio.create_task(carol.feed("events").__anext__())
        waiting = asyncio.ensure_future(carol.events(wait=LONG))
        await waiters_on(again, 2)
        again.end_waits()
        with pytest.raises(StopAsyncIteration):
            await asyncio.wait_for(follower, LONG)
        assert (await asyncio.wait_for(waiting, LONG))["items"] == []
        assert again.waits_ended and not again.closed
        await again.close()

    asyncio.run(scenario())


def test_a_cancelled_wait_leaves_nothing_behind() -> None:
    async def scenario() -> None:
        async with open_forum() as forum:
            bob = forum.session(await forum.create_token("bob"))
            waiting = asyncio.ensure_future(bob.inbox(wait=LONG))
            await waiters_on(forum, 1)
            waiting.cancel()
            with pytest.raises(asyncio.CancelledError):
                await waiting
            watch = parley._waits._watches[forum.forum][asyncio.get_running_loop()]
            assert len(watch._waiters) == 0
            # A wait that times out leaves no waiter either.
            assert (await bob.inbox(wait=0.05))["items"] == []
            assert len(watch._waiters) == 0

    asyncio.run(scenario())


def test_each_event_loop_gets_its_own_watch() -> None:
    """A forum outlives the loops of several asyncio.run calls; each loop watches it anew."""
    forum = parley.Forum(limits={"writes_per_minute": 0})
    alice = forum.session(forum.create_token("alice"))
    bob_token = forum.create_token("bob")

    async def once(n: int) -> List[Dict[str, Any]]:
        bob = parley.aio.AsyncForum(forum).session(bob_token)
        cursor = (await bob.messages())["cursor"]
        waiting = asyncio.ensure_future(bob.messages(since=cursor, wait=LONG))
        await waiters_on(parley.aio.AsyncForum(forum), 1)
        await asyncio.to_thread(alice.ask, f"Round {n}?")
        items: List[Dict[str, Any]] = (await waiting)["items"]
        return items

    for n in range(3):
        assert [m["body"] for m in asyncio.run(once(n))] == [f"Round {n}?"]
    forum.close()


def test_wait_refusals_match_the_engine() -> None:
    async def scenario() -> None:
        async with open_forum(limits={"wait_max_ms": 1000}) as forum:
            bob = forum.session(await forum.create_token("bob"))
            for wait in (1.001, -1, 5):
                with pytest.raises(parley.BadRequest) as info:
                    await bob.inbox(wait=wait)
                with pytest.raises(parley.BadRequest) as raw:
                    await forum.call(bob.sync.token, "get_inbox", {"wait_ms": round(wait * 1000)})
                assert info.value.data == raw.value.data
                assert (info.value.reason, info.value.field) == ("invalid_argument", "wait_ms")
            assert info.value.limit == "wait_max_ms"
            with pytest.raises(TypeError, match="wait must be a number of seconds"):
                await bob.messages(wait="1")  # type: ignore[arg-type]
            # The token comes first (SPEC §12.1), as in the engine.
            stranger = forum.session("pt_not_a_token")
            with pytest.raises(parley.Unauthorized):
                await stranger.events(wait=-1)
            with pytest.raises(ValueError, match="kinds are"):
                bob.feed("threads")
        async with open_forum(profiles=["dialectic"]) as quiet:
            bob = quiet.session(await quiet.create_token("bob"))
            assert (await bob.inbox())["items"] == []
            with pytest.raises(parley.BadRequest) as info:
                await bob.inbox(wait=0.1)
            assert info.value.field == "wait_ms"
            with pytest.raises(parley.BadRequest):
                await bob.feed("messages").__anext__()

    asyncio.run(scenario())


def test_dispatch_waits_on_the_loop() -> None:
    async def scenario() -> None:
        async with open_forum() as forum:
            alice = forum.session(await forum.create_token("alice"))
            bob = forum.session(await forum.create_token("bob"), "worker")
            names = [t["name"] for t in await bob.tools()]
            assert names == list(parley.OPERATIONS) and "get_messages" in names
            for tool in await bob.tools():
                has_wait = "wait_ms" in tool["inputSchema"].get("properties", {})
                assert has_wait == (tool["name"] in parley._args.WAITING_READS), tool["name"]
            waits = [
                asyncio.ensure_future(bob.dispatch("get_inbox", {"wait_ms": 20_000})) for _ in range(50)
            ]
            await waiters_on(forum, 50)
            assert threading.active_count() <= THREAD_BOUND
            asked = await alice.ask("Worker, are you there?", to="ainotes:bob")
            done, pending = await asyncio.wait(waits, timeout=LONG)
            assert not pending
            assert all(w.result()["items"][0]["thread"]["id"] == asked["thread"]["id"] for w in waits)
            # Refusals come back as data, and bad values go to the engine as they are.
            too_long = await bob.dispatch("get_messages", {"wait_ms": 10**9})
            assert too_long["error"]["reason"] == "invalid_argument" and too_long["error"]["field"] == "wait_ms"
            for bad in ("100", 1.5, True, -1):
                refused = await bob.dispatch("get_events", {"wait_ms": bad})
                assert refused["error"]["field"] == "wait_ms", bad
            listed = await bob.dispatch("get_messages", '{"thread": "%s", "wait_ms": 0}' % asked["thread"]["id"])
            assert [m["id"] for m in listed["items"]] == [asked["message"]["id"]]
            unknown = await bob.dispatch("nope", {})
            assert "unknown tool" in unknown["error"]["message"]

    asyncio.run(scenario())
