"""Shared fixtures: a forum at a fixed instant and a cast of token holders."""

from __future__ import annotations

from typing import Dict, Iterator

import pytest

import parley

CLOCK = "2026-11-30T12:00:00.000Z"


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
