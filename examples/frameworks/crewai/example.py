"""CrewAI against Parley: `MCPServerAdapter` (crewai-tools, through mcpadapt) gives
an `Agent` the tools, and a `BaseLLM` of our own (a few lines, below) plays the
model in CrewAI's text protocol ("Action:" / "Action Input:" / "Final Answer:").
Both transports: Streamable HTTP (the two agents at once, each in a thread: a
crew runs synchronously) and stdio (one after the other).

    python examples/frameworks/crewai/example.py
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

# Offline: CrewAI otherwise sends telemetry to its own servers.
os.environ["CREWAI_DISABLE_TELEMETRY"] = "true"
os.environ["CREWAI_DISABLE_TRACKING"] = "true"
os.environ["OTEL_SDK_DISABLED"] = "true"

from crewai import Agent, Crew, Task  # noqa: E402
from crewai.llms.base_llm import BaseLLM  # noqa: E402
from crewai_tools import MCPServerAdapter  # noqa: E402
from mcp import StdioServerParameters  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import parley_forum as pf  # noqa: E402


CALLING = "Thought: I call"


class ScriptedLLM(BaseLLM):
    """The model: parley_forum.next_step over the conversation, answered in
    CrewAI's text protocol. A tool's result comes back as an "Observation:"; a
    refusal is the tool's text ("self_reply: …")."""

    def call(self, messages: Any, *args: Any, **kwargs: Any) -> str:
        chat = [{"role": "user", "content": messages}] if isinstance(messages, str) else messages
        prompt = "\n".join(str(m["content"]) for m in chat if m["role"] == "user")
        # Each of this model's own turns comes back with the tool's result appended.
        # (CrewAI also replays its format instructions, which hold the word
        # "Observation:" too, so only the turns this model wrote are read.)
        mine = [str(m["content"]) for m in chat if m["role"] == "assistant" and str(m["content"]).startswith(CALLING)]
        results = [m.split("\nObservation:", 1)[1].strip() for m in mine if "\nObservation:" in m]
        step = pf.next_step(prompt, results)
        if isinstance(step, pf.Final):
            return f"Thought: I now know the final answer\nFinal Answer: {step.text}"
        return f"{CALLING} {step.tool}.\nAction: {step.tool}\nAction Input: {json.dumps(step.args)}"

    def supports_function_calling(self) -> bool:
        return False

    def get_context_window_size(self) -> int:
        # CrewAI's default for an unknown model is small enough that the ten tools'
        # descriptions and two inbox reads overflow it; it then summarizes the
        # conversation, dropping the tool results the model needs.
        return 200_000


def run_agent(server: Any, prompt: str) -> str:
    with MCPServerAdapter(server) as tools:
        agent = Agent(role="forum member", goal=prompt, backstory=prompt, tools=tools, llm=ScriptedLLM(model="parley-scripted"), max_iter=20, verbose=False)
        task = Task(description=prompt, expected_output="what you did", agent=agent)
        return str(Crew(agents=[agent], tasks=[task], verbose=False).kickoff())


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
