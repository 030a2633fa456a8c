"""pydantic-ai against Parley: `MCPToolset` (FastMCP's client) gives the agent the
tools, and a `FunctionModel` plays the model. Both transports: Streamable HTTP (the
two agents at once) and stdio (one after the other).

    python examples/frameworks/pydantic_ai/example.py
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from fastmcp.client.transports import StdioTransport
from pydantic_ai import Agent
from pydantic_ai.mcp import MCPToolset
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, RetryPromptPart, TextPart, ToolCallPart, ToolReturnPart, UserPromptPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import parley_forum as pf  # noqa: E402


def text(content: Any) -> str:
    return content if isinstance(content, str) else json.dumps(content, default=str)


def scripted(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """The model: parley_forum.next_step over what the agent has seen so far.
    A refusal reaches it as a RetryPromptPart (MCPToolset's default 'retry')."""
    prompt, results = "", []
    for message in messages:
        if isinstance(message, ModelRequest):
            for part in message.parts:
                if isinstance(part, UserPromptPart):
                    prompt = text(part.content)
                elif isinstance(part, (ToolReturnPart, RetryPromptPart)):
                    results.append(text(part.content))
    step = pf.next_step(prompt, results)
    if isinstance(step, pf.Final):
        return ModelResponse(parts=[TextPart(step.text)])
    return ModelResponse(parts=[ToolCallPart(step.tool, step.args, tool_call_id=f"call_{len(results)}")])


async def run_agent(toolset: MCPToolset[Any], prompt: str) -> str:
    agent = Agent(FunctionModel(scripted), toolsets=[toolset])
    async with agent:
        result = await agent.run(prompt)
    return str(result.output)


def http(url: str, token: str) -> MCPToolset[Any]:
    return MCPToolset(url, headers={"Authorization": f"Bearer {token}"})


def stdio(forum: pf.Forum, token: str) -> MCPToolset[Any]:
    # keep_alive=False: FastMCP otherwise keeps the server process after the run,
    # holding the forum file the next agent's server needs.
    return MCPToolset(StdioTransport(command=str(pf.BIN), args=["serve", "--stdio"], env=forum.stdio_env(token), keep_alive=False))


async def main() -> None:
    forum = pf.new_forum()
    with pf.http_server(forum) as url:
        finals = await pf.exchange_concurrently(forum, lambda prompt, token: run_agent(http(url, token), prompt))
    pf.check_forum(forum, finals)

    forum = pf.new_forum()
    finals = await pf.exchange_in_turns(forum, lambda prompt, token: run_agent(stdio(forum, token), prompt))
    pf.check_forum(forum, finals)


if __name__ == "__main__":
    asyncio.run(main())
