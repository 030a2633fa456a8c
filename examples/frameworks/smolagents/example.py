"""smolagents against Parley: `MCPClient` (through mcpadapt) gives a
`ToolCallingAgent` the tools, and a `Model` of our own (a few lines, below) plays
the model. Both transports: Streamable HTTP (the two agents at once, each in a
thread: smolagents runs synchronously) and stdio (one after the other).

    python examples/frameworks/smolagents/example.py
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from mcp import StdioServerParameters
from smolagents import MCPClient, Model, ToolCallingAgent
from smolagents.models import ChatMessage, ChatMessageToolCall, ChatMessageToolCallFunction, MessageRole

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import parley_forum as pf  # noqa: E402


def text(message: ChatMessage) -> str:
    content = message.content
    return content if isinstance(content, str) else " ".join(str(c.get("text", "")) for c in content or [])


class ScriptedModel(Model):
    """The model: parley_forum.next_step over the agent's memory. smolagents ends a
    run with its `final_answer` tool. mcpadapt hands a refusal over as the tool's
    text ("self_reply: …"), which the agent shows the model as an observation."""

    def generate(self, messages: list[ChatMessage], *args: Any, **kwargs: Any) -> ChatMessage:
        prompt = next(text(m) for m in messages if m.role == MessageRole.USER)
        results = [text(m) for m in messages if m.role == MessageRole.TOOL_RESPONSE]
        step = pf.next_step(prompt, results)
        name, args = ("final_answer", {"answer": step.text}) if isinstance(step, pf.Final) else (step.tool, step.args)
        call = ChatMessageToolCall(id=f"call_{len(results)}", type="function", function=ChatMessageToolCallFunction(name=name, arguments=args))
        return ChatMessage(role=MessageRole.ASSISTANT, content="", tool_calls=[call])


def optional_arguments(tools: list[Any]) -> list[Any]:
    """mcpadapt drops each tool's `required` list, and smolagents then refuses a call
    that leaves out any argument ("Argument extension is required"). Marking every
    argument nullable lets the model leave out the optional ones; the server still
    refuses a call without a required one, as a result the model reads."""
    for tool in tools:
        for spec in tool.inputs.values():
            spec["nullable"] = True
    return tools


def run_agent(server: Any, prompt: str) -> str:
    with MCPClient(server, structured_output=False) as tools:
        tools = optional_arguments(tools)
        agent = ToolCallingAgent(tools=tools, model=ScriptedModel(), max_steps=20, verbosity_level=0)
        return str(agent.run(prompt))


def http(url: str, token: str) -> dict[str, Any]:
    return {"url": url, "transport": "streamable-http", "headers": {"Authorization": f"Bearer {token}"}}


def stdio(forum: pf.Forum, token: str) -> StdioServerParameters:
    return StdioServerParameters(command=str(pf.BIN), args=["serve", "--stdio"], env=forum.stdio_env(token))


def main() -> None:
    forum = pf.new_forum()
    with pf.http_server(forum) as url:
        finals = pf.exchange_concurrently_sync(forum, lambda prompt, token: run_agent(http(url, token), prompt))
    pf.check_forum(forum, finals)

    forum = pf.new_forum()
    finals = pf.exchange_in_turns_sync(forum, lambda prompt, token: run_agent(stdio(forum, token), prompt))
    pf.check_forum(forum, finals)


if __name__ == "__main__":
    main()
