"""``session.digest`` (SPEC §17): a long thread summed up, in process, through
``parley.aio`` and through ``parley.connect`` against a real ``parley serve --http``."""

from __future__ import annotations

import asyncio
from typing import Any, Dict, List

import pytest

import parley
import parley.aio
from served import SERVED_ONLY, Cast


def ids(messages: List[Any]) -> List[str]:
    return [m["id"] for m in messages]


def build(alice: parley.Session, bob: parley.Session) -> Dict[str, Any]:
    """A thread with nested answers, two decisions, a claim and its refutation."""
    m1 = alice.ask("Which port should the dev server use?")["message"]
    thread = m1["thread"]
    m2 = bob.answer("8080.", parent=m1["id"])["message"]
    m3 = bob.ask("Is 8080 free on CI?", parent=m1["id"])["message"]
    m4 = alice.note("It was free last week.", parent=m3["id"])["message"]
    bob.answer("Then 8080 works on CI.", parent=m4["id"])  # answers m3 from two levels down
    m6 = alice.ask("Why not 8081?", parent=m2["id"])["message"]
    alice.decide("We use 8080.", parent=m1["id"])
    m8 = bob.ask("And for staging?", parent=m1["id"])["message"]
    m9 = alice.decide("Staging uses 9090.", parent=m8["id"])["message"]
    claim = bob.claim("Port 9090 is free on staging.", parent=m9["id"])
    refute = alice.refute(
        "9090 is taken by the metrics agent.",
        claim=claim["claim"]["id"],
        evidence=[{"kind": "log", "ref": "netstat: 9090 in use"}],
    )
    m12 = bob.note("Then staging moves to 9091.", parent=refute["message"]["id"])["message"]
    return {
        "thread": thread,
        "root": m1["id"],
        "decision": m9["id"],
        "open": [m6["id"], m8["id"]],
        "claims": [refute["message"]["counter_claim"], claim["claim"]["id"]],
        "recent": [m8["id"], m9["id"], claim["message"]["id"], refute["message"]["id"], m12["id"]],
    }


def check(digest: parley.Digest, want: Dict[str, Any]) -> None:
    assert set(digest) == {"thread", "root", "decision", "open_questions", "claims", "recent", "omitted"}
    assert digest["thread"]["id"] == want["thread"] and digest["thread"]["message_count"] == 12
    assert digest["root"]["id"] == want["root"] and digest["root"]["parent"] is None
    assert digest["decision"] is not None and digest["decision"]["id"] == want["decision"]
    assert ids(digest["open_questions"]) == want["open"]
    assert [c["id"] for c in digest["claims"]] == want["claims"]
    assert [c["status"] for c in digest["claims"]] == ["unverified", "refuted"]
    assert digest["claims"][1]["text"] == "Port 9090 is free on staging."
    assert ids(digest["recent"]) == want["recent"]
    assert digest["omitted"] == 5
    assert all("replies" not in m for m in [digest["root"], *digest["recent"]])


def test_digest_in_process(forum: parley.Forum, tokens: Dict[str, str]) -> None:
    alice, bob = forum.session(tokens["alice"]), forum.session(tokens["bob"])
    want = build(alice, bob)
    digest = bob.digest(want["thread"])
    check(digest, want)
    assert bob.get_digest(want["thread"]) == digest
    assert forum.call(tokens["reader"], "get_digest", {"thread": want["thread"]}) == digest
    # A one-message thread: root, open question and recent at once.
    lone = alice.ask("Anyone there?")["message"]
    d = bob.digest(lone["thread"])
    assert (d["decision"], ids(d["open_questions"]), ids(d["recent"]), d["omitted"]) == (
        None,
        [lone["id"]],
        [lone["id"]],
        0,
    )


def test_digest_refusals(forum: parley.Forum, tokens: Dict[str, str]) -> None:
    alice = forum.session(tokens["alice"])
    with pytest.raises(parley.NotFound) as e:
        alice.digest("th_99")
    assert (e.value.reason, e.value.status) == ("thread_not_found", 404)
    with pytest.raises(parley.BadRequest) as wrong:
        alice.digest("msg_1")
    assert (wrong.value.reason, wrong.value.field) == ("invalid_argument", "thread")
    with pytest.raises(TypeError):
        alice.digest(1.5)  # type: ignore[arg-type]
    with pytest.raises(parley.BadRequest) as bad:
        forum.call(tokens["alice"], "get_digest", {"thread": "th_1", "limit": 3})
    assert bad.value.reason == "invalid_argument"
    writer = forum.create_token("wo", rights=("write",))
    thread = alice.ask("Here?")["thread"]["id"]
    with pytest.raises(parley.Forbidden) as no_read:
        forum.session(writer).digest(thread)
    assert no_read.value.reason == "token_right_missing"


def test_digest_through_aio(forum: parley.Forum, tokens: Dict[str, str]) -> None:
    want = build(forum.session(tokens["alice"]), forum.session(tokens["bob"]))

    async def main() -> parley.Digest:
        session = parley.aio.AsyncSession(forum.session(tokens["bob"]))
        return await session.digest(want["thread"])

    check(asyncio.run(main()), want)


@SERVED_ONLY
def test_digest_through_connect(cast: Cast) -> None:  # noqa: F811
    alice, bob = cast.session("alice"), cast.session("bob")
    want = build(alice, bob)
    check(cast.session("reader").digest(want["thread"]), want)
    with pytest.raises(parley.NotFound):
        bob.digest("th_99")
