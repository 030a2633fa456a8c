"""The official MCP Python SDK as a real client of `parley serve`, over stdio and
over Streamable HTTP, in each connection mode the SDK offers: `auto` (probes
`server/discover`, the 2026-07-28 stateless revision), `legacy` (the 2025-11-25
`initialize` handshake) and a pinned `2026-07-28`.

The binary comes from PARLEY_BIN, else `target/debug/parley` (run.sh builds it).
"""

from __future__ import annotations

import json
import os
import queue
import signal
import socket
import subprocess
import threading
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

REPO = Path(__file__).resolve().parents[2]
BIN = Path(os.environ.get("PARLEY_BIN", REPO / "target" / "debug" / "parley"))
OPERATIONS = [
    "get_manifest", "whoami", "post", "get_thread", "list_threads", "get_inbox", "get_events", "get_claim",
    "get_messages", "search", "set_presence", "get_presence", "lease", "release", "get_leases", "get_digest",
    "put_artifact", "get_artifact", "export_claim", "import_claim",
]
READ_ONLY = {
    "get_manifest", "whoami", "get_thread", "list_threads", "get_inbox", "get_events", "get_claim",
    "get_messages", "search", "get_presence", "get_leases", "get_digest", "get_artifact", "export_claim",
}
WAITING = {"get_inbox", "get_events", "get_messages", "list_threads"}
MODES = {"auto": "2026-07-28", "legacy": "2025-11-25", "2026-07-28": "2026-07-28"}


@dataclass
class Forum:
    db: Path
    alice: str
    bob: str
    reader: str


def parley(db: Path, *args: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PARLEY_")}
    done = subprocess.run([str(BIN), "--db", str(db), *args], capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.fixture
def forum(tmp_path: Path) -> Forum:
    assert BIN.exists(), f"{BIN} is missing: build it with `cargo build -p parley-cli`"
    db = tmp_path / "forum.redb"

    def token(*args: str) -> str:
        return parley(db, "token", "create", *args).strip()

    return Forum(db=db, alice=token("alice"), bob=token("bob"), reader=token("reader", "--rights", "read"))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def http_server(forum: Forum) -> Iterator[str]:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("PARLEY_")}
    proc = subprocess.Popen(
        [str(BIN), "--db", str(forum.db), "serve", "--http", f"127.0.0.1:{port}"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert proc.stderr is not None
    # A thread reads stderr to its end: the server writes a log line per request, and
    # a pipe nobody drains would fill and stall it.
    lines: "queue.Queue[str]" = queue.Queue()
    stderr = proc.stderr

    def drain() -> None:
        for text in stderr:
            lines.put(text)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    deadline = time.monotonic() + 30
    line = ""
    while "listening on" not in line:
        left = deadline - time.monotonic()
        assert left > 0 and proc.poll() is None, f"server did not start: {line}"
        try:
            line = lines.get(timeout=left)
        except queue.Empty:
            pass
    try:
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
        reader.join(timeout=30)
        proc.stderr.close()


@asynccontextmanager
async def http_client(url: str, token: str | None, mode: str) -> AsyncIterator[Client]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    # The caller owns an httpx client it passes in, and closes it.
    async with httpx2.AsyncClient(headers=headers) as http:
        async with Client(streamable_http_client(url, http_client=http), mode=mode) as client:
            yield client


def stdio_client(forum: Forum, token: str | None, mode: str) -> Client:
    env = {"PARLEY_DB": str(forum.db)}
    if token:
        env["PARLEY_TOKEN"] = token
    return Client(StdioServerParameters(command=str(BIN), args=["serve", "--stdio"], env=env), mode=mode)


async def call(client: Client, tool: str, args: dict[str, Any]) -> dict[str, Any]:
    result = await client.call_tool(tool, args)
    assert not result.is_error, f"{tool}: {result.content}"
    structured: dict[str, Any] | None = result.structured_content
    assert structured is not None
    assert json.loads(getattr(result.content[0], "text")) == structured
    return structured


async def refusal(client: Client, tool: str, args: dict[str, Any]) -> dict[str, Any]:
    result = await client.call_tool(tool, args)
    assert result.is_error, f"{tool} should have been refused"
    assert result.structured_content is not None
    error: dict[str, Any] = result.structured_content["error"]
    assert getattr(result.content[0], "text").startswith(f"{error['reason']}: ")
    return error


async def exercise(client: Client, mode: str, tag: str) -> None:
    """Discover, list the tools, call every tool, and see refusals come back."""
    assert client.protocol_version == MODES[mode]

    listed = await client.list_tools()
    assert [t.name for t in listed.tools] == OPERATIONS
    for tool in listed.tools:
        assert tool.input_schema["type"] == "object", tool.name
        assert tool.output_schema is not None and tool.output_schema["type"] == "object", tool.name
        read_only = bool(tool.annotations and tool.annotations.read_only_hint)
        assert read_only == (tool.name in READ_ONLY), tool.name
        assert ("wait_ms" in tool.input_schema.get("properties", {})) == (tool.name in WAITING), tool.name
    inbox_tool = next(t for t in listed.tools if t.name == "get_inbox")
    assert "wait_ms" in (inbox_tool.description or ""), "the model is told how to wait for its turn"

    manifest = await call(client, "get_manifest", {})
    assert manifest["parley"] == "1"
    assert manifest["operations"] == OPERATIONS
    me = await call(client, "whoami", {})
    assert me["identity"] == "ainotes:alice"

    asked = await call(client, "post", {"kind": "ask", "body": f"Which port ({tag})?"})
    thread = asked["thread"]["id"]
    assert asked["thread"]["state"] == "open"
    view = await call(client, "get_thread", {"thread": thread})
    assert view["messages"][0]["body"] == f"Which port ({tag})?"
    listed_threads = await call(client, "list_threads", {"limit": 10})
    assert thread in [t["id"] for t in listed_threads["items"]]
    inbox = await call(client, "get_inbox", {})
    assert isinstance(inbox["items"], list)
    # Your own question is not your inbox: a short wait ends with the plain result.
    started = time.monotonic()
    waited = await call(client, "get_inbox", {"since": inbox["cursor"], "wait_ms": 200})
    assert waited["items"] == [] and time.monotonic() - started >= 0.2
    found = await call(client, "search", {"q": f"which port {tag}"})
    assert [i["message"]["body"] for i in found["items"]][:1] == [f"Which port ({tag})?"]
    feed = await call(client, "get_messages", {"thread": thread, "wait_ms": 30000})
    assert [m["body"] for m in feed["items"]] == [f"Which port ({tag})?"], "items there return at once"
    too_long = await refusal(client, "get_inbox", {"wait_ms": 30001})
    assert (too_long["reason"], too_long["field"]) == ("invalid_argument", "wait_ms")
    claimed = await call(
        client,
        "post",
        {"kind": "assert", "body": f"Port 7878 is free ({tag}).", "evidence": [{"kind": "log", "ref": "ci.log"}]},
    )
    claim = await call(client, "get_claim", {"claim": claimed["claim"]["id"]})
    assert claim["status"] == "unverified"
    events = await call(client, "get_events", {})
    assert isinstance(events["items"], list)

    selfish = await refusal(client, "post", {"kind": "note", "thread": thread, "body": "Talking to myself."})
    assert (selfish["reason"], selfish["status"]) == ("self_reply", 409)
    missing = await refusal(client, "get_thread", {"thread": "th_99999"})
    assert (missing["reason"], missing["status"]) == ("thread_not_found", 404)
    attest = await refusal(client, "post", {"kind": "attest", "claim": claim["id"], "body": "Mine.", "evidence": [{"kind": "note", "ref": "x"}]})
    assert attest["reason"] == "self_attestation"


async def exercise_without_rights(anonymous: Client, reader: Client) -> None:
    missing = await refusal(anonymous, "whoami", {})
    assert (missing["reason"], missing["status"]) == ("token_missing", 401)
    manifest = await call(anonymous, "get_manifest", {})
    assert manifest["parley"] == "1"
    right = await refusal(reader, "post", {"kind": "ask", "body": "May I write?"})
    assert (right["reason"], right["status"], right["right"]) == ("token_right_missing", 403, "write")


@pytest.mark.parametrize("mode", list(MODES))
def test_stdio(forum: Forum, mode: str) -> None:
    async def main() -> None:
        async with stdio_client(forum, forum.alice, mode) as client:
            await exercise(client, mode, f"stdio {mode}")
        # One stdio server at a time: each holds the forum file while it runs.
        async with stdio_client(forum, None, mode) as anonymous:
            missing = await refusal(anonymous, "whoami", {})
            assert (missing["reason"], missing["status"]) == ("token_missing", 401)
        async with stdio_client(forum, forum.reader, mode) as reader:
            right = await refusal(reader, "post", {"kind": "ask", "body": "May I write?"})
            assert (right["reason"], right["right"]) == ("token_right_missing", "write")

    anyio.run(main)


@pytest.mark.parametrize("mode", list(MODES))
def test_streamable_http(forum: Forum, http_server: str, mode: str) -> None:
    async def main() -> None:
        async with http_client(http_server, forum.alice, mode) as client:
            await exercise(client, mode, f"http {mode}")
        async with http_client(http_server, None, mode) as anonymous, http_client(http_server, forum.reader, mode) as reader:
            await exercise_without_rights(anonymous, reader)

    anyio.run(main)


def test_http_waiting_client_wakes_when_it_is_its_turn(forum: Forum, http_server: str) -> None:
    """bob waits on get_inbox over one SDK client; alice's question to him, posted
    through another, ends his wait long before wait_ms."""

    async def main() -> None:
        async with http_client(http_server, forum.bob, "auto") as bob, http_client(http_server, forum.alice, "auto") as alice:
            woke: dict[str, Any] = {}

            async def wait() -> None:
                started = time.monotonic()
                woke["result"] = await call(bob, "get_inbox", {"wait_ms": 25000})
                woke["took"] = time.monotonic() - started

            async with anyio.create_task_group() as tg:
                tg.start_soon(wait)
                await anyio.sleep(0.3)
                asked = await call(alice, "post", {"kind": "ask", "to": "ainotes:bob", "body": "bob, your turn?"})
            assert [i["thread"]["id"] for i in woke["result"]["items"]] == [asked["thread"]["id"]]
            assert woke["took"] < 20, woke

    anyio.run(main)


def test_http_concurrent_sdk_clients(forum: Forum, http_server: str) -> None:
    """Several SDK clients at once on one server, each posting in its own threads."""

    async def one(i: int, token: str) -> None:
        async with http_client(http_server, token, "auto") as client:
            for j in range(3):
                posted = await call(client, "post", {"kind": "ask", "body": f"Client {i}, question {j}?", "from": {"extension": f"c{i}"}})
                view = await call(client, "get_thread", {"thread": posted["thread"]["id"]})
                assert view["thread"]["message_count"] == 1

    async def main() -> None:
        async with anyio.create_task_group() as tg:
            for i in range(6):
                tg.start_soon(one, i, forum.alice if i % 2 else forum.bob)

    anyio.run(main)
