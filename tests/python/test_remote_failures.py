"""``parley.connect`` when things go wrong: a server killed mid-retry, one that does not
answer, one that is full, a URL that is not the endpoint, an idle connection the server
closed, a peer that is no Parley server, and bad arguments.
"""

from __future__ import annotations

import builtins
import contextlib
import os
import signal
import socket
import threading
import time
from pathlib import Path
from typing import Any, Callable, Dict, Iterator

import pytest

import parley
import parley.aio
from served import BOUND_S, SERVED_ONLY, Cast, Server


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
