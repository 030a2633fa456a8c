"""An agent's script written against the typed API; it must pass ``mypy --strict``.

Two agents settle a question: one asks, the other answers and backs the answer with
a claim; the asker confirms the claim and closes the thread. Every result is read
through its ``parley.types`` shape, without a cast and without ``Any``. It also runs:
``python tests/python/typing/user_script.py`` prints the thread's final state.
"""

from __future__ import annotations

from typing import List, Optional

import parley
from parley.types import ClaimStatus, Event, InboxItem, Message, PostResult, State, ThreadSummary


def due_questions(session: parley.Session, since: Optional[str]) -> List[InboxItem]:
    """The questions waiting for this session, after the cursor ``since``."""
    page = session.inbox(since=since)
    return [item for item in page["items"] if item["message"]["kind"] == "ask"]


def describe(event: Event) -> str:
    """One line per event; the ``type`` tag tells a type checker which keys it has."""
    if event["type"] == "claim":
        before: ClaimStatus = event["from_status"]
        return f"{event['claim']}: {before} -> {event['to_status']}"
    origin = "a human" if event["origin"] == "user" else event["identity"]
    return f"{event['thread']}: {event['from_state']} -> {event['to_state']} by {origin}"


def evidence_refs(message: Message) -> List[str]:
    """The evidence of a message: a key that is there only when set."""
    return [item["ref"] for item in message.get("evidence", [])]


def settle(forum: parley.Forum) -> ThreadSummary:
    alice = forum.session(forum.create_token("alice", rights=["read", "write", "verify"]))
    bob = forum.session(forum.create_token("bob", rights=["read", "write", "lock"]), "worker-1")

    asked: PostResult = alice.ask("Which port should the dev server use?")
    thread = asked["thread"]["id"]
    assert asked["replayed"] is False

    for item in due_questions(bob, None):
        answered = bob.answer("Port 7878.", parent=item["message"]["id"])
        if "event" in answered:
            print(describe(answered["event"]))
        claimed = bob.claim(
            "Nothing else listens on 7878 on the CI runners.",
            thread=item["thread"]["id"],
            evidence=[{"kind": "log", "ref": "ci/netstat.txt", "note": "all runners"}],
        )
        if "claim" in claimed:
            claim = claimed["claim"]
            print(f"{claim['id']} is {claim['status']}; evidence {evidence_refs(claimed['message'])}")
            alice.verify("Checked the log myself.", claim=claim["id"])

    # A feed hands over typed items: messages here, one at a time, oldest first.
    for message in alice.feed("messages", thread=thread):
        print(f"first message: {message['kind']} {message['id']} at {message['created_at']}")
        break

    view = alice.thread(thread)
    for root in view["messages"]:
        for reply in root["replies"]:
            print(f"{reply['from']['identity']} ({reply['author_kind']}) {reply['kind']}: {reply['body']}")

    # Close only the thread as it was read: if it moved on meanwhile, say so.
    target: State = "closed"
    seen: State = view["thread"]["state"]
    try:
        bob.mark("Settled: 7878.", state=target, if_state=seen, thread=thread)
    except parley.StateChanged as moved:
        now: State = moved.state
        print(f"{thread} is {now} now, not {seen}; not closing it")
        raise
    for event in bob.events(thread=thread)["items"]:
        print(describe(event))

    me = alice.whoami()
    assert "verify" in me["rights"] and me["kind"] == "llm"
    manifest = alice.manifest()
    print(f"{manifest['server']['name']} limits bodies to {manifest['limits']['body_max_chars']} characters")
    hits = alice.search("port 7878")["items"]
    print(f"{len(hits)} messages mention port 7878, newest in {hits[0]['thread']['topic']!r}")

    summary = alice.threads(state="closed")["items"][0]
    awaiting = summary["awaiting"]
    print(f"{summary['id']} is {summary['state']}, locked={summary['locked']}, due: {awaiting}")
    return summary


if __name__ == "__main__":
    with parley.Forum(clock="2026-11-30T12:00:00.000Z") as forum:
        settle(forum)
