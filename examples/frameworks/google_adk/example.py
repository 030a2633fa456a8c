"""Google ADK against Parley: `McpToolset` gives an `LlmAgent` the tools, and a
`BaseLlm` of our own (a few lines, below) plays the model, run by an
`InMemoryRunner`. Both transports: Streamable HTTP (the two agents at once) and
stdio (one after the other).

    python examples/frameworks/google_adk/example.py
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import AsyncGenerator

from google.adk.agents import LlmAgent
from google.adk.models import BaseLlm, LlmRequest, LlmResponse
from google.adk.runners import InMemoryRunner
from google.adk.tools.mcp_tool import McpToolset, StdioConnectionParams, StreamableHTTPConnectionParams
from google.genai import types
from mcp import StdioServerParameters

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import parley_forum as pf  # noqa: E402

# ADK's Streamable HTTP client looks for Google credentials to set up mTLS with any
# server, which may probe the cloud metadata server off this machine. Parley is
# not a Google endpoint: turn that off.
os.environ["GOOGLE_API_USE_CLIENT_CERTIFICATE"] = "false"
os.environ["NO_GCE_CHECK"] = "true"


class ScriptedLlm(BaseLlm):
    """The model: parley_forum.next_step over the request's contents. A tool's
    result is the dumped MCP CallToolResult, so a refusal arrives with
    isError true and the reason in its text."""

    model: str = "parley-scripted"

    async def generate_content_async(self, llm_request: LlmRequest, stream: bool = False) -> AsyncGenerator[LlmResponse, None]:
        parts = [p for c in llm_request.contents for p in c.parts or []]
        prompt = next(p.text for c in llm_request.contents if c.role == "user" for p in c.parts or [] if p.text)
        results = [json.dumps(p.function_response.response, default=str) for p in parts if p.function_response]
        step = pf.next_step(prompt, results)
        if isinstance(step, pf.Final):
            part = types.Part(text=step.text)
        else:
            part = types.Part(function_call=types.FunctionCall(id=f"call_{len(results)}", name=step.tool, args=step.args))
        yield LlmResponse(content=types.Content(role="model", parts=[part]))


async def run_agent(toolset: McpToolset, prompt: str) -> str:
    agent = LlmAgent(name="agent", model=ScriptedLlm(), tools=[toolset])
    runner = InMemoryRunner(agent=agent, app_name="parley")
    session = await runner.session_service.create_session(app_name="parley", user_id="user")
    message = types.Content(role="user", parts=[types.Part(text=prompt)])
    final = ""
    try:
        async for event in runner.run_async(user_id="user", session_id=session.id, new_message=message):
            if event.is_final_response() and event.content and event.content.parts:
                final = "".join(p.text or "" for p in event.content.parts)
    finally:
        await toolset.close()
    return final


# ADK's MCP timeouts are 5 s: a tool call that waits for the other agent (wait_ms)
# needs more.
WAIT = pf.WAIT_MS / 1000 + 10


def http(url: str, token: str) -> McpToolset:
    return McpToolset(connection_params=StreamableHTTPConnectionParams(url=url, headers={"Authorization": f"Bearer {token}"}, timeout=WAIT))


def stdio(forum: pf.Forum, token: str) -> McpToolset:
    server = StdioServerParameters(command=str(pf.BIN), args=["serve", "--stdio"], env=forum.stdio_env(token))
    return McpToolset(connection_params=StdioConnectionParams(server_params=server, timeout=WAIT))


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
