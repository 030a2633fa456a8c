"""AutoGen against Parley: `McpWorkbench` gives an `AssistantAgent` the tools, and a
`ReplayChatCompletionClient` plays the model, its next reply chosen from the
conversation so far (a few lines, below). Both transports: Streamable HTTP (the two
agents at once) and stdio (one after the other). autogen-ext 0.7.5 needs mcp 1.x.

    python examples/frameworks/autogen/example.py
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any, Sequence

from autogen_agentchat.agents import AssistantAgent
from autogen_core import FunctionCall
from autogen_core.models import CreateResult, FunctionExecutionResultMessage, LLMMessage, ModelFamily, ModelInfo, RequestUsage, UserMessage
from autogen_ext.models.replay import ReplayChatCompletionClient
from autogen_ext.tools.mcp import McpServerParams, McpWorkbench, StdioServerParams, StreamableHttpServerParams

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import parley_forum as pf  # noqa: E402


class ScriptedReplayClient(ReplayChatCompletionClient):
    """Replays, one reply at a time, what parley_forum.next_step says after the
    messages so far (a fixed list could not know the thread id). A refusal reaches
    it as a FunctionExecutionResult with is_error=True."""

    def __init__(self) -> None:
        info = ModelInfo(vision=False, function_calling=True, json_output=False, family=ModelFamily.UNKNOWN, structured_output=False)
        super().__init__([], model_info=info)

    async def create(self, messages: Sequence[LLMMessage], **kwargs: Any) -> CreateResult:
        prompt = next(str(m.content) for m in messages if isinstance(m, UserMessage))
        results = [str(r.content) for m in messages if isinstance(m, FunctionExecutionResultMessage) for r in m.content]
        step = pf.next_step(prompt, results)
        if isinstance(step, pf.Final):
            self.chat_completions.append(step.text)
        else:
            call = FunctionCall(id=f"call_{len(results)}", name=step.tool, arguments=json.dumps(step.args))
            usage = RequestUsage(prompt_tokens=0, completion_tokens=0)
            self.chat_completions.append(CreateResult(finish_reason="function_calls", content=[call], usage=usage, cached=False))
        return await super().create(messages, **kwargs)


async def run_agent(params: McpServerParams, prompt: str) -> str:
    async with McpWorkbench(params) as workbench:
        agent = AssistantAgent("agent", model_client=ScriptedReplayClient(), workbench=workbench, max_tool_iterations=20)
        result = await agent.run(task=prompt)
    return str(result.messages[-1].content)


# The HTTP timeout must cover a tool call that waits for the other agent (wait_ms).
WAIT = pf.WAIT_MS / 1000 + 10


def http(url: str, token: str) -> McpServerParams:
    return StreamableHttpServerParams(url=url, headers={"Authorization": f"Bearer {token}"}, timeout=WAIT)


def stdio(forum: pf.Forum, token: str) -> McpServerParams:
    return StdioServerParams(command=str(pf.BIN), args=["serve", "--stdio"], env=forum.stdio_env(token), read_timeout_seconds=WAIT)


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
