"""``parley.connect``: a session with a forum that ``parley serve --http`` serves.

:class:`RemoteForum` offers what a :class:`parley.Session` needs of a forum, the
generic call and the MCP handler, over the server's MCP endpoint (``POST /mcp``,
SPEC §11.1), so the same agent code runs in-process or against a server. A call is
one JSON-RPC ``tools/call`` (the stateless 2025-11-25 form, which needs no
handshake): its result is the reply's ``structuredContent``, and a refusal
(``isError``) raises the exception the in-process call raises, with the same
``reason`` and ``status``. The token travels as ``Authorization: Bearer``.

Only the standard library is used: ``http.client`` over kept-alive connections, one
per call in flight, so a session may be shared among threads (and ``parley.aio``
runs each call in a pool thread). A read given ``wait_ms`` waits on the server; its
socket time-out is the session's ``timeout`` plus the wait.

Failures of the transport (connection refused or reset, a time-out, a response that
is not JSON or is cut short, HTTP 5xx, a tool error of status 5xx such as 503
``too_many_waits``) raise :class:`parley.ConnectionError`. The caller cannot tell
whether a post was written, so a session with ``retries`` runs the call again, every
attempt of a post under one idempotency key (SPEC §14.3), as after a
:class:`parley.StorageError`.
"""

from __future__ import annotations

import http.client
import itertools
import json
import math
import select
import socket
import threading
import urllib.parse
import weakref
from typing import Any, Dict, List, Mapping, Optional, Tuple, Union

from . import _args, _errors
from ._errors import ParleyError, StorageError, _refusal_from_data
from ._parley import VERSION
from ._session import Session

__all__ = ["DEFAULT_TIMEOUT", "RemoteForum", "connect"]

DEFAULT_TIMEOUT = 30.0
"""Seconds a call may take to connect, and to answer beyond its own ``wait_ms``."""

# JSON-RPC error codes of the server's MCP handler (SPEC §11.1).
_INVALID_PARAMS = -32602
_INTERNAL_ERROR = -32603

# Idle connections kept per forum; more calls at once each open their own.
_MAX_IDLE = 8

# A bound on the part of a socket time-out a `wait_ms` adds: a wait longer than any
# server's `wait_max_ms` is refused at once, and an unbounded one would overflow.
_MAX_WAIT_S = 86_400.0

# How a kept-alive connection that the server has closed fails (http.client's
# RemoteDisconnected, no answer at all, is a ConnectionResetError).
_STALE = (ConnectionResetError, ConnectionAbortedError, BrokenPipeError)

# Stands for a token that cannot travel in an HTTP header (outside visible ASCII):
# no such token was ever issued, and the server refuses this one as it refuses
# every unknown token (`token_invalid`), in its own order of checks.
_UNSENDABLE_TOKEN = "-"

_Connection = Union[http.client.HTTPConnection, http.client.HTTPSConnection]


def connect(
    url: str,
    token: str,
    extension: Optional[str] = None,
    *,
    provenance: Optional[Mapping[str, str]] = None,
    retries: int = 0,
    retry_backoff: float = 0.05,
    timeout: float = DEFAULT_TIMEOUT,
) -> Session:
    """A :class:`parley.Session` speaking for ``token`` to the forum served at ``url``.

    ``url`` is the server's base (``"http://127.0.0.1:7878"``) or its MCP endpoint
    (``…/mcp``), ``http`` or ``https``. The session has every method of
    :meth:`parley.Forum.session`'s, with the same results and the same refusals;
    ``extension``, ``provenance``, ``retries`` and ``retry_backoff`` mean what they
    mean there, and ``retries`` also retries :class:`parley.ConnectionError`.
    ``timeout`` (seconds) bounds connecting and each wait for an answer, beyond the
    call's own ``wait_ms``.

    Nothing is sent yet: the first call connects. ``session.forum`` is the
    :class:`parley.RemoteForum`; close it (or use it as a context manager) to release its
    connections. Raises ``TypeError`` for an argument of the wrong type and
    ``ValueError`` for a URL that is not ``http(s)://host[:port][/path]`` or a
    ``timeout`` that is not positive.
    """
    _args.check("token", token, str, "a str")
    forum = RemoteForum(url, timeout=timeout)
    return Session(forum, token, extension, provenance=provenance, retries=retries, retry_backoff=retry_backoff)


class RemoteForum:
    """The forum behind a ``parley serve --http`` server at ``url``, as a session uses it.

    :meth:`call` and :meth:`mcp` are :class:`parley.Forum`'s, over HTTP; tokens are
    issued on the server's side (``parley token create``). Thread-safe. Closing it
    releases its idle connections; later calls raise ``ValueError``, as on a closed
    forum.
    """

    def __init__(self, url: str, *, timeout: float = DEFAULT_TIMEOUT) -> None:
        _args.check("url", url, str, "a str")
        _args.check("timeout", timeout, (int, float), "a number of seconds (int or float)")
        if not math.isfinite(timeout) or timeout <= 0:
            raise ValueError(f"timeout must be a finite number of seconds above 0, not {timeout!r}")
        self._url = url
        self._https, self._host, self._port, self._endpoint = _parse_url(url)
        self._timeout = float(timeout)
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self._idle: List[_Connection] = []
        self._closed = False
        self._limits: Optional[Dict[str, int]] = None
        # Idle sockets are closed when the forum is collected, not left to warn.
        self._release = weakref.finalize(self, _close_all, self._idle, self._lock)

    @property
    def url(self) -> str:
        """The URL given to :func:`parley.connect`."""
        return self._url

    @property
    def timeout(self) -> float:
        """Seconds a call may take to connect, and to answer beyond its ``wait_ms``."""
        return self._timeout

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called."""
        return self._closed

    @property
    def waits_ended(self) -> bool:
        """Whether :meth:`close` was called: feeds end then. (A server shutting down
        ends its waits itself; the next call then fails to connect.)"""
        return self._closed

    @property
    def limits(self) -> Dict[str, int]:
        """The server's limits (SPEC §9), from its manifest, read at the first use."""
        if self._limits is None:
            limits = self.manifest().get("limits")
            if not isinstance(limits, dict):
                raise _errors.ConnectionError(f"{self._url} sent a manifest without limits")
            self._limits = limits
        return dict(self._limits)

    def __repr__(self) -> str:
        return f"<parley.RemoteForum {self._url!r}{' closed' if self._closed else ''}>"

    def __enter__(self) -> "RemoteForum":
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        """Closes the idle connections; calls in flight finish, and close theirs.
        Idempotent; later calls raise ``ValueError``."""
        with self._lock:
            self._closed = True
        self._release()

    def manifest(self) -> Dict[str, Any]:
        """The server's manifest (SPEC §13)."""
        return self.call(None, "get_manifest")

    def _commit_fd(self) -> int:
        """There is none: the server does the waiting. ``parley.aio`` therefore runs a
        waiting read as one call with ``wait_ms``, in a pool thread."""
        raise NotImplementedError("a remote forum has no commit descriptor; its server waits")

    # The forum's two entries ------------------------------------------------------------

    def call(self, token: Optional[str], operation: str, args: Optional[Mapping[str, Any]] = None) -> Dict[str, Any]:
        """The generic call (SPEC §11.3) as a ``tools/call`` of the tool ``operation``.

        Returns the result; a refusal raises :class:`parley.Refusal` (the subclass for
        its status), an operation the server does not know ``ValueError``, ``args``
        that are not a mapping or not JSON ``TypeError`` (``ValueError`` for a NaN),
        a failed transport :class:`parley.ConnectionError`, a failure inside the
        server :class:`parley.StorageError`.
        """
        _args.check_opt_str("token", token)
        _args.check("operation", operation, str, "a str")
        if args is not None and not isinstance(args, Mapping):
            # As in-process: another JSON value is an argument of the wrong type here
            # (over MCP it would reach the engine, which refuses it).
            raise TypeError(f"args must be a mapping (dict) or None, not '{type(args).__name__}'")
        arguments: Any = {} if args is None else args
        request_id = next(self._ids)
        request = {
            "jsonrpc": "2.0",
            "id": request_id,
            "method": "tools/call",
            "params": {"name": operation, "arguments": arguments},
        }
        wait_s, repeatable = _wait_s(operation, arguments), _repeatable(operation, arguments)
        status, reply = self._exchange(token, _encode(request), wait_s, repeatable)
        if reply is None:
            raise _errors.ConnectionError(f"{self._url} sent no answer to a call (HTTP {status})")
        if "jsonrpc" not in reply:
            # Not the MCP endpoint (a wrong path, a proxy's page): say what came back.
            detail = _detail(json.dumps(reply).encode())
            raise ParleyError(f"{self._url} is not a Parley MCP endpoint: HTTP {status}{detail}")
        error = reply.get("error")
        if error is not None:
            raise _rpc_failure(error, operation)
        if reply.get("id") != request_id:
            raise self._malformed(f"the answer is to request {reply.get('id')!r}, not {request_id}")
        result = reply.get("result")
        structured = result.get("structuredContent") if isinstance(result, dict) else None
        if not isinstance(structured, dict):
            raise self._malformed("the result has no structuredContent object")
        assert isinstance(result, dict)
        if result.get("isError") is True:
            refusal = structured.get("error")
            if not isinstance(refusal, dict):
                raise self._malformed("a tool error without an error object")
            raise _refusal(refusal)
        return structured

    def mcp(self, token: Optional[str], request: Union[Mapping[str, Any], str]) -> Optional[Dict[str, Any]]:
        """One MCP JSON-RPC message (a dict or its JSON text) for ``token``, sent to the
        server as it is. Returns the JSON-RPC response, or ``None`` for a notification."""
        _args.check_opt_str("token", token)
        parsed: Any
        if isinstance(request, str):
            body = request.encode("utf-8")
            try:
                parsed = json.loads(request)
            except ValueError:
                parsed = None  # the server's to answer (a parse error)
        elif isinstance(request, Mapping):
            parsed = request
            body = _encode(request)
        else:
            raise TypeError(f"request must be a dict or a JSON str, not {type(request).__name__}")
        name, arguments = _tool_call(parsed)
        status, reply = self._exchange(token, body, _wait_s(name, arguments), _repeatable(name, arguments))
        return reply

    # The transport ----------------------------------------------------------------------

    def _exchange(
        self, token: Optional[str], body: bytes, wait_s: float, repeatable: bool
    ) -> Tuple[int, Optional[Dict[str, Any]]]:
        """POSTs ``body`` to the endpoint; the HTTP status and the JSON object answered
        (``None`` for a 202 without a body)."""
        headers = {
            "Content-Type": "application/json",
            "Accept": "application/json",
            "User-Agent": f"parley-python/{VERSION}",
        }
        if token:
            headers["Authorization"] = f"Bearer {_header_token(token)}"
        timeout = self._timeout + wait_s
        status, data = self._post(body, headers, timeout, repeatable)
        if status >= 500:
            raise _errors.ConnectionError(f"{self._url} answered HTTP {status}{_detail(data)}")
        if status == 202 and not data:
            return status, None
        try:
            reply = json.loads(data)
        except ValueError:  # UnicodeDecodeError included
            raise self._malformed(f"HTTP {status} with a body that is not JSON: {data[:200]!r}") from None
        if not isinstance(reply, dict):
            raise self._malformed(f"HTTP {status} with JSON that is not an object: {data[:200]!r}")
        return status, reply

    def _post(self, body: bytes, headers: Dict[str, str], timeout: float, repeatable: bool) -> Tuple[int, bytes]:
        for attempt in range(2):
            conn, reused = self._take()
            try:
                if conn.sock is None:
                    conn.connect()  # within the forum's timeout, not the call's wait
                assert conn.sock is not None
                conn.sock.settimeout(timeout)
                # Headers and body go in one send: a failure here means the server
                # never had the whole request.
                conn.request("POST", self._endpoint, body=body, headers=headers)
            except _STALE as exc:
                conn.close()
                # A kept-alive connection the server had closed: try once more on a
                # fresh one, whatever the call (nothing of it was run).
                if reused and attempt == 0:
                    continue
                raise self._lost(exc) from exc
            except (OSError, http.client.HTTPException) as exc:
                conn.close()
                raise self._lost(exc) from exc
            try:
                response = conn.getresponse()
                data = response.read()
            except _STALE as exc:
                conn.close()
                # Closed without a word after the request was sent: most likely the
                # server's idle close crossing it, but it may have run. Once more on a
                # fresh connection only if running it twice is harmless.
                if reused and repeatable and attempt == 0:
                    continue
                raise self._lost(exc) from exc
            except (OSError, http.client.HTTPException) as exc:
                conn.close()
                raise self._lost(exc) from exc
            if response.will_close:
                conn.close()
            else:
                self._give(conn)
            return response.status, data
        raise AssertionError("unreachable: the second attempt returns or raises")

    def _take(self) -> Tuple[_Connection, bool]:
        """An idle connection still open, else a new one (not yet connected); whether
        it was reused."""
        with self._lock:
            if self._closed:
                raise ValueError(f"the remote forum {self._url} is closed")
            while self._idle:
                conn = self._idle.pop()
                if conn.sock is not None and not _dropped(conn.sock):
                    return conn, True
                conn.close()
        cls = http.client.HTTPSConnection if self._https else http.client.HTTPConnection
        return cls(self._host, self._port, timeout=self._timeout), False

    def _give(self, conn: _Connection) -> None:
        with self._lock:
            if not self._closed and len(self._idle) < _MAX_IDLE:
                self._idle.append(conn)
                return
        conn.close()

    def _lost(self, exc: BaseException) -> "_errors.ConnectionError":
        what = type(exc).__name__
        text = str(exc)
        return _errors.ConnectionError(f"{self._url}: {what}{': ' + text if text else ''}")

    def _malformed(self, why: str) -> "_errors.ConnectionError":
        return _errors.ConnectionError(f"{self._url} answered a malformed response: {why}")


def _parse_url(url: str) -> Tuple[bool, str, Optional[int], str]:
    """(https, host, port, endpoint path) of a server URL, or ``ValueError``."""
    if not url or any(ord(c) <= 0x20 or ord(c) == 0x7F for c in url):
        raise ValueError(f"url must be an http:// or https:// URL without spaces, not {url!r}")
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https"):
        raise ValueError(f"url must be an http:// or https:// URL, not {url!r}")
    if parts.username is not None or parts.password is not None:
        raise ValueError("url must not carry a user or password; the token is passed on its own")
    if parts.query or parts.fragment or url.endswith(("?", "#")):
        raise ValueError(f"url must have no query or fragment: {url!r}")
    host = parts.hostname
    if not host:
        raise ValueError(f"url names no host: {url!r}")
    try:
        port = parts.port
    except ValueError as exc:
        raise ValueError(f"url has a bad port: {url!r} ({exc})") from None
    path = parts.path.rstrip("/")
    endpoint = path if path.endswith("/mcp") else path + "/mcp"
    return parts.scheme == "https", host, port, endpoint


def _encode(value: Any) -> bytes:
    """JSON text of a request: ``TypeError`` for a value JSON cannot carry,
    ``ValueError`` for a NaN or an infinity (which JSON has no text for)."""
    try:
        return json.dumps(value, ensure_ascii=False, allow_nan=False, default=_mapping).encode("utf-8")
    except ValueError as exc:
        raise ValueError(f"args: {exc}") from None
    except TypeError as exc:
        raise TypeError(f"args: {exc} (use dict, list, tuple, str, int, float, bool or None)") from None


def _mapping(value: object) -> Dict[str, Any]:
    if isinstance(value, Mapping):
        return dict(value)
    raise TypeError(f"a value of type {type(value).__name__!r} cannot be sent as JSON")


def _tool_call(request: Any) -> Tuple[str, Any]:
    """The tool name and arguments of a ``tools/call`` message, else ``("", None)``."""
    if isinstance(request, Mapping) and request.get("method") == "tools/call":
        params = request.get("params")
        if isinstance(params, Mapping) and isinstance(params.get("name"), str):
            return params["name"], params.get("arguments")
    return "", None


def _wait_s(operation: str, arguments: Any) -> float:
    """How long the server may wait before answering (a read's ``wait_ms``)."""
    if operation not in _args.WAITING_READS or not isinstance(arguments, Mapping):
        return 0.0
    wait_ms = arguments.get("wait_ms")
    if type(wait_ms) is not int or wait_ms <= 0:
        return 0.0
    return min(wait_ms / 1000, _MAX_WAIT_S)


def _repeatable(operation: str, arguments: Any) -> bool:
    """Whether sending the call twice is harmless: anything but a post without a key, or
    a release (the second would find the lease gone)."""
    if operation == "release":
        return False
    if operation != "post":
        return True
    return isinstance(arguments, Mapping) and arguments.get("idempotency_key") is not None


def _header_token(token: str) -> str:
    if all(0x21 <= ord(c) <= 0x7E for c in token):
        return token
    return _UNSENDABLE_TOKEN


def _dropped(sock: socket.socket) -> bool:
    """Whether an idle kept-alive connection is unusable: readable means the server
    closed it (or sent what no request asked for)."""
    try:
        if hasattr(select, "poll"):
            poller = select.poll()
            poller.register(sock, select.POLLIN)
            return bool(poller.poll(0))
        readable, _, _ = select.select([sock], [], [], 0)
        return bool(readable)
    except (OSError, ValueError):
        return True


def _close_all(idle: List[_Connection], lock: threading.Lock) -> None:
    with lock:
        conns = list(idle)
        idle.clear()
    for conn in conns:
        conn.close()


def _detail(data: bytes) -> str:
    """The message of an error body, if it has one, for a transport failure's text."""
    try:
        body = json.loads(data)
    except ValueError:
        return ""
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict):
        data_obj = error.get("data")
        source = data_obj if isinstance(data_obj, dict) else error
        reason, message = source.get("reason"), source.get("message")
        if isinstance(message, str):
            return f": {reason}: {message}" if isinstance(reason, str) else f": {message}"
    return ""


def _refusal(data: Mapping[str, Any]) -> Exception:
    """The exception for a refusal object the server sent: a refusal of SPEC §12 as
    in-process, but a server-side failure (status 5xx, e.g. too_many_waits) is a
    transport failure, to be retried."""
    status = data.get("status")
    if isinstance(status, int) and not isinstance(status, bool) and status >= 500:
        return _errors.ConnectionError(f"{data.get('reason')}: {data.get('message')}")
    return _refusal_from_data(data)


# The operations of the coordination (SPEC §16) and provenance (§18) profiles,
# which a server may have off.
_COORDINATION = (
    "set_presence",
    "get_presence",
    "lease",
    "release",
    "get_leases",
    "put_artifact",
    "get_artifact",
    "export_claim",
    "import_claim",
)


def _rpc_failure(error: Any, operation: str) -> Exception:
    """The exception for a JSON-RPC error answering a ``tools/call``."""
    if not isinstance(error, dict):
        return _errors.ConnectionError(f"a JSON-RPC error that is not an object: {error!r}")
    data = error.get("data")
    if isinstance(data, dict) and isinstance(data.get("reason"), str):
        # Refused before dispatch: a malformed Authorization header, a request over
        # request_max_bytes, a host or origin not allowed.
        return _refusal(data)
    code, message = error.get("code"), error.get("message")
    if code == _INVALID_PARAMS and operation in _COORDINATION:
        # An operation of a profile the server has off: an unknown tool over MCP, and
        # `invalid_argument` to the generic call (SPEC §16), as in process.
        return _refusal({"reason": "invalid_argument", "status": 400, "message": f"unknown operation `{operation}`"})
    if code == _INVALID_PARAMS:
        # The engine checks the arguments itself; what MCP's handler refuses as
        # invalid params is the tool's name (the in-process call's ValueError).
        return ValueError(f"unknown operation `{operation}`: {message}")
    if code == _INTERNAL_ERROR:
        return StorageError(f"the server failed: {message}")
    return ParleyError(f"the server answered JSON-RPC error {code}: {message}")
