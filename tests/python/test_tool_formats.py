"""The tool schemas as third-party tool-calling frameworks read them.

Each check uses the framework's own code: the openai and anthropic SDKs' tool
types, the OpenAI Agents SDK's strict-schema conversion, and pydantic-ai's
``TestModel``, which calls every tool with arguments generated from its schema.
"""

from __future__ import annotations

import asyncio
import copy
import json
import subprocess
from pathlib import Path
from typing import Any, Dict, Iterator, List

import anthropic.types
import openai.types.chat
import openai.types.responses
import pydantic
import pytest
from agents.strict_schema import ensure_strict_json_schema
from pydantic_ai import Agent, Tool
from pydantic_ai.models.test import TestModel

import parley


def schemas(value: Any) -> Iterator[Dict[str, Any]]:
    """Every schema object nested in ``value`` (properties, items, anyOf, $defs)."""
    if isinstance(value, dict):
        yield value
        for key in ("properties", "$defs"):
            for sub in value.get(key, {}).values():
                yield from schemas(sub)
        if isinstance(value.get("items"), dict):
            yield from schemas(value["items"])
        for sub in value.get("anyOf", []):
            yield from schemas(sub)


def test_every_input_schema_declares_one_type(forum: parley.Forum, tokens: Dict[str, str]) -> None:
    session = forum.session(tokens["alice"])
    for tool in session.tools():
        for schema in schemas(tool["inputSchema"]):
            assert not isinstance(schema.get("type"), list), (tool["name"], schema)
    post = next(t for t in session.tools() if t["name"] == "post")["inputSchema"]
    assert post["properties"]["thread"]["type"] == "string"
    # Numbers are still accepted, as before.
    asked = session.post("ask", "Which port?")
    number = int(asked["thread"]["id"].split("_")[1])
    assert session.dispatch("get_thread", {"thread": number})["thread"]["id"] == asked["thread"]["id"]


def test_formats_validate_as_the_sdks_tool_types(forum: parley.Forum, tokens: Dict[str, str]) -> None:
    session = forum.session(tokens["alice"])
    chat = pydantic.TypeAdapter(openai.types.chat.ChatCompletionToolParam)
    responses = pydantic.TypeAdapter(openai.types.responses.FunctionToolParam)
    claude = pydantic.TypeAdapter(anthropic.types.ToolParam)
    for strict in (False, True):
        for tool in session.tools("openai", strict=strict):
            chat.validate_python(tool)
            assert tool["function"].get("strict", False) is strict
        for tool in session.tools("openai-responses", strict=strict):
            responses.validate_python(tool)
            assert tool["strict"] is strict
            assert set(tool) == {"type", "name", "description", "parameters", "strict"}
    for tool in session.tools("anthropic"):
        claude.validate_python(tool)
    with pytest.raises(ValueError, match="openai formats only"):
        session.tools("anthropic", strict=True)
    with pytest.raises(TypeError):
        session.tools("openai", strict="yes")  # type: ignore[arg-type]


STRICT_KEYWORDS = {
    "type", "properties", "required", "additionalProperties", "items", "enum", "const",
    "anyOf", "description", "title", "pattern", "format", "minimum", "maximum",
    "exclusiveMinimum", "exclusiveMaximum", "multipleOf", "minItems", "maxItems", "$defs", "$ref",
}


def test_strict_schemas_follow_openais_rules(forum: parley.Forum, tokens: Dict[str, str]) -> None:
    session = forum.session(tokens["alice"])
    loose = {t["name"]: t["inputSchema"] for t in session.tools()}
    for tool in session.tools("openai", strict=True):
        name, parameters = tool["function"]["name"], tool["function"]["parameters"]
        for schema in schemas(parameters):
            assert set(schema) <= STRICT_KEYWORDS, (name, set(schema) - STRICT_KEYWORDS)
            if "properties" in schema:
                assert schema["required"] == list(schema["properties"]), name
                assert schema["additionalProperties"] is False, name
        # The Agents SDK's own conversion finds nothing left to change.
        assert ensure_strict_json_schema(copy.deepcopy(parameters)) == parameters, name
        # What was optional is nullable; what was required is not.
        source = loose[name]
        for prop, schema in parameters["properties"].items():
            nullable = "null" in schema.get("type", []) or {"type": "null"} in schema.get("anyOf", [])
            assert nullable == (prop not in source.get("required", [])), (name, prop)
    body = next(t for t in session.tools("openai", strict=True) if t["function"]["name"] == "post")
    assert "at most 500 characters" in body["function"]["parameters"]["properties"]["body"]["description"]


def strict_call(parameters: Dict[str, Any], given: Dict[str, Any]) -> Dict[str, Any]:
    """The arguments a strict model sends: every property, `null` where it has nothing."""
    return {name: given.get(name) for name in parameters["properties"]}


def test_a_call_that_follows_the_strict_schema_is_accepted(forum: parley.Forum, tokens: Dict[str, str]) -> None:
    alice, bob = forum.session(tokens["alice"]), forum.session(tokens["bob"])
    tools = {t["function"]["name"]: t["function"]["parameters"] for t in alice.tools("openai", strict=True)}
    asked = alice.dispatch("post", json.dumps(strict_call(tools["post"], {"kind": "ask", "body": "Which port?"})))
    assert asked["message"]["kind"] == "ask", asked
    thread = asked["thread"]["id"]
    answered = bob.dispatch(
        "post", strict_call(tools["post"], {"kind": "answer", "thread": thread, "body": "7878"})
    )
    assert answered["thread"]["state"] == "answered", answered
    inbox = alice.dispatch("get_inbox", strict_call(tools["get_inbox"], {}))
    assert [i["thread"]["id"] for i in inbox["items"]] == [thread]
    # The same arguments over MCP: the engine reads null as absent on every path.
    args = strict_call(tools["post"], {"kind": "note", "thread": thread, "body": "noted"})
    response = forum.mcp(
        tokens["bob"],
        {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "post", "arguments": args}},
    )
    assert response is not None
    assert response["result"].get("isError") is not True, response
    # null is absent, not a value: a required field sent as null is still missing.
    missing = alice.dispatch("post", {"kind": "ask", "body": None})
    assert missing["error"]["reason"] == "invalid_body"


def test_dispatch_errors_carry_reason_and_status(forum: parley.Forum, tokens: Dict[str, str]) -> None:
    session = forum.session(tokens["alice"])
    errors = [
        session.dispatch("no_such_tool", {}),
        session.dispatch("post", "{not json"),
        session.dispatch("get_thread", "[]"),
        session.dispatch("get_thread", {"thread": "th_404"}),
        session.dispatch("post", {"kind": "ask"}),
    ]
    for result in errors:
        assert isinstance(result["error"]["reason"], str), result
        assert isinstance(result["error"]["status"], int), result
        assert result["error"]["message"], result
    assert errors[0]["error"]["reason"] == "unknown_tool"
    assert errors[0]["error"]["status"] == 404


def test_pydantic_ai_test_model_calls_every_tool(forum: parley.Forum, tokens: Dict[str, str]) -> None:
    session = forum.session(tokens["alice"])
    session.post("ask", "Is there anything to read?")
    called: List[str] = []

    def runner(name: str) -> Any:
        def run(**arguments: Any) -> Dict[str, Any]:
            called.append(name)
            return session.dispatch(name, arguments)

        return run

    tools = [
        Tool.from_schema(runner(t["name"]), name=t["name"], description=t["description"], json_schema=t["inputSchema"])
        for t in session.tools()
    ]
    agent = Agent(TestModel(), tools=tools)
    # asyncio.run closes its loop; run_sync would leave one for the garbage collector.
    result = asyncio.run(agent.run("Use every tool once."))
    assert isinstance(result.output, str)
    assert sorted(set(called)) == sorted(parley.OPERATIONS), called


@pytest.mark.redb_only("only a served forum: `parley serve --stdio` opens its own redb file (--db)")
def test_pydantic_ai_test_model_calls_every_tool_over_mcp(parley_bin: Path, tmp_path: Path) -> None:
    # The same check through pydantic-ai's MCP toolset, against `parley serve --stdio`.
    from fastmcp.client import Client
    from fastmcp.client.transports import StdioTransport
    from pydantic_ai.mcp import MCPToolset

    db = tmp_path / "forum.redb"
    made = subprocess.run(
        [str(parley_bin), "--db", str(db), "token", "create", "alice"], capture_output=True, text=True, check=True
    )
    env = {"PARLEY_TOKEN": made.stdout.strip(), "RUST_LOG": "warn"}
    transport = StdioTransport(command=str(parley_bin), args=["--db", str(db), "serve", "--stdio"], env=env)
    # A refused call (TestModel's made-up ids) is a result the model reads, not a retry.
    toolset = MCPToolset(Client(transport), tool_error_behavior="failed")
    agent = Agent(TestModel(), toolsets=[toolset])

    async def run() -> str:
        async with agent:
            result = await agent.run("Use every tool once.")
        return result.output

    output = json.loads(asyncio.run(run()))
    assert sorted(output) == sorted(parley.OPERATIONS), output
    assert output["whoami"]["identity"] == "ainotes:alice"


@pytest.mark.redb_only("only a served forum: `parley serve --stdio` opens its own redb file (--db)")
def test_the_agents_sdk_in_strict_mode_posts_an_ask_over_mcp(parley_bin: Path, tmp_path: Path) -> None:
    # The OpenAI Agents SDK converts MCP tools to strict schemas (every field required);
    # a call that follows the converted schema, null for what it leaves out, is accepted.
    from agents import Agent as AgentsAgent
    from agents.mcp import MCPServerStdio, MCPUtil
    from agents.run_context import RunContextWrapper
    from agents.tool_context import ToolContext

    db = tmp_path / "forum.redb"
    made = subprocess.run(
        [str(parley_bin), "--db", str(db), "token", "create", "alice"], capture_output=True, text=True, check=True
    )
    params = {
        "command": str(parley_bin),
        "args": ["--db", str(db), "serve", "--stdio"],
        "env": {"PARLEY_TOKEN": made.stdout.strip(), "RUST_LOG": "warn"},
    }

    async def run() -> Any:
        async with MCPServerStdio(params=params) as server:  # type: ignore[arg-type]
            agent = AgentsAgent(name="asker", mcp_servers=[server])
            tools = await MCPUtil.get_function_tools(server, True, RunContextWrapper(context=None), agent)
            post = next(t for t in tools if t.name == "post")
            assert post.strict_json_schema is True  # type: ignore[union-attr]
            schema = post.params_json_schema  # type: ignore[union-attr]
            assert sorted(schema["required"]) == sorted(schema["properties"])
            args = json.dumps(strict_call(schema, {"kind": "ask", "body": "Which port?"}))
            context = ToolContext(context=None, tool_name="post", tool_call_id="call-1", tool_arguments=args)
            return await post.on_invoke_tool(context, args)  # type: ignore[union-attr]

    out = asyncio.run(run())
    result = json.loads(out["text"] if isinstance(out, dict) else str(out))
    assert result["message"]["kind"] == "ask", result
    assert result["thread"]["id"] == "th_1"
