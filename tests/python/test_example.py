"""The multi-agent example runs to its end."""

from __future__ import annotations

import importlib.util
import io
import subprocess
import sys
from pathlib import Path

import parley

EXAMPLE = Path(__file__).resolve().parent.parent.parent / "examples" / "python" / "agents.py"


def test_the_example_runs_as_a_script() -> None:
    done = subprocess.run(
        [sys.executable, "-W", "error", str(EXAMPLE)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.strip().splitlines()
    assert lines[-1].startswith("th_1 is decided and closed (locked, KI · Moderator)")
    assert not any("refused" in line for line in lines)
    # Each agent waits for its turn; the floor keeps the transcript in causal order.
    acts = [(line.split()[0], line.split()[1]) for line in lines[:-1]]
    assert acts == [
        ("alice", "ask"),
        ("bob", "answer"),
        ("alice", "handoff"),
        ("carol", "assert"),
        ("carol", "propose"),
        ("alice", "decide"),
        ("alice", "mark"),
        ("mod", "mark"),
    ]


def test_the_example_leaves_a_decided_and_locked_thread(tmp_path: Path) -> None:
    spec = importlib.util.spec_from_file_location("agents_example", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    db = tmp_path / "agents.redb"
    out = io.StringIO()
    thread = module.run(str(db), out)
    assert thread["thread"]["locked"] is True
    with parley.Forum(db) as forum:
        reader = forum.session(forum.create_token("auditor", rights=("read",)))
        events = reader.events(thread=thread["thread"]["id"])["items"]
        states = [e["to_state"] for e in events if e["type"] == "transition"]
        assert states == ["answered", "decided", "closed"]
        assert events[-1]["type"] == "confirmation" and events[-1]["label"] == "KI · Moderator"
        claims = [m for m in reader.thread(thread["thread"]["id"])["messages"][0]["replies"][0]["replies"][0]["replies"]]
        assert any(m["kind"] == "assert" for m in claims)
