"""The served forum the remote tests run against: ``parley serve --http`` on a fresh
redb file, restartable on its port, with tokens issued by ``parley token create``, and a
cast of sessions over ``parley.connect``.

The binary is ``PARLEY_BIN``, else ``target/debug/parley`` built here by
``cargo build -p parley-cli`` (the ``parley_bin`` fixture of conftest.py).
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import threading
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence

import pytest

import parley


REPO = Path(__file__).resolve().parents[2]
CLOCK = "2026-11-30T12:00:00.000Z"
SETTINGS: Dict[str, Any] = {"clock": CLOCK, "limits": {"writes_per_minute": 0}}
# A bound on anything that should take a moment, so a hang fails instead of stalling.
BOUND_S = 30.0
# The postgres pass (conftest.py) runs only the tests that also open a forum in this
# process: the others talk to nothing but a server on its own redb file.
SERVED_ONLY = pytest.mark.redb_only("only a served forum: `parley serve` opens its own redb file (--db)")


def clean_env() -> Dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("PARLEY_")}


class Server:
    """``parley --db DB --settings … serve --http 127.0.0.1:PORT``, restartable on the
    port it first bound, with its tokens issued by ``parley token create``."""

    def __init__(self, binary: Path, db: Path, settings: Dict[str, Any], extra: Sequence[str] = ()) -> None:
        self.binary, self.db, self.settings, self.extra = binary, db, settings, list(extra)
        self.port = 0
        self.proc: Optional["subprocess.Popen[str]"] = None
        self.log: List[str] = []
        self._reader: Optional[threading.Thread] = None

    @property
    def url(self) -> str:
        assert self.port, "not started"
        return f"http://127.0.0.1:{self.port}"

    def run(self, *args: str) -> "subprocess.CompletedProcess[str]":
        return subprocess.run(
            [str(self.binary), "--db", str(self.db), "--settings", json.dumps(self.settings), *args],
            capture_output=True,
            text=True,
            env=clean_env(),
            timeout=BOUND_S,
        )

    def cli(self, *args: str) -> str:
        done = self.run(*args)
        assert done.returncode == 0, f"parley {' '.join(args)}: {done.stderr}"
        return done.stdout.strip()

    def token(
        self, handle: str, kind: str = "llm", rights: Sequence[str] = ("read", "write"), label: Optional[str] = None
    ) -> str:
        extra = ["--human"] if kind == "human" else ["--rights", ",".join(rights)]
        if label is not None:
            extra += ["--label", label]
        return self.cli("token", "create", handle, *extra)

    def start(self) -> str:
        assert self.proc is None, "already running"
        cmd = [str(self.binary), "--db", str(self.db), "--settings", json.dumps(self.settings)]
        cmd += ["serve", "--http", f"127.0.0.1:{self.port}", *self.extra]
        proc = subprocess.Popen(
            cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=clean_env()
        )
        lines: "queue.Queue[Optional[str]]" = queue.Queue()

        def read() -> None:
            assert proc.stderr is not None
            for line in proc.stderr:
                self.log.append(line.rstrip("\n"))
                lines.put(line)
            lines.put(None)

        self.proc, self._reader = proc, threading.Thread(target=read, daemon=True)
        self._reader.start()
        deadline = time.monotonic() + BOUND_S
        while True:
            try:
                line = lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                line = None
            if line is None:
                self.kill()
                raise AssertionError("the server did not report its address:\n" + "\n".join(self.log))
            if "listening on http://" in line:
                address = line.split("listening on http://", 1)[1].split()[0]
                self.port = int(address.rsplit(":", 1)[1])
                return self.url

    def _reap(self) -> None:
        assert self.proc is not None
        self.proc.wait(timeout=BOUND_S)
        if self._reader is not None:
            self._reader.join(timeout=BOUND_S)
        if self.proc.stderr is not None:
            self.proc.stderr.close()
        self.proc = None

    def kill(self) -> None:
        """SIGKILL: the server dies at once, connections and waits cut."""
        if self.proc is not None:
            self.proc.kill()
            self._reap()

    def stop(self) -> None:
        """SIGTERM: a clean shutdown."""
        if self.proc is not None:
            self.proc.terminate()
            self._reap()


class Cast:
    """A served forum with alice, bob and a reader, and their sessions (closed at the end)."""

    def __init__(self, server: Server) -> None:
        self.server = server
        self.tokens = {
            "alice": server.token("alice", label="Alice"),
            "bob": server.token("bob"),
            "reader": server.token("reader", rights=["read"]),
        }
        server.start()
        self._sessions: List[parley.Session] = []

    def session(self, who: str, **options: Any) -> parley.Session:
        session = parley.connect(self.server.url, self.tokens.get(who, who), **options)
        self._sessions.append(session)
        return session

    def close(self) -> None:
        for session in self._sessions:
            session.forum.close()
