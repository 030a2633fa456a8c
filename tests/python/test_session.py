"""The session API: one method per act, the reads, extensions and provenance."""

from __future__ import annotations

import datetime
from typing import Dict

import pytest

import parley


def test_a_thread_from_question_to_locked(forum: parley.Forum, tokens: Dict[str, str]) -> None:
    alice = forum.session(tokens["alice"])
    bob = forum.session(tokens["bob"], "worker-1")
    mod = forum.session(tokens["mod"])

    asked = alice.ask("Which port does the dev server use?")
    thread = asked["thread"]["id"]
    assert asked["message"]["kind"] == "ask"
    assert asked["thread"]["state"] == "open"
    assert asked["thread"]["awaiting"]["identity"] == "*"

    answered = bob.answer("Port 7878.", thread=thread)
    assert answered["message"]["from"] == {"identity": "ainotes:bob", "extension": "worker-1"}
    assert answered["thread"]["state"] == "answered"
    assert answered["thread"]["state_confirmed_at"] is None
    assert answered["thread"]["awaiting"]["identity"] == "ainotes:alice"

    inbox = alice.inbox()
    assert [item["thread"]["id"] for item in inbox["items"]] == [thread]
    assert inbox["items"][0]["message"]["id"] == answered["message"]["id"]

    noted = alice.note("Thanks, noted.", parent=answered["message"]["id"])
    assert noted["message"]["parent"] == answered["message"]["id"]

    decided = alice.decide("We use 7878.", thread=thread)
    assert decided["thread"]["state"] == "decided"
    assert decided["thread"]["awaiting"] is None

    closed = mod.mark("Closing: decided.", state="closed", thread=thread)
    assert closed["thread"]["state"] == "closed"
    assert closed["thread"]["locked"] is True
    assert closed["thread"]["state_label"] == "KI · Moderator"

    with pytest.raises(parley.Conflict) as info:
        bob.note("One more thing.", thread=thread)
    assert info.value.reason == "thread_closed"

    reopened = alice.reopen("Reopening: the port changed.", thread=thread)
    assert reopened["thread"]["state"] == "open"

    view = alice.thread(thread)
    assert view["thread"]["message_count"] == 6
    root = view["messages"][0]
    assert root["id"] == asked["message"]["id"]
    assert [m["kind"] for m in root["replies"]][:1] == ["answer"]

    events = alice.events(thread=thread)
    kinds = [(e["from_state"], e["to_state"]) for e in events["items"]]
    assert kinds == [("open", "answered"), ("answered", "decided"), ("decided", "closed"), ("closed", "open")]
    assert alice.threads(state="open")["items"][0]["id"] == thread
    assert alice.threads(state="closed")["items"] == []


def test_propose_object_handoff_and_turns(forum: parley.Forum, tokens: Dict[str, str]) -> None:
    alice = forum.session(tokens["alice"])
    bob = forum.session(tokens["bob"])
    carol = forum.session(tokens["carol"])
    thread = alice.ask("Should we pin redb?", to="ainotes:bob")["thread"]
    assert thread["awaiting"] == {"identity": "ainotes:bob", "extension": None, "message": "msg_1"}
    handed = bob.handoff("Carol knows this better.", to="ainotes:carol", thread=thread["id"])
    assert handed["thread"]["awaiting"]["identity"] == "ainotes:carol"
    proposed = carol.propose("Pin redb 4.6.", thread=thread["id"])
    assert proposed["thread"]["awaiting"]["identity"] == "ainotes:alice"
    objected = alice.object("Why not a range?", parent=proposed["message"]["id"])
    assert objected["thread"]["awaiting"]["identity"] == "ainotes:carol"
    with pytest.raises(parley.Conflict) as info:
        alice.note("Why not a range?", parent=handed["message"]["id"])
    assert info.value.reason == "repeated_body"
    with pytest.raises(parley.Conflict) as info:
        alice.note("On my own question.", thread=thread["id"])
    assert info.value.reason == "self_reply"


def test_generic_post_and_call(forum: parley.Forum, tokens: Dict[str, str]) -> None:
    alice = forum.session(tokens["alice"])
    posted = alice.post("ask", "Generic?")
    assert alice.call("get_thread", {"thread": posted["thread"]["id"]})["thread"]["topic"] == "Generic?"
    me = alice.whoami()
    assert me == {
        "identity": "ainotes:alice",
        "kind": "llm",
        "rights": ["read", "write"],
        "label": "Alice",
        "realm": "ainotes",
    }
    assert alice.manifest()["parley"] == "1"
    assert alice.manifest() == forum.manifest()


def test_ids_as_numbers_and_text(forum: parley.Forum, tokens: Dict[str, str]) -> None:
    alice = forum.session(tokens["alice"])
    bob = forum.session(tokens["bob"])
    alice.ask("Numbers?")
    assert bob.answer("Yes.", thread=1)["message"]["thread"] == "th_1"
    assert bob.note("Also text.", thread="1")["message"]["thread"] == "th_1"
    assert alice.thread(1)["thread"]["id"] == "th_1"
    with pytest.raises(parley.BadRequest) as info:
        bob.note("Wrong prefix.", thread="msg_1")
    assert info.value.reason == "invalid_body"


def test_dialectic_acts(forum: parley.Forum, tokens: Dict[str, str]) -> None:
    bob = forum.session(tokens["bob"])
    carol = forum.session(tokens["carol"])
    judge = forum.session(tokens["judge"])
    log = [{"kind": "log", "ref": "ci/run/812"}]

    asserted = bob.claim(
        "The dev server listens on 7878.",
        evidence=[{"kind": "commit", "ref": "a1b2c3d"}],
        valid_until=datetime.datetime(2030, 1, 1, tzinfo=datetime.timezone.utc),
    )
    claim = asserted["claim"]["id"]
    assert asserted["claim"]["status"] == "unverified"
    assert asserted["message"]["kind"] == "assert"

    with pytest.raises(parley.Conflict) as info:
        bob.attest("I agree with myself.", claim=claim, evidence=log)
    assert info.value.reason == "self_attestation"

    carol.attest("Seen in CI.", claim=claim, evidence=log)
    assert carol.claim_status(claim)["status"] == "supported"
    judge.verify("Checked.", claim=claim)
    assert judge.get_claim(claim)["status"] == "verified"

    refuted = carol.refute("It moved to 7879.", claim=claim, evidence=[{"kind": "url", "ref": "https://example.org/x"}])
    assert refuted["claim"]["refutes"] == claim
    assert bob.claim_status(claim)["status"] == "refuted"

    newer = bob.claim("It listens on 7879.", supersedes=[claim], thread=asserted["thread"]["id"])
    assert bob.claim_status(claim)["status"] == "superseded"
    assert bob.claim_status(claim)["superseded_by"] == newer["claim"]["id"]

    with pytest.raises(parley.Forbidden) as forbidden:
        carol.verify("I cannot.", claim=newer["claim"]["id"])
    assert forbidden.value.right == "verify"


def test_dialectic_off(tokens: Dict[str, str]) -> None:
    with parley.Forum(profiles=()) as plain:
        alice = plain.session(plain.create_token("alice"))
        with pytest.raises(parley.BadRequest) as info:
            alice.claim("A claim.")
        assert info.value.reason == "unknown_kind"
        with pytest.raises(ValueError, match="unknown operation"):
            alice.claim_status("cl_1")


def test_extensions(forum: parley.Forum, tokens: Dict[str, str]) -> None:
    planner = forum.session(tokens["alice"], "planner")
    worker = planner.with_extension("worker")
    assert worker.extension == "worker" and planner.extension == "planner"
    asked = planner.ask("Worker, what is 2+2?", to="ainotes:alice")
    # Your own extension's questions are not your inbox; the other extension's are.
    assert planner.inbox()["items"] == []
    assert [i["thread"]["id"] for i in worker.inbox()["items"]] == [asked["thread"]["id"]]
    answered = worker.answer("4.", thread=asked["thread"]["id"])
    assert answered["thread"]["awaiting"] == {
        "identity": "ainotes:alice",
        "extension": "planner",
        "message": answered["message"]["id"],
    }
    with pytest.raises(parley.Conflict) as info:
        worker.note("Me again.", parent=answered["message"]["id"])
    assert info.value.reason == "self_reply"
    with pytest.raises(parley.BadRequest):
        forum.session(tokens["alice"], "bad extension!").ask("Hello?")


def test_provenance(forum: parley.Forum, tokens: Dict[str, str]) -> None:
    alice = forum.session(tokens["alice"], provenance={"model": "m-1", "client": "tests"})
    first = alice.ask("With provenance?")
    assert first["message"]["provenance"] == {"model": "m-1", "client": "tests"}
    reply = forum.session(tokens["bob"]).answer("Yes.", thread=first["thread"]["id"])
    assert "provenance" not in reply["message"]
    second = alice.note("Own provenance.", parent=reply["message"]["id"], provenance={"model": "m-2"})
    assert second["message"]["provenance"] == {"model": "m-2"}


def test_paging_with_cursors(forum: parley.Forum, tokens: Dict[str, str]) -> None:
    alice = forum.session(tokens["alice"])
    bob = forum.session(tokens["bob"])
    for i in range(5):
        alice.ask(f"Question {i}?")
    page = bob.inbox(limit=2)
    assert len(page["items"]) == 2 and page["more"] is True
    rest = bob.inbox(since=page["cursor"])
    assert len(rest["items"]) == 3 and rest["more"] is False
    assert len(bob.threads(limit=5)["items"]) == 5
    with pytest.raises(parley.BadRequest) as info:
        bob.inbox(since="not-a-cursor")
    assert info.value.reason == "invalid_cursor"


def test_session_repr_hides_the_token(forum: parley.Forum, tokens: Dict[str, str]) -> None:
    session = forum.session(tokens["alice"], "w")
    assert tokens["alice"] not in repr(session)
    assert session.token == tokens["alice"]
    assert session.forum is forum
