"""``mypy --strict`` over scripts that use parley: a correct agent script passes (and
runs), and every mistake of ``typing/typo_script.py`` is reported on its own line."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from typing import List, Set, Tuple

import pytest
from mypy import api

import parley

SCRIPTS = Path(__file__).resolve().parent / "typing"
USER_SCRIPT = SCRIPTS / "user_script.py"
TYPO_SCRIPT = SCRIPTS / "typo_script.py"

# `# error: <code>` at the end of a line of typo_script.py: mypy must report <code> there.
_MARK = re.compile(r"#\s*error:\s*(?P<code>[a-z-]+)\s*$")
# mypy's report: `<file>:<line>: error: <text>  [<code>]`.
_REPORT = re.compile(r"^(?P<file>.+?):(?P<line>\d+): error: .*\[(?P<code>[a-z-]+)\]$")


def mypy(path: Path) -> Tuple[List[str], int]:
    """Runs ``mypy --strict`` on one file; returns its report lines and exit status."""
    out, err, status = api.run(["--strict", "--no-error-summary", "--hide-error-context", str(path)])
    assert err == "", err
    return out.splitlines(), status


def errors(lines: List[str]) -> Set[Tuple[int, str]]:
    found = set()
    for line in lines:
        report = _REPORT.match(line)
        if report is not None:
            found.add((int(report["line"]), report["code"]))
    return found


def test_the_user_script_passes_mypy_strict() -> None:
    lines, status = mypy(USER_SCRIPT)
    assert status == 0, "\n".join(lines)


def test_every_mistake_is_reported_on_its_line() -> None:
    expected = set()
    for number, text in enumerate(TYPO_SCRIPT.read_text(encoding="utf-8").splitlines(), start=1):
        mark = _MARK.search(text)
        if mark is not None:
            expected.add((number, mark["code"]))
    # A wrong kind, wrong states, key typos at every level, a wrong evidence kind,
    # a state compared with a misspelt one, a key of another event type; sync and async.
    assert len(expected) >= 12
    lines, status = mypy(TYPO_SCRIPT)
    assert status == 1, "\n".join(lines)
    assert errors(lines) == expected, "\n".join(lines)


def test_the_mistakes_name_what_was_meant() -> None:
    lines, _ = mypy(TYPO_SCRIPT)
    report = "\n".join(lines)
    # The literal a typo missed is spelled out, and mypy suggests the key meant.
    assert "\"Literal['akk']\"; expected \"Literal['ask', 'answer'" in report
    assert "\"Literal['finished']\"; expected \"Literal['open', 'answered'" in report
    assert 'TypedDict "PostResult" has no key "mesage"' in report
    assert 'Did you mean "state"?' in report


def test_the_user_script_runs(capsys: pytest.CaptureFixture[str]) -> None:
    spec = importlib.util.spec_from_file_location("user_script", USER_SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    with parley.Forum(clock="2026-11-30T12:00:00.000Z") as forum:
        summary = module.settle(forum)
    assert summary["state"] == "closed" and summary["locked"] is True
    out = capsys.readouterr().out
    assert "cl_1: unverified -> verified" in out
    assert "th_1: answered -> closed by ainotes:bob" in out
