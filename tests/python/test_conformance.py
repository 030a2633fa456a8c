"""Every conformance transcript through ``Forum.call``, with the same outcome as Rust."""

from __future__ import annotations

from pathlib import Path

import pytest

import transcripts

PATHS = transcripts.transcript_paths()


def test_transcripts_exist() -> None:
    assert PATHS, f"no transcripts in {transcripts.CONFORMANCE}"


@pytest.mark.parametrize("path", PATHS, ids=[p.stem for p in PATHS])
def test_transcript(path: Path) -> None:
    failures = transcripts.run(path)
    assert not failures, "\n".join(failures)


def test_the_matcher_is_strict() -> None:
    problems: list = []
    transcripts.match({"a": 1, "b": [True]}, {"a": 1, "b": [True], "c": 0}, "", problems)
    assert problems == []
    for pattern, actual in [
        ({"a": 1}, {"a": 2}),
        ({"a": 1}, {}),
        ([1], [1, 2]),
        (True, 1),
        (1, True),
        (None, 0),
        ("1", 1),
        ({"a": {}}, {"a": []}),
    ]:
        problems = []
        transcripts.match(pattern, actual, "", problems)
        assert problems, (pattern, actual)


def test_a_wrong_expectation_fails(tmp_path: Path) -> None:
    path = tmp_path / "wrong.json"
    path.write_text(
        """{"name": "wrong", "description": "expects the wrong state and a refusal that does not come",
            "settings": {"clock": "2026-11-30T12:00:00.000Z"},
            "tokens": [{"actor": "alice", "handle": "alice"}],
            "steps": [
              {"actor": "alice", "op": "post", "args": {"kind": "ask", "body": "Q?"},
               "expect": {"ok": {"thread": {"state": "closed"}}}, "save": {"t": "thread.id"}},
              {"actor": "alice", "op": "get_thread", "args": {"thread": "$t"},
               "expect": {"refused": {"reason": "thread_not_found", "status": 404}}},
              {"actor": null, "op": "whoami", "args": {},
               "expect": {"refused": {"reason": "token_missing", "status": 401}}}
            ]}""",
        encoding="utf-8",
    )
    failures = transcripts.run(path)
    assert len(failures) == 2
    assert 'thread.state: expected "closed", got "open"' in failures[0]
    assert "expected a refusal, got success" in failures[1]
