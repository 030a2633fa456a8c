"""A multi-agent loop over Parley, driven the way an agent framework would drive it.

Four scripted agents (deterministic, no model needed) share one forum:

* ``alice`` asks which port the dev server should use, hands the answer to a reviewer,
  and decides once a proposal arrives;
* ``bob`` answers open questions;
* ``carol`` reviews what is handed to her: she states a claim with evidence and
  proposes a decision;
* ``mod`` holds the ``lock`` right and confirms the closing of decided threads.

Each round, every agent observes the forum through a tool call (its inbox, or for the
moderator the event feed) and answers with tool calls of its own. The loop executes
them with ``Session.dispatch``, exactly as it would execute a language model's tool
calls, and feeds refusals back as readable errors. It stops when the thread is
decided and closed (confirmed, hence locked).

Run it with ``python examples/python/agents.py`` (add ``--db forum.redb`` to keep the
forum in a file).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any, Dict, List, Optional

import parley

ToolCall = Dict[str, Any]
MAX_ROUNDS = 10


class Policy:
    """What a model would do: look at an observation, return tool calls."""

    def observe(self) -> ToolCall:
        return {"name": "get_inbox", "arguments": {}}

    def act(self, observation: Dict[str, Any]) -> List[ToolCall]:
        return [self.react(item) for item in observation.get("items", []) if self.wants(item)]

    def wants(self, item: Dict[str, Any]) -> bool:
        return False

    def react(self, item: Dict[str, Any]) -> ToolCall:
        raise NotImplementedError


def post(**envelope: Any) -> ToolCall:
    return {"name": "post", "arguments": envelope}


class Asker(Policy):
    def __init__(self) -> None:
        self.asked = False
        self.handed_off = False

    def act(self, observation: Dict[str, Any]) -> List[ToolCall]:
        if not self.asked:
            self.asked = True
            return [post(kind="ask", body="Which port should the dev server listen on?")]
        calls: List[ToolCall] = []
        for item in observation.get("items", []):
            message, thread = item["message"], item["thread"]["id"]
            if message["kind"] == "answer" and not self.handed_off:
                self.handed_off = True
                calls.append(
                    post(
                        kind="handoff",
                        thread=thread,
                        parent=message["id"],
                        to="ainotes:carol",
                        body="Carol, can you confirm this port is free on the CI runners?",
                    )
                )
            elif message["kind"] == "propose":
                calls.append(post(kind="decide", thread=thread, body="Decided: the dev server listens on 7878."))
                calls.append(post(kind="mark", thread=thread, state="closed", body="Nothing left open here."))
        return calls


class Answerer(Policy):
    def wants(self, item: Dict[str, Any]) -> bool:
        return bool(item["message"]["kind"] == "ask")

    def react(self, item: Dict[str, Any]) -> ToolCall:
        return post(kind="answer", parent=item["message"]["id"], body="Port 7878: nothing else binds it.")


class Reviewer(Policy):
    def wants(self, item: Dict[str, Any]) -> bool:
        return bool(item["message"]["kind"] == "handoff")

    def act(self, observation: Dict[str, Any]) -> List[ToolCall]:
        calls: List[ToolCall] = []
        for item in observation.get("items", []):
            if not self.wants(item):
                continue
            handoff = item["message"]["id"]
            calls.append(
                post(
                    kind="assert",
                    parent=handoff,
                    body="Port 7878 is free on every CI runner.",
                    evidence=[{"kind": "log", "ref": "ci/runners/netstat-2026-11-30.txt"}],
                )
            )
            calls.append(post(kind="propose", parent=handoff, body="Let us settle on 7878."))
        return calls


class Moderator(Policy):
    """Watches the event feed and confirms proposed closings."""

    def __init__(self) -> None:
        self.cursor: Optional[str] = None

    def observe(self) -> ToolCall:
        arguments = {} if self.cursor is None else {"since": self.cursor}
        return {"name": "get_events", "arguments": arguments}

    def act(self, observation: Dict[str, Any]) -> List[ToolCall]:
        self.cursor = observation.get("cursor", self.cursor)
        return [
            post(kind="mark", thread=event["thread"], state="closed", body="Confirmed: closed.")
            for event in observation.get("items", [])
            if event["type"] == "transition" and event["to_state"] == "closed" and not event["confirmed"]
        ]


def summary(call: ToolCall, result: Dict[str, Any]) -> str:
    if "error" in result:
        error = result["error"]
        return f"refused: {error.get('reason')} ({error.get('message')})"
    if call["name"] != "post":
        return "ok"
    thread, message = result["thread"], result["message"]
    state = thread["state"] + ("" if thread["state_confirmed_at"] else " (proposed)")
    return f"{message['kind']:<7} {message['id']:<6} in {thread['id']}: {state}"


def run(db: Optional[str], out: Any = sys.stdout) -> Dict[str, Any]:
    """Runs the agents until the thread is decided and closed; returns the thread."""
    with parley.Forum(db, clock="2026-11-30T12:00:00.000Z") as forum:
        policies: Dict[str, Policy] = {
            "alice": Asker(),
            "bob": Answerer(),
            "carol": Reviewer(),
            "mod": Moderator(),
        }
        sessions = {
            "alice": forum.session(forum.create_token("alice", label="Alice")),
            "bob": forum.session(forum.create_token("bob", label="Bob")),
            "carol": forum.session(forum.create_token("carol", label="Carol")),
            "mod": forum.session(forum.create_token("mod", rights=("read", "write", "lock"), label="Moderator")),
        }
        for round_number in range(1, MAX_ROUNDS + 1):
            for name, policy in policies.items():
                session = sessions[name]
                seen = policy.observe()
                observation = session.dispatch(seen["name"], seen["arguments"])
                for call in policy.act(observation):
                    result = session.dispatch(call["name"], call["arguments"])
                    print(f"round {round_number}  {name:<5}  {summary(call, result)}", file=out)
            threads = sessions["mod"].threads()["items"]
            if threads and all(t["state"] == "closed" and t["locked"] for t in threads):
                thread = sessions["mod"].thread(threads[0]["id"])
                print(
                    f"{thread['thread']['id']} is decided and closed (locked, {thread['thread']['state_label']}) "
                    f"after {round_number} rounds and {thread['thread']['message_count']} messages",
                    file=out,
                )
                return thread
        raise RuntimeError(f"the thread was not closed within {MAX_ROUNDS} rounds")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", help="forum file (default: in memory)")
    args = parser.parse_args()
    run(args.db)


if __name__ == "__main__":
    main()
