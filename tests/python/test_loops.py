"""The loop benchmark (benches/loops.py) in its quick form: the loops of SPEC §15 stop
within progress_max_messages + 1 messages with the guards profile on, the
legitimate conversations meet no refusal, and the profile switched off stops none.

The benchmark is imported, so on the PostgreSQL pass its in-memory forums are
PostgreSQL forums (conftest.py): the guards run in the engine, on both backends.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any, Dict

import pytest

BENCH = Path(__file__).resolve().parents[2] / "benches" / "loops.py"


def _load() -> ModuleType:
    sys.path.insert(0, str(BENCH.parent))
    spec = importlib.util.spec_from_file_location("loops", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


loops = _load()
NEW_REASONS = {"echoed_body", "no_progress"}


@pytest.fixture
def report() -> Dict[str, Any]:
    result: Dict[str, Any] = loops.run(quick=True)
    return result


def test_with_the_profile_off_no_loop_is_stopped_by_it_and_no_conversation_is_refused(report: Dict[str, Any]) -> None:
    for row in report["loops"]:
        off = row["off"]
        # Off, a loop runs into the depth or size caps of §9, or on to the cap.
        assert off["capped"] or off["refusal"]["reason"] == "limit_exceeded", row
        assert off["messages"] > 25, row
    for row in report["legitimate"]:
        assert row["off"]["refusals"] == 0, row


def test_with_the_profile_on_every_loop_stops_within_the_target_and_no_conversation_is_refused(
    report: Dict[str, Any],
) -> None:
    if not report["guards"]:
        pytest.skip("this engine has no guards profile (SPEC §15)")
    target = report["progress_max_messages"] + 1
    assert target == 25, "the defaults: progress_max_messages 24"
    for row in report["loops"]:
        on = row["on"]
        assert on["stopped"] and on["messages"] <= target, row
        assert on["refusal"]["reason"] in NEW_REASONS, row
    for row in report["legitimate"]:
        assert row["on"]["refusals"] == 0, row
    assert report["missed"] == []


def test_a_script_that_speaks_out_of_turn_is_a_script_error() -> None:
    side = loops.Side(False)
    try:

        def out_of_turn(p: Any) -> None:
            root = p.say("alice", "ask", "Who reviews the release notes?", to="bob")
            p.say("carol", "answer", "I can.", parent=root["id"], due=True)

        with pytest.raises(loops.ScriptError, match="out of turn"):
            side.play(out_of_turn, 100)
    finally:
        side.close()


def test_a_refused_opening_is_a_script_error() -> None:
    side = loops.Side(False)
    try:

        def bad_opening(p: Any) -> None:
            p.setup("alice", "note", "A note cannot open a thread.")

        with pytest.raises(loops.ScriptError, match="opening note by alice was refused: invalid_body"):
            side.play(bad_opening, 100)
    finally:
        side.close()


@pytest.mark.redb_only("the command runs in a process of its own, on in-memory redb forums")
def test_the_command_prints_the_table_and_fails_on_a_missed_target() -> None:
    done = subprocess.run([sys.executable, "-W", "error", str(BENCH), "--quick"], capture_output=True, text=True, timeout=120)
    assert "ack ping-pong" in done.stdout and "long thread" in done.stdout, done.stdout + done.stderr
    assert done.returncode == (0 if loops.guards_available() else 1), done.stdout + done.stderr
    # A cap below the target: no loop can be stopped in time, so the targets are missed.
    capped = subprocess.run(
        [sys.executable, "-W", "error", str(BENCH), "--quick", "--json", "--cap", "3"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert capped.returncode == 1, capped.stdout + capped.stderr
    report = json.loads(capped.stdout)
    assert report["missed"], report
    assert all(row["off"]["capped"] and row["off"]["messages"] == 3 for row in report["loops"])
