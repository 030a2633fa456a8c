"""SPEC §16 from Python: presence and leases through ``Session``, ``parley.aio`` and
``parley.connect`` against a real ``parley serve --http``; ``parley.LeaseConflict``
carrying the conflicting leases; the ``coordination`` switch and the limits keywords.
"""

from __future__ import annotations

import asyncio
import pickle
from typing import Any, Callable, Dict, List

import pytest

import parley
import parley.aio
from served import SERVED_ONLY, Server

CLOCK = "2026-11-30T12:00:00.000Z"


def claim_and_collide(bob: parley.Session, carol: parley.Session) -> None:
    """Bob leases a directory, Carol collides with it, Bob releases it, Carol takes it."""
    got = bob.lease("src/", note="moving the parser", ttl_s=120)
    assert got["resource"] == "src/" and got["mode"] == "exclusive" and got["holder"]["identity"] == "ainotes:bob"
    with pytest.raises(parley.LeaseConflict) as caught:
        carol.lease("src/parser.rs")
    conflict = caught.value
    assert isinstance(conflict, parley.Conflict) and (conflict.reason, conflict.status) == ("lease_conflict", 409)
    assert [lease["id"] for lease in conflict.leases] == [got["id"]]
    assert conflict.leases[0]["note"] == "moving the parser"
    assert [lease["id"] for lease in carol.get_leases(resource="src/main.rs")] == [got["id"]]
    released = bob.release(got["id"])
    assert released["id"] == got["id"] and "released_at" in released
    with pytest.raises(parley.NotFound) as gone:
        bob.release(got["id"])
    assert gone.value.reason == "lease_not_found"
    mine = carol.lease("src/parser.rs", mode="shared")
    assert carol.get_leases(identity="ainotes:carol") == [mine]


def test_presence_and_leases_in_process(forum: parley.Forum, tokens: Dict[str, str]) -> None:
    bob, carol = forum.session(tokens["bob"]), forum.session(tokens["carol"])
    set_ = bob.set_presence("working", note="parser", ttl_s=60)
    assert set_ == {
        "identity": "ainotes:bob",
        "extension": None,
        "status": "working",
        "note": "parser",
        "since": CLOCK,
        "expires_at": "2026-11-30T12:01:00.000Z",
        "stale": False,
    }
    worker = bob.with_extension("w1")
    assert worker.set_presence("idle")["extension"] == "w1"
    assert [(p["identity"], p["extension"]) for p in carol.get_presence()] == [
        ("ainotes:bob", None),
        ("ainotes:bob", "w1"),
    ]
    assert carol.get_presence("ainotes:carol") == []
    claim_and_collide(bob, carol)
    # The session's extension is the holder's.
    held = worker.lease("docs/")
    assert held["holder"] == {"identity": "ainotes:bob", "extension": "w1"}
    with pytest.raises(parley.LeaseConflict):
        bob.lease("docs/index.md")
    # A lock holder may release it; a reader may not lease at all.
    assert forum.session(tokens["mod"]).release(held["id"].split("_")[1])["id"] == held["id"]
    with pytest.raises(parley.Forbidden) as info:
        forum.session(tokens["reader"]).lease("x")
    assert info.value.right == "write"
    with pytest.raises(parley.BadRequest) as bad:
        bob.lease("a//b")
    assert bad.value.field == "resource"
    with pytest.raises(TypeError):
        bob.lease("a", ttl_s="60")  # type: ignore[arg-type]


def test_the_switch_and_the_limits(backend: str) -> None:
    with parley.Forum(clock=CLOCK, coordination=False) as forum:
        session = forum.session(forum.create_token("bob"))
        assert "coordination" not in forum.manifest()["profiles"]
        assert "lease" not in forum.manifest()["operations"]
        with pytest.raises(parley.BadRequest) as caught:
            session.lease("a")
        assert caught.value.reason == "invalid_argument"
        assert [t["name"] for t in session.tools()] == [op for op in parley.OPERATIONS if op in forum.manifest()["operations"]]
    with parley.Forum(clock=CLOCK, profiles=["coordination"], limits={"leases_max": 1, "lease_ttl_max_s": 30}) as forum:
        assert forum.manifest()["profiles"]["coordination"] == {
            "operations": ["set_presence", "get_presence", "lease", "release", "get_leases"],
            "limits": ["lease_ttl_max_s", "leases_max"],
        }
        assert (forum.limits["leases_max"], forum.limits["lease_ttl_max_s"]) == (1, 30)
        session = forum.session(forum.create_token("bob"))
        assert session.lease("a")["expires_at"] == "2026-11-30T12:00:30.000Z"
        with pytest.raises(parley.Conflict) as full:
            session.lease("b")
        assert (full.value.reason, full.value.limit) == ("limit_exceeded", "leases_max")


def test_lease_conflict_from_data_and_pickle() -> None:
    lease: Any = {"id": "ls_1", "resource": "a", "mode": "exclusive"}
    exc = parley.Refusal.from_data({"reason": "lease_conflict", "status": 409, "message": "m", "leases": [lease]})
    assert type(exc) is parley.LeaseConflict and exc.leases == [lease]
    again = pickle.loads(pickle.dumps(exc))
    assert type(again) is parley.LeaseConflict and again.leases == [lease]
    assert parley.LeaseConflict.__module__ == "parley" and "LeaseConflict" in parley.__all__


def test_async_sessions(forum: parley.Forum, tokens: Dict[str, str]) -> None:
    async def scenario() -> List[str]:
        aforum = parley.aio.AsyncForum(forum)
        bob, carol = aforum.session(tokens["bob"]), aforum.session(tokens["carol"])
        assert (await bob.set_presence("away"))["status"] == "away"
        assert [p["status"] for p in await carol.get_presence("ainotes:bob")] == ["away"]
        got = await bob.lease("jobs/7", mode="shared")
        await carol.lease("jobs/", mode="shared")
        with pytest.raises(parley.LeaseConflict) as caught:
            await carol.lease("jobs/7")
        assert [lease["id"] for lease in caught.value.leases] == [got["id"]]
        await bob.release(got["id"])
        return [lease["resource"] for lease in await carol.get_leases()]

    assert asyncio.run(scenario()) == ["jobs/"]


@SERVED_ONLY
def test_a_remote_session(servers: Callable[..., Server]) -> None:  # noqa: F811
    server = servers({"limits": {"writes_per_minute": 0}})
    tokens = {who: server.token(who) for who in ("bob", "carol")}
    server.start()
    bob, carol = (parley.connect(server.url, tokens[who]) for who in ("bob", "carol"))
    try:
        assert bob.set_presence("working", note="remote")["note"] == "remote"
        assert [p["identity"] for p in carol.get_presence()] == ["ainotes:bob"]
        claim_and_collide(bob, carol)
    finally:
        for session in (bob, carol):
            session.forum.close()

    async def remote_async() -> str:
        abob = parley.aio.connect(server.url, tokens["bob"])
        try:
            with pytest.raises(parley.LeaseConflict) as caught:
                await abob.lease("src/parser.rs")
            return caught.value.leases[0]["holder"]["identity"]
        finally:
            abob.sync.forum.close()

    assert asyncio.run(remote_async()) == "ainotes:carol"
