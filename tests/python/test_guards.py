"""SPEC §15 from Python: the guards profile raises :class:`parley.EchoedBody` and
:class:`parley.NoProgress` (subclasses of :class:`parley.Conflict`, so of
:class:`parley.Refusal`) in process, over ``parley.aio``, and through
``parley.connect`` against a real ``parley serve --http``; ``guards=False``, the
``profiles`` list and the limits keywords switch it.
"""

from __future__ import annotations

import asyncio
import pickle
from typing import Callable, Dict, Tuple

import pytest

import parley
import parley.aio
from served import SERVED_ONLY, Server

CLOCK = "2026-11-30T12:00:00.000Z"


def ping_pong(bob: parley.Session, carol: parley.Session, thread: str, answer: str, n: int) -> int:
    """Bob replies to Carol's last, Carol to Bob's question; returns how many were
    accepted before the first refusal (which propagates)."""
    last = answer
    for i in range(n):
        body = f"Thanks for {i}, noted number {i}."
        if i % 2 == 0:
            bob.note(body, parent=last)
        else:
            last = carol.note(body, thread=thread)["message"]["id"]
    return n


def opened(bob: parley.Session, carol: parley.Session) -> Tuple[str, str]:
    thread = bob.ask("Can we deploy the release today?")["thread"]["id"]
    answer = carol.answer("Yes, the build is green.", thread=thread)
    assert answer["thread"].get("since_progress") == 0
    return thread, answer["message"]["id"]


def stopped(bob: parley.Session, carol: parley.Session, ann: parley.Session, limit: int) -> None:
    """The ping-pong stops after ``limit`` messages with NoProgress; an echo raises
    EchoedBody naming the message it echoes; the person moves the thread on."""
    thread, answer = opened(bob, carol)
    with pytest.raises(parley.EchoedBody) as echoed:
        bob.note("yes -- the BUILD is green!", parent=answer)
    refusal = echoed.value
    assert isinstance(refusal, parley.Conflict) and isinstance(refusal, parley.Refusal)
    assert (refusal.reason, refusal.status, refusal.field) == ("echoed_body", 409, "body")
    assert answer in refusal.message and "ainotes:carol" in refusal.message
    with pytest.raises(parley.NoProgress) as caught:
        ping_pong(bob, carol, thread, answer, 100)
    stuck = caught.value
    assert isinstance(stuck, parley.Conflict)
    assert (stuck.reason, stuck.status, stuck.limit) == ("no_progress", 409, "progress_max_messages")
    assert "decide, mark, or ask the person" in stuck.message
    view = ann.thread(thread)["thread"]
    assert (view.get("since_progress"), view["message_count"]) == (limit, limit + 2)
    said = ann.note("Go ahead, and tell me when it is done.", thread=thread)
    assert said["thread"].get("since_progress") == 0


def test_the_guards_raise_their_own_exceptions(forum: parley.Forum, tokens: Dict[str, str]) -> None:
    bob, carol, ann = (forum.session(tokens[who]) for who in ("bob", "carol", "ann"))
    stopped(bob, carol, ann, 24)
    manifest = forum.manifest()
    assert manifest["profiles"]["guards"] == {"limits": ["progress_max_messages", "echo_window"]}
    assert (forum.limits["progress_max_messages"], forum.limits["echo_window"]) == (24, 8)
    assert "EchoedBody" in parley.__all__ and "NoProgress" in parley.__all__
    assert parley.EchoedBody.__module__ == parley.NoProgress.__module__ == "parley"
    assert {"echoed_body", "no_progress"} <= {r["reason"] for r in parley.REASONS}


def test_limits_keywords_and_the_switch(backend: str) -> None:
    with parley.Forum(clock=CLOCK, limits={"writes_per_minute": 0, "progress_max_messages": 3}) as forum:
        bob, carol = (forum.session(forum.create_token(h)) for h in ("bob", "carol"))
        ann = forum.session(forum.create_token("ann", kind="human"))
        stopped(bob, carol, ann, 3)
    for switched_off in (
        {"guards": False},
        {"profiles": ["dialectic", "listen"]},
        {"guards": False, "profiles": ["dialectic", "listen", "guards"]},
    ):
        with parley.Forum(clock=CLOCK, limits={"writes_per_minute": 0}, **switched_off) as forum:
            bob, carol = (forum.session(forum.create_token(h)) for h in ("bob", "carol"))
            thread = bob.ask("Deploy today?")["thread"]["id"]
            answer = carol.answer("Yes, green.", thread=thread)
            assert "since_progress" not in answer["thread"]
            assert bob.note("YES, green!", parent=answer["message"]["id"])
            assert ping_pong(bob, carol, thread, answer["message"]["id"], 30) == 30
            assert "guards" not in forum.manifest()["profiles"]
    with parley.Forum(clock=CLOCK, profiles=[], guards=True) as forum:
        assert list(forum.manifest()["profiles"]) == ["guards"]
    with parley.Forum(limits={"progress_max_messages": 0, "echo_window": 0}) as forum:
        assert (forum.limits["progress_max_messages"], forum.limits["echo_window"]) == (0, 0)
    with pytest.raises(TypeError):
        parley.Forum(guards="no")  # type: ignore[arg-type]


def test_from_data_and_pickle_keep_the_classes() -> None:
    for reason, cls in (("echoed_body", parley.EchoedBody), ("no_progress", parley.NoProgress)):
        exc = parley.Refusal.from_data({"reason": reason, "status": 409, "message": "m", "limit": "x"})
        assert type(exc) is cls and exc.limit == "x"
        again = pickle.loads(pickle.dumps(exc))
        assert type(again) is cls and again.data == exc.data


def test_async_sessions_raise_them(forum: parley.Forum, tokens: Dict[str, str], backend: str) -> None:
    async def scenario() -> Tuple[str, str]:
        aforum = parley.aio.AsyncForum(forum)
        bob, carol = (aforum.session(tokens[who]) for who in ("bob", "carol"))
        thread = (await bob.ask("Deploy today?"))["thread"]["id"]
        answer = (await carol.answer("Yes, green.", thread=thread))["message"]["id"]
        with pytest.raises(parley.EchoedBody) as echoed:
            await bob.note("yes green", parent=answer)
        last = answer
        with pytest.raises(parley.NoProgress) as stuck:
            for i in range(100):
                if i % 2 == 0:
                    await bob.note(f"ack {i}", parent=last)
                else:
                    last = (await carol.note(f"ack {i}", thread=thread))["message"]["id"]
        return echoed.value.reason, stuck.value.reason

    assert asyncio.run(scenario()) == ("echoed_body", "no_progress")
    opened_off = asyncio.run(parley.aio.open(None, guards=False, limits={"writes_per_minute": 0}))
    assert "guards" not in opened_off.forum.manifest()["profiles"]
    opened_off.forum.close()


@SERVED_ONLY
def test_a_remote_session_raises_them(servers: Callable[..., Server]) -> None:  # noqa: F811
    server = servers({"limits": {"writes_per_minute": 0, "progress_max_messages": 5}})
    tokens = {who: server.token(who) for who in ("bob", "carol")}
    tokens["ann"] = server.token("ann", kind="human")
    server.start()
    bob, carol, ann = (parley.connect(server.url, tokens[who]) for who in ("bob", "carol", "ann"))
    try:
        stopped(bob, carol, ann, 5)
    finally:
        for session in (bob, carol, ann):
            session.forum.close()

    # The person spoke last; 5 more by agents stop it again.
    session = parley.connect(server.url, tokens["carol"])
    try:
        for i in range(5):
            last = session.note(f"Carol's update {i}.", thread="th_1")["message"]["id"]
    finally:
        session.forum.close()

    async def remote_async() -> str:
        abob = parley.aio.connect(server.url, tokens["bob"])
        try:
            with pytest.raises(parley.NoProgress) as caught:
                await abob.note("One more from bob.", parent=last)
            return caught.value.reason
        finally:
            abob.sync.forum.close()

    assert asyncio.run(remote_async()) == "no_progress"
