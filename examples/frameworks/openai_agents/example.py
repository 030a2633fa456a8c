"""The OpenAI Agents SDK against Parley: `MCPServerStreamableHttp` and
`MCPServerStdio` give the agent the tools, and a `Model` of our own (a few lines,
below) plays the model. Both transports: Streamable HTTP (the two agents at once)
and stdio (one after the other).

    python examples/frameworks/openai_agents/example.py
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any, AsyncIterator

from agents import Agent, Model, ModelResponse, Runner, Usage, set_tracing_disabled
from agents.mcp import MCPServer, MCPServerStdio, MCPServerStreamableHttp
from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage, ResponseOutputText

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import parley_forum as pf  # noqa: E402

# Offline: the SDK would otherwise export its traces to OpenAI.
set_tracing_disabled(True)


class ScriptedModel(Model):
    """The model: parley_forum.next_step over the run's input items."""

    async def get_response(self, system_instructions: Any, input: Any, *args: Any, **kwargs: Any) -> ModelResponse:
        items = [{"role": "user", "content": input}] if isinstance(input, str) else list(input)
        prompt = next(str(i["content"]) for i in items if i.get("role") == "user")
        results = [str(i["output"]) for i in items if i.get("type") == "function_call_output"]
        step = pf.next_step(prompt, results)
        if isinstance(step, pf.Final):
            text = ResponseOutputText(type="output_text", text=step.text, annotations=[])
            out: Any = ResponseOutputMessage(id="msg", type="message", role="assistant", status="completed", content=[text])
        else:
            out = ResponseFunctionToolCall(type="function_call", call_id=f"call_{len(results)}", name=step.tool, arguments=json.dumps(step.args))
        return ModelResponse(output=[out], usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        raise NotImplementedError("this example runs without streaming")


async def run_agent(server: MCPServer, prompt: str) -> str:
    async with server:
        agent = Agent(name="agent", model=ScriptedModel(), mcp_servers=[server])
        result = await Runner.run(agent, prompt, max_turns=20)
    return str(result.final_output)


# The SDK's HTTP timeout is 5 s and its session's read timeout unset: a tool call
# that waits for the other agent (wait_ms up to 30 s) needs more.
WAIT = pf.WAIT_MS / 1000 + 10


def http(url: str, token: str) -> MCPServer:
    params = {"url": url, "headers": {"Authorization": f"Bearer {token}"}, "timeout": WAIT}
    return MCPServerStreamableHttp(params, client_session_timeout_seconds=WAIT)  # type: ignore[arg-type]


def stdio(forum: pf.Forum, token: str) -> MCPServer:
    params = {"command": str(pf.BIN), "args": ["serve", "--stdio"], "env": forum.stdio_env(token)}
    return MCPServerStdio(params, client_session_timeout_seconds=WAIT)  # type: ignore[arg-type]


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
