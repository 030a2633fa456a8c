"""Shared fixtures: a forum at a fixed instant and a cast of token holders, and the
backend the suite runs on.

``PARLEY_TEST_BACKEND`` picks the backend: ``redb`` (the default) or ``postgres``,
which needs ``PARLEY_TEST_PG`` (the server of ``tests/pg/server.sh``). On the
postgres pass every forum this process opens in memory (``path=None``) or on a file
under pytest's temporary directory is a fresh forum on that server instead: each
test's in-memory forums get names of their own, and each of its files one name, so a
file reopened within a test is the same forum again. Other paths and every
subprocess (the ``parley`` command, scripts) keep their redb files. A test about the
file itself is marked ``@pytest.mark.redb_only("why")`` and skipped on that pass.
"""

from __future__ import annotations

import inspect
import itertools
import os
import subprocess
import time
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Union

import pytest

import parley
import parley.aio
from served import SETTINGS, Cast, Server

CLOCK = "2026-11-30T12:00:00.000Z"
REPO = Path(__file__).resolve().parents[2]

BACKEND = os.environ.get("PARLEY_TEST_BACKEND", "redb")
_NAMES = itertools.count()


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "redb_only(reason): the test is about the redb file; skipped on the postgres pass"
    )
    if BACKEND not in ("redb", "postgres"):
        raise pytest.UsageError(f"PARLEY_TEST_BACKEND is {BACKEND!r}: it is redb or postgres")
    if BACKEND == "postgres" and not os.environ.get("PARLEY_TEST_PG"):
        raise pytest.UsageError(
            "PARLEY_TEST_BACKEND=postgres needs PARLEY_TEST_PG (source tests/pg/server.sh && pg_start)"
        )


def pytest_report_header(config: pytest.Config) -> str:
    return f"parley backend: {BACKEND}"


def pytest_collection_modifyitems(config: pytest.Config, items: "list[pytest.Item]") -> None:
    if BACKEND != "postgres":
        return
    for item in items:
        marker = item.get_closest_marker("redb_only")
        if marker is not None:
            item.add_marker(pytest.mark.skip(reason=f"redb only: {_reason(marker)}"))


def _reason(marker: pytest.Mark) -> str:
    reason = marker.args[0] if marker.args else marker.kwargs.get("reason")
    if not isinstance(reason, str) or not reason:
        raise pytest.UsageError(f"@pytest.mark.{marker.name} needs a reason")
    return reason


def pg_server() -> Optional[str]:
    """The test server's base URL; ``None`` when there is none, unless
    ``PARLEY_TEST_PG_REQUIRED`` is set, which fails the test instead."""
    url = os.environ.get("PARLEY_TEST_PG")
    if url:
        return url
    if os.environ.get("PARLEY_TEST_PG_REQUIRED"):
        pytest.fail("PARLEY_TEST_PG_REQUIRED is set but PARLEY_TEST_PG is not")
    return None


def fresh_pg_url(base: str, tag: str = "py") -> str:
    """``base`` naming a forum no other test (of this or an earlier run) uses: the
    server is shared by every test."""
    name = f"{tag}{os.getpid()}_{next(_NAMES)}_{time.time_ns() % 10**9}"[:40]
    return f"{base}{'&' if '?' in base else '?'}forum={name}"


@pytest.fixture
def pg_url() -> Callable[[], str]:
    """Makes URLs of fresh PostgreSQL forums; skips the test without a server."""
    base = pg_server()
    if base is None:
        pytest.skip("no PostgreSQL server (source tests/pg/server.sh && pg_start, then PARLEY_TEST_PG)")
    return lambda: fresh_pg_url(base)


PathArg = Union[str, "os.PathLike[str]", None]


@pytest.fixture(autouse=True)
def backend(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> str:
    """On the postgres pass, ``parley.Forum`` (and ``parley.aio.open``) open a fresh
    PostgreSQL forum where a test asks for one in memory or in a temporary file."""
    if BACKEND != "postgres":
        return BACKEND
    base = os.environ["PARLEY_TEST_PG"]
    scratch = tmp_path_factory.getbasetemp().resolve()
    files: Dict[Path, str] = {}

    def route(path: Any) -> Any:
        """A fresh forum for ``None``, one forum per temporary file; else ``path``."""
        if path is None:
            return fresh_pg_url(base)
        if not isinstance(path, (str, os.PathLike)):
            return path  # a wrong type meets the binding's own TypeError
        text = os.fspath(path)
        if not isinstance(text, str):
            return path
        file = Path(text).resolve()
        if scratch not in file.parents:
            return path  # a URL, or a file of the repository
        if file not in files:
            files[file] = fresh_pg_url(base)
        return files[file]

    native = parley.Forum

    class Forum(parley.Forum):
        __doc__ = native.__doc__

        def __new__(cls, path: PathArg = None, **settings: Any) -> "Forum":
            return super().__new__(cls, route(path), **settings)  # type: ignore[return-value]

    # What tests see of the class stays the package's (test_listen reads the signature).
    Forum.__signature__ = inspect.signature(native)  # type: ignore[attr-defined]
    Forum.__module__, Forum.__qualname__ = native.__module__, native.__qualname__
    monkeypatch.setattr(parley, "Forum", Forum)
    monkeypatch.setattr(parley.aio, "Forum", Forum)
    return BACKEND


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
def forum(backend: str) -> Iterator[parley.Forum]:
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


# The served forum of the remote tests (served.py).


@pytest.fixture
def servers(parley_bin: Path, tmp_path: Path) -> Iterator[Callable[..., Server]]:
    """Makes servers on fresh forum files (not started); kills what is left at the end."""
    made: List[Server] = []

    def make(settings: Dict[str, Any] = SETTINGS, extra: Sequence[str] = ()) -> Server:
        server = Server(parley_bin, tmp_path / f"forum{len(made)}.redb", settings, extra)
        made.append(server)
        return server

    yield make
    for server in made:
        server.kill()


@pytest.fixture
def cast(servers: Callable[..., Server]) -> Iterator[Cast]:
    c = Cast(servers())
    yield c
    c.close()
