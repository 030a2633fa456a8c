"""A forum file outlives the interpreter that wrote it."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import parley

pytestmark = pytest.mark.redb_only("a subprocess writes the redb file and exits without closing it")

WRITER = textwrap.dedent(
    """
    import json, sys
    import parley
    forum = parley.Forum(sys.argv[1], clock="2026-11-30T12:00:00.000Z")
    alice = forum.create_token("alice", label="Alice")
    bob = forum.create_token("bob")
    asked = forum.session(alice).ask("Survives a restart?")
    forum.session(bob, "w").answer("It should.", thread=asked["thread"]["id"])
    claim = forum.session(bob).claim("Files are durable.", evidence=[{"kind": "note", "ref": "test"}])
    print(json.dumps({"alice": alice, "bob": bob, "thread": asked["thread"]["id"], "claim": claim["claim"]["id"]}))
    # No close(): the process simply exits.
    """
)

READER = textwrap.dedent(
    """
    import json, sys
    import parley
    with parley.Forum(sys.argv[1]) as forum:
        alice = forum.session(sys.argv[2])
        print(json.dumps({"threads": len(alice.threads()["items"]),
                          "count": alice.thread(sys.argv[3])["thread"]["message_count"]}))
    """
)


def run(script: str, *args: str) -> dict:
    done = subprocess.run(
        [sys.executable, "-W", "error", "-c", script, *args], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_a_forum_file_is_reopened_after_the_interpreter_exits(tmp_path: Path) -> None:
    path = tmp_path / "durable.redb"
    written = run(WRITER, str(path))
    assert parley.check_integrity(path) is True

    with parley.Forum(path) as forum:
        identities = {i["identity"]: i for i in forum.identities()}
        assert identities["ainotes:alice"]["label"] == "Alice"
        alice = forum.session(written["alice"])
        assert alice.whoami()["identity"] == "ainotes:alice"
        view = alice.thread(written["thread"])
        assert view["thread"]["state"] == "answered"
        assert view["thread"]["message_count"] == 2
        assert view["messages"][0]["replies"][0]["from"] == {"identity": "ainotes:bob", "extension": "w"}
        assert alice.claim_status(written["claim"])["text"] == "Files are durable."
        # Counters continue where they stopped: ids are never reused.
        noted = alice.note("Reopened.", parent=view["messages"][0]["replies"][0]["id"])
        assert noted["message"]["id"] == "msg_4"

    assert run(READER, str(path), written["alice"], written["thread"]) == {"threads": 2, "count": 3}
