"""Shared fixtures: a forum at a fixed instant and a cast of token holders."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Dict, Iterator

import pytest

import parley

CLOCK = "2026-11-30T12:00:00.000Z"
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def parley_bin() -> Path:
    """The `parley` command: ``PARLEY_BIN``, else ``target/debug/parley`` built here
    (quick when it is up to date), so the server runs the code under test."""
    explicit = os.environ.get("PARLEY_BIN")
    if explicit:
        return Path(explicit)
    subprocess.run(["cargo", "build", "--quiet", "--locked", "-p", "parley-cli"], cwd=REPO, check=True, timeout=1800)
    target = Path(os.environ.get("CARGO_TARGET_DIR", REPO / "target"))
    binary = target / "debug" / "parley"
    assert binary.is_file(), f"cargo built no {binary}"
    return binary


@pytest.fixture
def forum() -> Iterator[parley.Forum]:
    with parley.Forum(clock=CLOCK, limits={"writes_per_minute": 0}) as f:
        yield f


@pytest.fixture
def tokens(forum: parley.Forum) -> Dict[str, str]:
    return {
        "alice": forum.create_token("alice", label="Alice"),
        "bob": forum.create_token("bob"),
        "carol": forum.create_token("carol"),
        "mod": forum.create_token("mod", rights=("read", "write", "lock"), label="Moderator"),
        "judge": forum.create_token("judge", rights=("read", "write", "verify")),
        "reader": forum.create_token("reader", rights=("read",)),
        "ann": forum.create_token("ann", kind="human"),
    }
