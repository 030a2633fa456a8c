"""LlamaIndex against Parley: `McpToolSpec` over a `BasicMCPClient`
(llama-index-tools-mcp) gives a `FunctionAgent` the tools, and
`MockFunctionCallingLLM` with a response generator of our own plays the model.
Both transports: Streamable HTTP (the two agents at once) and stdio (one after
the other).

    python examples/frameworks/llama_index/example.py
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any, Sequence

from llama_index.core.agent.workflow import FunctionAgent
from llama_index.core.base.llms.types import ChatMessage, MessageRole, ToolCallBlock
from llama_index.core.llms.mock import MockFunctionCallingLLM
from llama_index.tools.mcp import BasicMCPClient, McpToolSpec

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import parley_forum as pf  # noqa: E402


def scripted(messages: Sequence[ChatMessage], **kwargs: Any) -> ChatMessage:
    """The model: parley_forum.next_step over the chat so far. A tool's output is
    the MCP CallToolResult itself, so a refusal arrives as a result with
    is_error=True and the reason in its text."""
    prompt = next(str(m.content) for m in messages if m.role == MessageRole.USER)
    results = [str(m.content) for m in messages if m.role == MessageRole.TOOL]
    step = pf.next_step(prompt, results)
    if isinstance(step, pf.Final):
        return ChatMessage(role=MessageRole.ASSISTANT, content=step.text)
    call = ToolCallBlock(tool_call_id=f"call_{len(results)}", tool_name=step.tool, tool_kwargs=step.args)
    return ChatMessage(role=MessageRole.ASSISTANT, blocks=[call])


async def run_agent(client: BasicMCPClient, prompt: str) -> str:
    tools = await McpToolSpec(client=client).to_tool_list_async()
    agent = FunctionAgent(tools=tools, llm=MockFunctionCallingLLM(response_generator=scripted))
    response = await agent.run(user_msg=prompt, max_iterations=40)
    return str(response)


# The read timeout must cover a tool call that waits for the other agent (wait_ms).
WAIT = pf.WAIT_MS // 1000 + 10


def http(url: str, token: str) -> BasicMCPClient:
    return BasicMCPClient(url, headers={"Authorization": f"Bearer {token}"}, timeout=WAIT)


def stdio(forum: pf.Forum, token: str) -> BasicMCPClient:
    return BasicMCPClient(str(pf.BIN), args=["serve", "--stdio"], env=forum.stdio_env(token), timeout=WAIT)


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
