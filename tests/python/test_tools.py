"""Tool schemas for model APIs and running a model's tool calls."""

from __future__ import annotations

import asyncio
import json
import re
from typing import Dict

import mcp.types
import pytest

import parley
import parley.aio


def test_tools_come_from_the_mcp_handler(forum: parley.Forum, tokens: Dict[str, str]) -> None:
    session = forum.session(tokens["alice"])
    listed = forum.mcp(tokens["alice"], {"jsonrpc": "2.0", "id": "l", "method": "tools/list"})
    assert listed is not None
    tools = session.tools()
    assert tools == listed["result"]["tools"]
    assert [t["name"] for t in tools] == list(parley.OPERATIONS)
    # Valid MCP tool definitions, by the reference SDK's own model.
    for tool in tools:
        mcp.types.Tool.model_validate(tool)


def test_openai_and_anthropic_formats(forum: parley.Forum, tokens: Dict[str, str]) -> None:
    session = forum.session(tokens["alice"])
    tools = session.tools("mcp")
    openai = session.tools("openai")
    anthropic = session.tools(format="anthropic")
    assert len(openai) == len(anthropic) == len(tools)
    for source, oa, an in zip(tools, openai, anthropic):
        assert oa == {
            "type": "function",
            "function": {
                "name": source["name"],
                "description": source["description"],
                "parameters": source["inputSchema"],
            },
        }
        assert an == {"name": source["name"], "description": source["description"], "input_schema": source["inputSchema"]}
        assert an["input_schema"]["type"] == "object"
    # Each call returns a fresh copy: a caller may edit it without harm.
    openai[0]["function"]["name"] = "changed"
    assert session.tools("openai")[0]["function"]["name"] == "get_manifest"
    with pytest.raises(ValueError, match="formats are"):
        session.tools("gemini")


def test_tools_follow_the_profiles() -> None:
    with parley.Forum(profiles=()) as plain:
        names = [t["name"] for t in plain.session(plain.create_token("a")).tools()]
        assert "get_claim" not in names
        schema = plain.session(plain.create_token("b")).tools("anthropic")[2]["input_schema"]
        assert "assert" not in schema["properties"]["kind"]["enum"]


def test_dispatch_runs_tool_calls(forum: parley.Forum, tokens: Dict[str, str]) -> None:
    alice = forum.session(tokens["alice"], "planner")
    bob = forum.session(tokens["bob"])
    # OpenAI sends arguments as JSON text; Anthropic as an object.
    asked = alice.dispatch("post", json.dumps({"kind": "ask", "body": "Which port?", "to": "ainotes:bob"}))
    assert asked["message"]["from"]["extension"] == "planner"
    thread = asked["thread"]["id"]
    inbox = bob.dispatch("get_inbox", {})
    assert [i["thread"]["id"] for i in inbox["items"]] == [thread]
    answered = bob.dispatch("post", {"kind": "answer", "thread": thread, "body": "7878"})
    assert answered["thread"]["state"] == "answered"
    assert alice.dispatch("get_thread", {"thread": thread})["thread"]["message_count"] == 2
    assert alice.dispatch("whoami", None)["identity"] == "ainotes:alice"
    assert alice.dispatch("whoami", "")["identity"] == "ainotes:alice"
    # The session's inbox is its extension's: the planner's own question is hidden.
    assert alice.dispatch("get_inbox", {})["items"][0]["message"]["kind"] == "answer"


def test_dispatch_turns_refusals_into_readable_errors(forum: parley.Forum, tokens: Dict[str, str]) -> None:
    alice = forum.session(tokens["alice"])
    result = alice.dispatch("post", {"kind": "answer", "thread": "th_404", "body": "?"})
    assert result == {
        "error": {"reason": "thread_not_found", "status": 404, "message": result["error"]["message"]}
    }
    assert "th_404" in result["error"]["message"]
    bad_json = alice.dispatch("post", '{"kind": "ask", "body": ')
    assert bad_json["error"]["reason"] == "invalid_body" and bad_json["error"]["status"] == 400
    not_object = alice.dispatch("get_thread", "[1, 2]")
    assert not_object["error"]["reason"] == "invalid_argument"
    unknown = alice.dispatch("delete_everything", {})
    assert "unknown tool" in unknown["error"]["message"]
    forbidden = forum.session(tokens["reader"]).dispatch("post", {"kind": "ask", "body": "May I?"})
    assert forbidden["error"]["right"] == "write"
    # A model cannot speak as another sub-agent than its session's.
    worker = forum.session(tokens["bob"], "worker")
    posted = worker.dispatch("post", {"kind": "ask", "body": "Hi?", "from": {"extension": "boss"}})
    assert posted["message"]["from"]["extension"] == "worker"


def test_dispatch_matches_mcp_tools_call(forum: parley.Forum, tokens: Dict[str, str]) -> None:
    """The same call through dispatch and through MCP gives the same structured result."""
    alice = forum.session(tokens["alice"])
    alice.ask("Anything?")
    via_dispatch = alice.dispatch("list_threads", {"limit": 5})
    response = forum.mcp(
        tokens["alice"],
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "list_threads", "arguments": {"limit": 5}}},
    )
    assert response is not None
    assert response["result"]["structuredContent"] == via_dispatch
    refused = forum.mcp(
        tokens["alice"],
        {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "get_thread", "arguments": {"thread": 99}}},
    )
    assert refused is not None and refused["result"]["isError"] is True
    assert refused["result"]["structuredContent"] == alice.dispatch("get_thread", {"thread": 99})


def test_mcp_accepts_text_and_ignores_notifications(forum: parley.Forum) -> None:
    pong = forum.mcp(None, '{"jsonrpc": "2.0", "id": 1, "method": "ping"}')
    assert pong == {"jsonrpc": "2.0", "id": 1, "result": {}}
    assert forum.mcp(None, {"jsonrpc": "2.0", "method": "notifications/initialized"}) is None
    broken = forum.mcp(None, "{not json")
    assert broken is not None and broken["error"]["code"] == -32700


def test_every_format_carries_search_and_the_idempotency_key(forum: parley.Forum, tokens: Dict[str, str]) -> None:
    session = forum.session(tokens["alice"])
    schemas = {
        "mcp": {t["name"]: t["inputSchema"] for t in session.tools("mcp")},
        "openai": {t["function"]["name"]: t["function"]["parameters"] for t in session.tools("openai")},
        "anthropic": {t["name"]: t["input_schema"] for t in session.tools("anthropic")},
    }
    for format, by_name in schemas.items():
        assert list(by_name)[8:10] == ["get_messages", "search"], format
        key = by_name["post"]["properties"]["idempotency_key"]
        assert key["type"] == "string" and "idempotency_key" not in by_name["post"].get("required", [])
        assert re.fullmatch(key["pattern"], parley.new_idempotency_key())
        search = by_name["search"]
        assert search["required"] == ["q"]
        assert set(search["properties"]) == {"q", "thread", "since", "limit"}
        assert search["properties"]["q"]["type"] == "string"
        assert "wait_ms" not in search["properties"]
        assert by_name == schemas["mcp"], format
    descriptions = {t["function"]["name"]: t["function"]["description"] for t in session.tools("openai")}
    assert "search" in descriptions["post"] and "newest first" in descriptions["search"]


def test_dispatch_passes_the_idempotency_key(forum: parley.Forum, tokens: Dict[str, str]) -> None:
    alice = forum.session(tokens["alice"])
    arguments = {"kind": "ask", "body": "Which port?", "idempotency_key": "model-7"}
    first = alice.dispatch("post", arguments)
    assert "replayed" not in first  # a tool result is the engine's, as over MCP
    again = alice.dispatch("post", json.dumps(arguments))
    assert again["replayed"] is True and again["message"]["id"] == first["message"]["id"]
    conflict = alice.dispatch("post", {**arguments, "body": "Which host?"})
    assert conflict["error"]["reason"] == "idempotency_conflict"
    assert (conflict["error"]["status"], conflict["error"]["field"]) == (409, "idempotency_key")
    malformed = alice.dispatch("post", {**arguments, "idempotency_key": "not a key"})
    assert (malformed["error"]["reason"], malformed["error"]["field"]) == ("invalid_body", "idempotency_key")
    assert alice.messages()["items"][-1]["id"] == first["message"]["id"] and len(alice.messages()["items"]) == 1
    # The same tool call over MCP replays the same post.
    response = forum.mcp(
        tokens["alice"],
        {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "post", "arguments": arguments}},
    )
    assert response is not None and response["result"]["structuredContent"] == alice.dispatch("post", arguments)

    async def in_aio() -> None:
        session = parley.aio.AsyncSession(alice)
        replay = await session.dispatch("post", arguments)
        assert replay["replayed"] is True and replay["message"]["id"] == first["message"]["id"]
        refused = await session.dispatch("post", {**arguments, "body": "Which host?"})
        assert refused["error"]["reason"] == "idempotency_conflict"
        found = await session.dispatch("search", {"q": "port"})
        assert [i["message"]["id"] for i in found["items"]] == [first["message"]["id"]]

    asyncio.run(in_aio())
