"""``parley.connect`` against a real ``parley serve --http``: the conformance transcripts,
one agent run in-process and remotely with the same results, the same refusals,
waiting reads, ``parley.aio.connect``, a server that dies, stalls, is full or closes
idle connections, a peer that is no Parley server, and bad arguments.

The binary is ``PARLEY_BIN``, else ``target/debug/parley`` built here by
``cargo build -p parley-cli`` (quick when it is up to date), so that the server runs
the engine of this tree.
"""

from __future__ import annotations

import asyncio
import builtins
import contextlib
import json
import os
import queue
import signal
import socket
import subprocess
import threading
import time
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple

import pytest

import parley
import parley.aio
import transcripts

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


@pytest.fixture
def cast(servers: Callable[..., Server]) -> Iterator[Cast]:
    c = Cast(servers())
    yield c
    c.close()


# ------------------------------------------------------------------ the transcripts


class ServedHost:
    """A transcript's forum behind a server: tokens issued before it starts, and each
    revocation made with the server stopped, then served again on the same port."""

    def __init__(self, server: Server) -> None:
        self.server = server

    def create_token(self, handle: str, kind: str, rights: List[str], label: Optional[str]) -> str:
        return self.server.token(handle, kind, rights, label)

    def serve(self) -> str:
        return self.server.start()

    def revoke_token(self, token: str) -> bool:
        self.server.stop()
        try:
            # Exit 0: revoked; 1: no active token matched.
            return self.server.run("token", "revoke", token).returncode == 0
        finally:
            self.server.start()


PATHS = transcripts.transcript_paths()


@SERVED_ONLY
@pytest.mark.parametrize("path", PATHS, ids=[p.stem for p in PATHS])
def test_transcript_through_connect(path: Path, servers: Callable[..., Server]) -> None:
    @contextlib.contextmanager
    def host(settings: Dict[str, Any]) -> Iterator[ServedHost]:
        server = servers(settings)
        try:
            yield ServedHost(server)
        finally:
            server.stop()

    failures = transcripts.run_remote(path, host)
    assert not failures, "\n".join(failures)


@SERVED_ONLY
def test_the_remote_runner_sees_a_wrong_expectation(tmp_path: Path, servers: Callable[..., Server]) -> None:
    path = tmp_path / "wrong.json"
    path.write_text(
        json.dumps(
            {
                "name": "wrong",
                "description": "a wrong state, a refusal that does not come, then a revocation",
                "settings": {"clock": CLOCK},
                "tokens": [{"actor": "alice", "handle": "alice"}],
                "steps": [
                    {"actor": "alice", "op": "post", "args": {"kind": "ask", "body": "Q?"},
                     "expect": {"ok": {"thread": {"state": "closed"}}}},
                    {"actor": "alice", "op": "whoami", "args": {},
                     "expect": {"refused": {"reason": "token_invalid", "status": 401}}},
                    {"revoke": "alice"},
                    {"actor": "alice", "op": "whoami", "args": {},
                     "expect": {"ok": {}}},
                ],
            }
        ),
        encoding="utf-8",
    )

    @contextlib.contextmanager
    def host(settings: Dict[str, Any]) -> Iterator[ServedHost]:
        server = servers(settings)
        try:
            yield ServedHost(server)
        finally:
            server.stop()

    failures = transcripts.run_remote(path, host)
    assert len(failures) == 3, failures
    assert 'thread.state: expected "closed", got "open"' in failures[0]
    assert "expected a refusal, got success" in failures[1]
    assert "expected success, got a refusal" in failures[2] and "token_invalid" in failures[2]


# ------------------------------------------------------- one agent, in-process and remote


def agent(alice: parley.Session, bob: parley.Session) -> List[Any]:
    """A short conversation touching every kind of method; returns all it was given."""
    seen: List[Any] = []
    asked = alice.ask("Which port does the dev server use?")
    thread = asked["thread"]["id"]
    seen += [asked, bob.inbox(), bob.answer("Port 7878.", thread=thread)]
    seen += [alice.thread(thread), alice.whoami(), bob.threads(state="answered")]
    source = [{"kind": "url", "ref": "https://example.org/port"}]
    claimed = bob.claim("The port is 7878.", evidence=source, thread=thread)
    claim, parent = claimed["claim"]["id"], claimed["message"]["id"]
    evidence = [{"kind": "log", "ref": "port 7878"}]
    seen += [claimed, alice.attest("Seen it.", claim=claim, evidence=evidence, parent=parent)]
    seen += [alice.claim_status(claimed["claim"]["id"]), alice.events(), alice.messages(thread=thread)]
    seen += [alice.search("port"), alice.with_extension("helper").inbox(), alice.manifest()]
    seen += [bob.note("Noted.", thread=thread, idempotency_key="note-1") for _ in range(2)]  # a replay
    seen += [bob.dispatch("get_inbox", {})]
    seen += [bob.dispatch("post", json.dumps({"kind": "note", "body": "Again.", "thread": thread}))]
    seen += [bob.dispatch("post", {"kind": "answer", "body": "Port 7878.", "thread": thread})]  # repeated_body
    seen += [bob.dispatch("no_such_tool", {}), alice.tools("openai", strict=True)]
    feed = alice.feed("messages", thread=thread)
    seen += [[next(feed) for _ in range(3)], {"cursor": feed.cursor}]
    for refused in (
        lambda: bob.decide("Settled.", thread=thread),  # thread_authority_missing
        lambda: alice.answer("Me again.", thread=thread, parent=asked["message"]["id"]),
        lambda: alice.thread("th_99"),
        lambda: alice.inbox(since="not-a-cursor"),
        lambda: bob.note("Noted.", thread=thread, idempotency_key="note-1", parent=asked["message"]["id"]),
    ):
        try:
            refused()
            seen.append("not refused")
        except parley.Refusal as refusal:
            seen.append((type(refusal).__name__, refusal.reason, refusal.status, refusal.data))
    return seen


def test_the_same_agent_runs_in_process_and_remote(cast: Cast) -> None:
    with parley.Forum(None, **SETTINGS) as forum:
        local = agent(
            forum.session(forum.create_token("alice", label="Alice")), forum.session(forum.create_token("bob"))
        )
    remote = agent(cast.session("alice"), cast.session("bob"))
    assert len(remote) == len(local)
    for i, (here, there) in enumerate(zip(local, remote)):
        if isinstance(here, dict) and "server" in here:  # the manifest names its host
            here, there = dict(here, server=None), dict(there, server=None)
        if isinstance(here, dict) and "realm_key" in here:  # and each forum's own key
            here, there = dict(here, realm_key=None), dict(there, realm_key=None)
        assert without_cursors(there) == without_cursors(here), f"result {i} differs"


def without_cursors(value: Any) -> Any:
    """``value`` with every cursor blanked: cursors are sealed with a key of each forum."""
    if isinstance(value, dict):
        return {k: "<cursor>" if k == "cursor" and isinstance(v, str) else without_cursors(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [without_cursors(v) for v in value]
    return value


def test_refusals_raise_the_same_exceptions(cast: Cast) -> None:
    with parley.Forum(None, **SETTINGS) as forum:
        local = {
            "alice": forum.session(forum.create_token("alice", label="Alice")),
            "bob": forum.session(forum.create_token("bob")),
            "reader": forum.session(forum.create_token("reader", rights=["read"])),
            "stranger": forum.session("pt_not_a_token"),
            "spaced": forum.session(" not a header value\u00e9"),
            "nobody": forum.session(""),
        }
        remote = {who: cast.session(who) for who in ["alice", "bob", "reader", "pt_not_a_token"]}
        remote["stranger"] = remote.pop("pt_not_a_token")
        remote["spaced"] = cast.session(" not a header value\u00e9")
        remote["nobody"] = cast.session("")

        def attempts(s: Dict[str, parley.Session]) -> List[Tuple[str, Any]]:
            first = s["alice"].ask("Which port?")
            thread = first["thread"]["id"]
            calls: List[Callable[[], Any]] = [
                lambda: s["alice"].answer("Mine.", thread=thread),  # self_reply, 409
                lambda: s["bob"].thread("th_42"),  # thread_not_found, 404
                lambda: s["bob"].ask("   "),  # invalid_body, 400
                lambda: s["bob"].post("shout", "Hey."),  # unknown_kind, 400
                lambda: s["reader"].note("Hi.", thread=thread),  # token_right_missing, 403
                lambda: s["bob"].decide("Done.", thread=thread),  # thread_authority_missing, 403
                lambda: s["stranger"].whoami(),  # token_invalid, 401
                lambda: s["spaced"].inbox(),  # token_invalid, 401 (no such token can exist)
                lambda: s["nobody"].whoami(),  # token_missing, 401
                lambda: s["bob"].inbox(wait=3600),  # invalid_argument (over wait_max_ms), 400
                lambda: s["bob"].events(since="bogus"),  # invalid_cursor, 400
                lambda: s["alice"].call("get_thread", {"thread": thread, "extra": 1}),  # invalid_argument
                lambda: s["alice"].call("no_such_operation"),  # ValueError
                lambda: s["alice"].call("whoami", {"x": {1, 2}}),  # TypeError: not JSON
                lambda: s["alice"].call("whoami", {"x": float("nan")}),  # ValueError: not JSON
                lambda: s["alice"].call("post", ["ask", "Not an object."]),  # TypeError: not a mapping
                lambda: s["spaced"].manifest()["realm"],  # get_manifest ignores the token
            ]
            out: List[Tuple[str, Any]] = []
            for call in calls:
                try:
                    out.append(("ok", call()))
                except parley.Refusal as refusal:
                    assert type(refusal) is type(parley.Refusal.from_data(refusal.data))
                    out.append((type(refusal).__name__, (refusal.reason, refusal.status, refusal.data)))
                except (TypeError, ValueError) as exc:
                    out.append((type(exc).__name__, None))
            return out

        here, there = attempts(local), attempts(remote)
    assert there == here
    assert [kind for kind, _ in there] == [
        "Conflict", "NotFound", "BadRequest", "BadRequest", "Forbidden", "Forbidden", "Unauthorized",
        "Unauthorized", "Unauthorized", "BadRequest", "BadRequest", "BadRequest", "ValueError",
        "TypeError", "ValueError", "TypeError", "ok",
    ]


@SERVED_ONLY
def test_a_request_over_request_max_bytes_is_payload_too_large(cast: Cast) -> None:
    alice = cast.session("alice")
    with pytest.raises(parley.PayloadTooLarge) as caught:
        alice.ask("x" * 70_000)
    assert (caught.value.reason, caught.value.status) == ("payload_too_large", 413)
    assert alice.whoami()["identity"] == "ainotes:alice"  # the connection goes on


# ------------------------------------------------------------------------ waiting reads


@SERVED_ONLY
def test_a_waiting_inbox_wakes_on_a_post_from_another_client(cast: Cast) -> None:
    alice, bob = cast.session("alice"), cast.session("bob")
    got: Dict[str, Any] = {}

    def wait() -> None:
        got["start"] = time.monotonic()
        got["page"] = bob.inbox(wait=20)
        got["end"] = time.monotonic()

    waiter = threading.Thread(target=wait)
    waiter.start()
    time.sleep(0.5)
    posted_at = time.monotonic()
    asked = alice.ask("Anyone there?")
    waiter.join(BOUND_S)
    assert not waiter.is_alive()
    assert got["start"] < posted_at < got["end"], "the read was waiting when the post came"
    assert got["end"] - got["start"] < 15, "woken by the post, not by the end of the wait"
    assert [item["thread"]["id"] for item in got["page"]["items"]] == [asked["thread"]["id"]]
    # Nothing new: the wait runs out and the page is empty, as in-process.
    start = time.monotonic()
    page = bob.inbox(since=got["page"]["cursor"], wait=0.3)
    assert page["items"] == [] and time.monotonic() - start >= 0.25
    # A feed reads through the waits too.
    feed = bob.feed("inbox")
    assert next(feed)["thread"]["id"] == asked["thread"]["id"]


@SERVED_ONLY
def test_aio_connect(cast: Cast) -> None:
    async def main() -> None:
        alice = parley.aio.connect(cast.server.url, cast.tokens["alice"])
        bob = parley.aio.connect(cast.server.url, cast.tokens["bob"], retries=1)
        assert isinstance(alice, parley.aio.AsyncSession) and bob.retries == 1
        try:
            assert (await alice.whoami())["identity"] == "ainotes:alice"
            waiter = asyncio.ensure_future(bob.inbox(wait=20))
            await asyncio.sleep(0.5)
            assert not waiter.done(), "the read waits"
            asked = await alice.ask("Which port?")
            page = await asyncio.wait_for(waiter, BOUND_S)
            assert [item["thread"]["id"] for item in page["items"]] == [asked["thread"]["id"]]
            with pytest.raises(parley.Conflict) as caught:
                await alice.answer("Mine.", thread=asked["thread"]["id"])
            assert caught.value.reason == "self_reply"
            answered = await bob.answer("7878.", thread=asked["thread"]["id"])
            assert answered["replayed"] is False  # a key was made for the retries
            feed = alice.feed("messages", since=None)
            async for message in feed:
                assert message["id"] == asked["message"]["id"]
                break
            waited = await bob.dispatch("get_messages", {"since": feed.cursor, "wait_ms": 200})
            assert [m["id"] for m in waited["items"]] == [answered["message"]["id"]]
            assert [tool["name"] for tool in await alice.tools()][:3] == ["get_manifest", "whoami", "post"]
        finally:
            alice.sync.forum.close()
            bob.sync.forum.close()

    asyncio.run(main())


async def async_agent(alice: parley.aio.AsyncSession, bob: parley.aio.AsyncSession) -> List[Any]:
    """The coroutine version of a short conversation, waits and refusals included."""
    seen: List[Any] = []
    asked = await alice.ask("Which port?")
    thread = asked["thread"]["id"]
    seen += [asked, await bob.inbox(wait=5), await bob.answer("7878.", thread=thread)]
    seen += [await alice.thread(thread), await alice.events(wait=0.2), await alice.messages(thread=thread)]
    seen += [await alice.search("port"), await bob.dispatch("get_thread", {"thread": thread})]
    seen += [await bob.dispatch("get_inbox", {"wait_ms": 100})]
    feed = alice.feed("messages", thread=thread)
    seen += [[await feed.__anext__() for _ in range(2)]]
    for refused in (alice.answer("Mine.", thread=thread), bob.thread("th_9"), bob.inbox(wait=3600)):
        try:
            seen.append(await refused)
        except parley.Refusal as refusal:
            seen.append((type(refusal).__name__, refusal.data))
    return seen


def test_the_same_async_agent_runs_in_process_and_remote(cast: Cast) -> None:
    async def both() -> Tuple[List[Any], List[Any]]:
        async with await parley.aio.open(None, **SETTINGS) as forum:
            alice, bob = await forum.create_token("alice", label="Alice"), await forum.create_token("bob")
            here = await async_agent(forum.session(alice), forum.session(bob))
        alice_r = parley.aio.connect(cast.server.url, cast.tokens["alice"])
        bob_r = parley.aio.connect(cast.server.url, cast.tokens["bob"])
        try:
            there = await async_agent(alice_r, bob_r)
        finally:
            alice_r.sync.forum.close()
            bob_r.sync.forum.close()
        return here, there

    here, there = asyncio.run(both())
    assert without_cursors(there) == without_cursors(here)


# ---------------------------------------------------------------- transport failures


@SERVED_ONLY
def test_a_killed_server_then_retries_under_one_key(cast: Cast) -> None:
    alice = cast.session("alice")
    patient = cast.session("alice", retries=10, retry_backoff=0.1)
    first = alice.ask("Which port?", idempotency_key="port-question")
    bob = cast.session("bob")
    cut: Dict[str, BaseException] = {}

    def wait() -> None:
        try:
            bob.inbox(since=bob.inbox()["cursor"], wait=20)
        except BaseException as exc:
            cut["error"] = exc

    waiter = threading.Thread(target=wait)
    waiter.start()
    time.sleep(0.5)
    cast.server.kill()
    waiter.join(BOUND_S)
    assert isinstance(cut.get("error"), parley.ConnectionError), cut  # a wait cut short
    with pytest.raises(parley.ConnectionError) as caught:
        alice.whoami()  # connection refused
    assert isinstance(caught.value, parley.ParleyError) and isinstance(caught.value, builtins.ConnectionError)
    assert cast.server.url in str(caught.value)

    restarter = threading.Timer(0.5, cast.server.start)
    restarter.start()
    try:
        # Retried until the server is back on the same file, then replayed: one post.
        again = patient.ask("Which port?", idempotency_key="port-question")
    finally:
        restarter.join(BOUND_S)
    assert again["replayed"] is True and again["message"]["id"] == first["message"]["id"]
    assert len(alice.messages()["items"]) == 1

    cast.server.kill()
    restarter = threading.Timer(0.5, cast.server.start)
    restarter.start()
    try:
        # The session's own key: the retries that reach the server write the post once.
        other = patient.ask("And the host?")
    finally:
        restarter.join(BOUND_S)
    assert other["replayed"] is False
    assert [m["body"] for m in alice.messages()["items"]] == ["Which port?", "And the host?"]


@SERVED_ONLY
def test_a_server_that_does_not_answer_times_out(cast: Cast) -> None:
    hasty = cast.session("alice", timeout=0.5)
    assert hasty.whoami()["identity"] == "ainotes:alice"
    assert cast.server.proc is not None
    os.kill(cast.server.proc.pid, signal.SIGSTOP)
    try:
        # kill() returns before the signal is acted on; on a loaded machine a server
        # thread that is running then can still answer. Wait until it is stopped.
        stat = Path(f"/proc/{cast.server.proc.pid}/stat")
        deadline = time.monotonic() + 5
        while stat.read_text().rsplit(")", 1)[1].split()[0] != "T" and time.monotonic() < deadline:
            time.sleep(0.01)
        start = time.monotonic()
        with pytest.raises(parley.ConnectionError):
            hasty.whoami()
        assert time.monotonic() - start < 10
    finally:
        os.kill(cast.server.proc.pid, signal.SIGCONT)
    assert hasty.whoami()["identity"] == "ainotes:alice"


@SERVED_ONLY
def test_too_many_waits_is_a_connection_error(servers: Callable[..., Server]) -> None:
    c = Cast(servers(extra=["--max-waits", "1", "--max-connections", "8"]))
    try:
        alice, bob, reader = c.session("alice"), c.session("bob"), c.session("reader")
        got: Dict[str, Any] = {}
        waiter = threading.Thread(target=lambda: got.update(page=bob.inbox(wait=20)))
        waiter.start()
        time.sleep(0.5)
        with pytest.raises(parley.ConnectionError) as caught:
            reader.inbox(wait=5)
        assert "too_many_waits" in str(caught.value)
        alice.ask("Wake up.")
        waiter.join(BOUND_S)
        assert len(got["page"]["items"]) == 1
    finally:
        c.close()


@SERVED_ONLY
def test_a_url_that_is_not_the_endpoint(cast: Cast) -> None:
    for url in (cast.server.url + "/", cast.server.url + "/mcp"):
        with parley.connect(url, cast.tokens["bob"]).forum as forum:
            assert forum.call(cast.tokens["bob"], "whoami")["identity"] == "ainotes:bob"
    with parley.connect(cast.server.url + "/elsewhere", cast.tokens["bob"]).forum as forum:
        with pytest.raises(parley.ParleyError) as caught:
            forum.call(cast.tokens["bob"], "whoami")
        assert not isinstance(caught.value, parley.Refusal)


@SERVED_ONLY
def test_a_connection_the_server_closed_while_idle_is_replaced(servers: Callable[..., Server]) -> None:
    c = Cast(servers(extra=["--idle-timeout-ms", "100"]))
    try:
        alice = c.session("alice")
        assert alice.whoami()["identity"] == "ainotes:alice"
        time.sleep(0.5)  # the server closes the kept-alive connection meanwhile
        alice.ask("Still there?")  # a post without a key: sent once, on a fresh connection
        assert [m["body"] for m in alice.messages()["items"]] == ["Still there?"]
    finally:
        c.close()


@contextlib.contextmanager
def peer(answer: bytes) -> Iterator[str]:
    """Something at a loopback port that is not a Parley server: it reads one request
    and sends ``answer`` (which may be cut short, or nothing), then closes."""
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(BOUND_S)

    def serve() -> None:
        with contextlib.suppress(OSError):
            conn, _ = listener.accept()
            with conn:
                conn.settimeout(BOUND_S)
                data = b""
                while b"\r\n\r\n" not in data:
                    chunk = conn.recv(65536)
                    if not chunk:
                        return
                    data += chunk
                conn.sendall(answer)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    finally:
        thread.join(BOUND_S)
        listener.close()


@pytest.mark.parametrize(
    "answer",
    [
        b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 13\r\n\r\n<html></html>",
        b'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"jsonrpc": "2.0", ',
        b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n[]",
        b"",
    ],
    ids=["not-json", "cut-short", "http-503", "not-an-object", "no-answer"],
)
def test_a_peer_that_is_not_a_parley_server(answer: bytes) -> None:
    with peer(answer) as url:
        session = parley.connect(url, "pt_whatever")
        try:
            with pytest.raises(parley.ConnectionError):
                session.whoami()
        finally:
            session.forum.close()


# ---------------------------------------------------------------------- bad arguments


@SERVED_ONLY
def test_bad_arguments_raise(cast: Cast) -> None:
    url, token = cast.server.url, cast.tokens["alice"]
    for connect in (parley.connect, parley.aio.connect):
        with pytest.raises(TypeError):
            connect(b"http://127.0.0.1:1", token)  # type: ignore[arg-type]
        with pytest.raises(TypeError):
            connect(url, None)  # type: ignore[arg-type]
        with pytest.raises(TypeError):
            connect(url, token, 7)  # type: ignore[arg-type]
        with pytest.raises(TypeError):
            connect(url, token, timeout="5")  # type: ignore[arg-type]
        with pytest.raises(TypeError):
            connect(url, token, timeout=True)
        with pytest.raises(TypeError):
            connect(url, token, retries=1.5)  # type: ignore[arg-type]
        for bad_timeout in (0, -1, float("inf"), float("nan")):
            with pytest.raises(ValueError):
                connect(url, token, timeout=bad_timeout)
        with pytest.raises(ValueError):
            connect(url, token, retries=-1)
        for bad_url in (
            "ftp://127.0.0.1:7878",
            "127.0.0.1:7878",
            "localhost:7878",
            "http://",
            "http://127.0.0.1:99999",
            "http://127.0.0.1:port",
            "http://user:secret@127.0.0.1:7878",
            "http://127.0.0.1:7878/?q=1",
            "http://127.0.0.1:7878/#top",
            "http://127.0.0.1:7878/a b",
            "",
        ):
            with pytest.raises(ValueError):
                connect(bad_url, token)
    session = parley.connect(url, token)
    with pytest.raises(TypeError):
        session.forum.mcp(token, 42)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        session.forum.call(token, 42)  # type: ignore[arg-type]
    assert session.forum.mcp(token, {"jsonrpc": "2.0", "method": "notifications/initialized"}) is None
    listed = session.forum.mcp(token, '{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}')
    assert listed is not None and listed["result"]["tools"][0]["name"] == "get_manifest"
    session.forum.close()
    assert session.forum.closed and session.forum.waits_ended
    with pytest.raises(ValueError):
        session.whoami()
    assert list(session.feed("inbox")) == []  # a feed of a closed forum ends
