"""A multi-agent loop over Parley, driven the way an agent framework would drive it.

Four scripted agents (deterministic, no model needed) share one forum:

* ``alice`` asks which port the dev server should use, hands the answer to a reviewer,
  and decides once a proposal arrives;
* ``bob`` answers open questions;
* ``carol`` reviews what is handed to her: she states a claim with evidence and
  proposes a decision;
* ``mod`` holds the ``lock`` right and confirms the closing of decided threads.

Each agent runs in a thread of its own and waits for its turn instead of polling: it
observes the forum through a tool call that waits (its inbox, or for the moderator
the event feed, with ``wait_ms`` and the ``since`` cursor of its last observation,
as the tool descriptions tell a model to), and answers with tool calls of its own.
The loop executes them with ``Session.dispatch``, exactly as it would execute a
language model's tool calls, and feeds refusals back as readable errors. The sessions
retry a call that hit a storage failure (``retries=``), each post under one
idempotency key, so a retried post is never written twice. It stops
when the thread is decided and closed (confirmed, hence locked): the moderator is
then done, and ``Forum.end_waits`` lets the others return from their waits.

Run it with ``python examples/python/agents.py`` (add ``--db forum.redb`` to keep the
forum in a file).
"""

from __future__ import annotations

import argparse
import sys
import threading
from typing import Any, Dict, List, Optional

import parley

ToolCall = Dict[str, Any]
# How long one observation may wait for something new, in milliseconds.
WAIT_MS = 5_000
# How long the whole conversation may take before the run gives up, in seconds.
TIMEOUT_S = 60.0
# How many more times a session runs a call that failed with a storage error.
RETRIES = 3


class Policy:
    """What a model would do: look at an observation, return tool calls."""

    observation_tool = "get_inbox"

    def __init__(self) -> None:
        self.cursor: Optional[str] = None
        self.done = False

    def start(self) -> List[ToolCall]:
        """Tool calls to make before the first observation."""
        return []

    def observe(self) -> ToolCall:
        """A read that waits for what is new since the last observation."""
        arguments: Dict[str, Any] = {"wait_ms": WAIT_MS}
        if self.cursor is not None:
            arguments["since"] = self.cursor
        return {"name": self.observation_tool, "arguments": arguments}

    def seen(self, observation: Dict[str, Any]) -> None:
        self.cursor = observation.get("cursor", self.cursor)

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
        super().__init__()
        self.handed_off = False

    def start(self) -> List[ToolCall]:
        return [post(kind="ask", body="Which port should the dev server listen on?")]

    def act(self, observation: Dict[str, Any]) -> List[ToolCall]:
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
    """Watches the event feed and confirms a proposed closing; then it is done."""

    observation_tool = "get_events"

    def act(self, observation: Dict[str, Any]) -> List[ToolCall]:
        calls = [
            post(kind="mark", thread=event["thread"], state="closed", body="Confirmed: closed.")
            for event in observation.get("items", [])
            if event["type"] == "transition" and event["to_state"] == "closed" and not event["confirmed"]
        ]
        self.done = self.done or bool(calls)
        return calls


def summary(call: ToolCall, result: Dict[str, Any]) -> str:
    if "error" in result:
        error = result["error"]
        return f"refused: {error.get('reason')} ({error.get('message')})"
    if call["name"] != "post":
        return "ok"
    thread, message = result["thread"], result["message"]
    state = thread["state"] + ("" if thread["state_confirmed_at"] else " (proposed)")
    return f"{message['kind']:<7} {message['id']:<6} in {thread['id']}: {state}"


class Agent(threading.Thread):
    """One agent's loop: observe (waiting for its turn), act, repeat until done."""

    def __init__(self, name: str, policy: Policy, session: parley.Session, out: Any, floor: threading.Lock) -> None:
        super().__init__(name=name, daemon=True)
        self.policy = policy
        self.session = session
        self.out = out
        self.floor = floor
        self.error: Optional[BaseException] = None

    def run(self) -> None:
        try:
            self.execute(self.policy.start())
            forum = self.session.forum
            while not self.policy.done and not forum.waits_ended:
                seen = self.policy.observe()
                observation = self.session.dispatch(seen["name"], seen["arguments"])
                self.policy.seen(observation)
                self.execute(self.policy.act(observation))
        except BaseException as exc:  # reported by the main thread
            self.error = exc

    def execute(self, calls: List[ToolCall]) -> None:
        for call in calls:
            # One agent has the floor at a time, so a post and its line are printed
            # before any agent it woke can answer: the transcript reads in order.
            with self.floor:
                result = self.session.dispatch(call["name"], call["arguments"])
                print(f"{self.name:<5}  {summary(call, result)}", file=self.out)


def run(db: Optional[str], out: Any = sys.stdout) -> parley.ThreadView:
    """Runs the agents until the thread is decided and closed; returns the thread."""
    floor = threading.Lock()
    with parley.Forum(db, clock="2026-11-30T12:00:00.000Z") as forum:
        policies: Dict[str, Policy] = {
            "alice": Asker(),
            "bob": Answerer(),
            "carol": Reviewer(),
            "mod": Moderator(),
        }
        tokens = {
            "alice": forum.create_token("alice", label="Alice"),
            "bob": forum.create_token("bob", label="Bob"),
            "carol": forum.create_token("carol", label="Carol"),
            "mod": forum.create_token("mod", rights=("read", "write", "lock"), label="Moderator"),
        }
        sessions = {name: forum.session(token, retries=RETRIES) for name, token in tokens.items()}
        # The listeners first, so the question finds them waiting.
        agents = {name: Agent(name, policies[name], sessions[name], out, floor) for name in ("bob", "carol", "mod", "alice")}
        for agent in agents.values():
            agent.start()
        agents["mod"].join(TIMEOUT_S)
        # The moderator is done (or time is up): end the other agents' waits.
        forum.end_waits()
        for agent in agents.values():
            agent.join(TIMEOUT_S)
        for agent in agents.values():
            if agent.error is not None:
                raise RuntimeError(f"agent {agent.name} failed") from agent.error
        if any(agent.is_alive() for agent in agents.values()) or not policies["mod"].done:
            raise RuntimeError(f"the thread was not closed within {TIMEOUT_S:g} seconds")
        threads = sessions["mod"].threads()["items"]
        thread = sessions["mod"].thread(threads[0]["id"])
        view = thread["thread"]
        print(
            f"{view['id']} is decided and closed (locked, {view['state_label']}) "
            f"with {view['message_count']} messages",
            file=out,
        )
        return thread


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", help="forum file (default: in memory)")
    args = parser.parse_args()
    run(args.db)


if __name__ == "__main__":
    main()
