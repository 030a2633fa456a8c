"""What every framework example shares: a real `parley` server with two agents'
tokens, the scripted "model" both agents follow, and the check of the forum after
the run.

The script is framework-neutral on purpose: each example turns its framework's
message history into the list of tool results seen so far (as text), asks
`next_step` what to do, and turns the answer into its framework's tool call or
final reply. So the frameworks differ only where they really differ: their agent
loop and their MCP client.

The binary comes from PARLEY_BIN, else target/debug/parley (run.sh builds it).
"""

from __future__ import annotations

import asyncio
import atexit
import json
import os
import queue
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Awaitable, Callable, Iterator, Optional, Union

REPO = Path(__file__).resolve().parents[2]
BIN = Path(os.environ.get("PARLEY_BIN") or REPO / "target" / "debug" / "parley")

QUESTION = "Which port should the staging server listen on?"
ANSWER = "Use port 7878: it is free on staging."
DECISION = "Decided: staging listens on port 7878."
SELF_REPLY = "Answering my own question."
# The longest a tool call waits for the other agent (the server's cap is 30 s).
WAIT_MS = 20000

# What an agent is asked to do; the scripted model reads its role from it.
ASKER = "You are alice. Ask which port staging should use, wait for the answer, then decide."
ASK_ONLY = "You are alice. Ask which port staging should use."
ANSWERER = "You are bob. Wait for a question in your inbox and answer it."
DECIDER = "You are alice. Wait for the answer to your question, then decide."


@dataclass
class Call:
    """The model calls one tool."""

    tool: str
    args: dict[str, Any]


@dataclass
class Final:
    """The model ends its turn with this text."""

    text: str


def _thread(results: list[str]) -> Optional[str]:
    for text in results:
        found = re.search(r"\bth_\d+\b", text)
        if found:
            return found.group(0)
    return None


def next_step(prompt: str, results: list[str]) -> Union[Call, Final]:
    """The scripted model: what an agent with this prompt does after these tool
    results (their text, oldest first). A pure function of its inputs, so it gives
    the same answer however often a framework asks."""
    # A framework may wrap the prompt ("New task: ..."): find which one it holds.
    prompt = next((p for p in (ASKER, ASK_ONLY, ANSWERER, DECIDER) if p in prompt), prompt)
    refused = any("self_reply" in r for r in results)
    last = results[-1] if results else ""
    if prompt in (ASKER, ASK_ONLY) and not results:
        return Call("post", {"kind": "ask", "body": QUESTION})
    if prompt in (ASKER, ASK_ONLY) and len(results) == 1:
        # A reply to its own question: the forum refuses it with self_reply, and the
        # refusal must come back as a tool result the model reads.
        return Call("post", {"kind": "note", "thread": _thread(results), "body": SELF_REPLY})
    if prompt == ASK_ONLY:
        return Final(f"Asked in {_thread(results)}; my own reply was refused: {'self_reply' if refused else 'no refusal seen'}.")
    if prompt in (ASKER, DECIDER):
        if DECISION in last:
            if prompt == DECIDER:
                return Final(f"Decided port 7878 in {_thread(results)}.")
            seen = "self_reply" if refused else "no refusal seen"
            return Final(f"Decided port 7878 in {_thread(results)}; my own reply was refused: {seen}.")
        if ANSWER in last:  # bob's answer came in: decide
            return Call("post", {"kind": "decide", "thread": _answered_thread(last), "body": DECISION})
        if sum(1 for r in results if ANSWER not in r) > 8:
            return Final("Gave up waiting for an answer.")
        return _wait(results)
    if prompt == ANSWERER:
        if results and ANSWER in last:
            return Final("Answered.")
        if results and QUESTION in last:
            return Call("post", {"kind": "answer", "thread": _answered_thread(last), "body": ANSWER})
        if len(results) > 8:
            return Final("Gave up waiting for a question.")
        return _wait(results)
    raise ValueError(f"no script for the prompt {prompt!r}")


def _wait(results: list[str]) -> Call:
    """Wait for one's turn: `get_inbox` with `wait_ms`, from the cursor of the last
    inbox read when there was one (so a second wait is a new call, not a repeat,
    which some frameworks refuse or answer from a cache)."""
    for text in reversed(results):
        found = re.search(r"""["']cursor["']\s*:\s*["']([^"']+)["']""", text)
        if found:
            return Call("get_inbox", {"since": found.group(1), "wait_ms": WAIT_MS})
    return Call("get_inbox", {"wait_ms": WAIT_MS})


def _answered_thread(text: str) -> str:
    thread = _thread([text])
    assert thread, f"no thread id in {text[:300]!r}"
    return thread


@dataclass
class Forum:
    db: Path
    alice: str
    bob: str
    # What `parley serve --http` logged, a line per request (empty for stdio runs).
    server_log: list[str] = field(default_factory=list)

    def stdio_env(self, token: str) -> dict[str, str]:
        """The environment of a `parley serve --stdio` for the agent with this token."""
        return {"PARLEY_DB": str(self.db), "PARLEY_TOKEN": token, "PATH": os.environ.get("PATH", "")}

    def headers(self, token: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {token}"}


def parley(db: Path, *args: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PARLEY_")}
    done = subprocess.run([str(BIN), "--db", str(db), *args], capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout


def new_forum() -> Forum:
    assert BIN.exists(), f"{BIN} is missing: build it with `cargo build -p parley-cli` or set PARLEY_BIN"
    home = tempfile.mkdtemp(prefix="parley-frameworks-")
    atexit.register(shutil.rmtree, home, ignore_errors=True)
    db = Path(home) / "forum.redb"
    return Forum(db=db, alice=parley(db, "token", "create", "alice").strip(), bob=parley(db, "token", "create", "bob").strip())


@contextmanager
def http_server(forum: Forum) -> Iterator[str]:
    """`parley serve --http` on a free port of 127.0.0.1; yields the MCP endpoint."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PARLEY_")}
    env["RUST_LOG"] = "info"  # the request log lines check_forum reads
    proc = subprocess.Popen(
        [str(BIN), "--db", str(forum.db), "serve", "--http", "127.0.0.1:0"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert proc.stderr is not None
    # The server logs a line per request: drain stderr so the pipe never fills.
    lines: "queue.Queue[str]" = queue.Queue()
    stderr = proc.stderr

    def drain() -> None:
        for line in stderr:
            forum.server_log.append(line)
            lines.put(line)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    deadline = time.monotonic() + 30
    url = ""
    while not url:
        assert time.monotonic() < deadline and proc.poll() is None, "the server did not start"
        try:
            found = re.search(r"listening on (http://\S+)", lines.get(timeout=1))
        except queue.Empty:
            continue
        if found:
            url = found.group(1).rstrip("/,") + "/mcp"
    try:
        yield url
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0, "the server did not stop cleanly"
        reader.join(timeout=30)


def check_forum(forum: Forum, finals: dict[str, str]) -> None:
    """The forum after the exchange: one thread, decided, with alice's question,
    bob's answer and alice's decision, and nothing of alice's refused reply. And
    each agent's last words show that the models read what they were told."""
    threads = json.loads(parley(forum.db, "threads", "--json", "--token", forum.alice))["items"]
    assert len(threads) == 1, threads
    view = json.loads(parley(forum.db, "thread", threads[0]["id"], "--json", "--token", forum.alice))
    assert view["thread"]["state"] == "decided", view["thread"]
    said = []

    def walk(messages: list[dict[str, Any]]) -> None:
        for m in messages:
            said.append((m["from"]["identity"], m["kind"], m["body"]))
            walk(m.get("replies", []))

    walk(view["messages"])
    assert said == [
        ("ainotes:alice", "ask", QUESTION),
        ("ainotes:bob", "answer", ANSWER),
        ("ainotes:alice", "decide", DECISION),
    ], said
    assert "refused: self_reply" in finals["alice"], finals
    assert finals["bob"] == "Answered.", finals
    how = "over stdio, in turns"
    if forum.server_log:
        # Over HTTP bob was waiting before alice asked: his get_inbox was held open
        # until her question came (the log gives each request's duration).
        waits = [float(m.group(1)) for m in re.finditer(r'tool="get_inbox" identity="ainotes:bob" .*?ms=([0-9.]+)', "".join(forum.server_log))]
        assert waits and max(waits) >= 200, f"bob never waited in get_inbox: {waits}"
        how = f"over HTTP, bob waited {max(waits) / 1000:.1f} s for the question"
    print(f"ok: {view['thread']['id']} decided; alice asked, bob answered, alice decided; alice read the self_reply refusal; {how}")


async def exchange_concurrently(forum: Forum, run: Callable[[str, str], Awaitable[str]]) -> dict[str, str]:
    """Both agents at once on one server: bob waits in `get_inbox` (wait_ms) while
    alice asks, gets her own reply refused, waits for the answer and decides.
    `run(prompt, token)` runs one agent to its end and returns its last words."""
    bob = asyncio.ensure_future(run(ANSWERER, forum.bob))
    await asyncio.sleep(1.5)  # time for bob to connect and start waiting
    alice = await run(ASKER, forum.alice)
    return {"alice": alice, "bob": await bob}


async def exchange_in_turns(forum: Forum, run: Callable[[str, str], Awaitable[str]]) -> dict[str, str]:
    """One agent after the other, for a stdio server: a forum file is held by one
    process at a time, so each agent run starts its own `parley serve --stdio`."""
    asked = await run(ASK_ONLY, forum.alice)
    answered = await run(ANSWERER, forum.bob)
    decided = await run(DECIDER, forum.alice)
    return {"alice": f"{asked} {decided}", "bob": answered}


def exchange_concurrently_sync(forum: Forum, run: Callable[[str, str], str]) -> dict[str, str]:
    """exchange_concurrently for a framework whose agents run synchronously:
    bob in a thread of his own."""
    out: dict[str, str] = {}
    errors: list[BaseException] = []

    def bob() -> None:
        try:
            out["bob"] = run(ANSWERER, forum.bob)
        except BaseException as e:  # reported by the caller's thread
            errors.append(e)

    waiting = threading.Thread(target=bob)
    waiting.start()
    time.sleep(1.5)
    out["alice"] = run(ASKER, forum.alice)
    waiting.join(timeout=120)
    if errors:
        raise errors[0]
    return out


def exchange_in_turns_sync(forum: Forum, run: Callable[[str, str], str]) -> dict[str, str]:
    asked = run(ASK_ONLY, forum.alice)
    answered = run(ANSWERER, forum.bob)
    decided = run(DECIDER, forum.alice)
    return {"alice": f"{asked} {decided}", "bob": answered}


def log(*parts: object) -> None:
    print(*parts, file=sys.stderr, flush=True)
