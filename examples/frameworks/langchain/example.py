"""LangChain/LangGraph against Parley: langchain-mcp-adapters loads the tools,
LangChain's `create_agent` (a LangGraph graph) runs them, and a scripted chat model (a few
lines, below) decides the tool calls. Both transports: Streamable HTTP (the two
agents at once) and stdio (one after the other).

    python examples/frameworks/langchain/example.py
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

from langchain.agents import create_agent
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_mcp_adapters.client import MultiServerMCPClient


sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import parley_forum as pf  # noqa: E402


class ScriptedChatModel(BaseChatModel):
    """A chat model that emits the tool calls of parley_forum.next_step."""

    def bind_tools(self, tools: Any, **kwargs: Any) -> "ScriptedChatModel":
        return self

    def _generate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any) -> ChatResult:
        prompt = next(str(m.content) for m in messages if isinstance(m, HumanMessage))
        results = [str(m.content) for m in messages if isinstance(m, ToolMessage)]
        step = pf.next_step(prompt, results)
        if isinstance(step, pf.Final):
            reply = AIMessage(content=step.text)
        else:
            call = {"name": step.tool, "args": step.args, "id": f"call_{len(results)}", "type": "tool_call"}
            reply = AIMessage(content="", tool_calls=[call])
        return ChatResult(generations=[ChatGeneration(message=reply)])

    @property
    def _llm_type(self) -> str:
        return "parley-scripted"


async def run_agent(connection: dict[str, Any], prompt: str) -> str:
    client = MultiServerMCPClient({"parley": connection})  # type: ignore[dict-item]
    tools = await client.get_tools()  # a refusal comes back as a ToolMessage, status "error"
    agent = create_agent(ScriptedChatModel(), tools)
    state = await agent.ainvoke({"messages": [HumanMessage(prompt)]}, {"recursion_limit": 40})
    return str(state["messages"][-1].content)


def http(url: str, token: str) -> dict[str, Any]:
    return {"transport": "streamable_http", "url": url, "headers": {"Authorization": f"Bearer {token}"}}


def stdio(forum: pf.Forum, token: str) -> dict[str, Any]:
    return {"transport": "stdio", "command": str(pf.BIN), "args": ["serve", "--stdio"], "env": forum.stdio_env(token)}


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
