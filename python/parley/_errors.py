"""The exceptions of Parley.

A refusal (SPEC §12) is an ordinary outcome of the protocol: the request was understood
and declined, and nothing was written. It raises :class:`Refusal`, or the subclass for its
status class, carrying the stable ``reason`` and ``status``. Failures of the library
itself (storage, a newer file format, a file that is not a forum, a server out of
reach) raise other :class:`ParleyError` subclasses.
"""

from __future__ import annotations

import builtins
from typing import Any, Dict, List, Mapping, Optional, Type

from .types import Lease, State

__all__ = [
    "ParleyError",
    "Refusal",
    "BadRequest",
    "Unauthorized",
    "Forbidden",
    "NotFound",
    "Conflict",
    "StateChanged",
    "EchoedBody",
    "NoProgress",
    "LeaseConflict",
    "AlreadyImported",
    "PayloadTooLarge",
    "RateLimited",
    "StorageError",
    "InternalError",
    "ConnectionError",
    "NotAForumError",
    "SchemaTooNewError",
]


class ParleyError(Exception):
    """Base class of every exception the library raises on its own account."""


class Refusal(ParleyError):
    """The forum declined the request; nothing was written.

    ``reason`` is the stable machine-readable reason (e.g. ``"self_reply"``), ``status``
    its HTTP-style code, ``message`` one line for a human or a model. ``field``,
    ``right``, ``limit``, ``retry_after_ms`` and ``state`` are set where they help, else
    ``None``.
    ``data`` is the refusal object exactly as every transport sends it.
    """

    reason: str
    status: int
    message: str
    field: Optional[str]
    right: Optional[str]
    limit: Optional[str]
    retry_after_ms: Optional[int]
    state: Optional[str]

    def __init__(self, data: Mapping[str, Any]) -> None:
        self.data: Dict[str, Any] = dict(data)
        self.reason = str(self.data.get("reason", ""))
        self.status = int(self.data.get("status", 0))
        self.message = str(self.data.get("message", ""))
        self.field = self.data.get("field")
        self.right = self.data.get("right")
        self.limit = self.data.get("limit")
        self.retry_after_ms = self.data.get("retry_after_ms")
        self.state = self.data.get("state")
        super().__init__(f"{self.reason}: {self.message}")

    @staticmethod
    def from_data(data: Mapping[str, Any]) -> "Refusal":
        """The exception for a refusal object, of the subclass for its ``status``.

        Useful for refusals that arrive as data, such as an MCP result's
        ``structuredContent["error"]``.
        """
        status = data.get("status")
        cls = _BY_STATUS.get(status, Refusal) if isinstance(status, int) else Refusal
        if cls is Conflict:
            cls = _BY_REASON.get(str(data.get("reason")), Conflict)
        return cls(data)

    def __reduce__(self) -> Any:
        return (type(self), (self.data,))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.data!r})"


class BadRequest(Refusal):
    """Status 400: the envelope or an argument is malformed."""


class Unauthorized(Refusal):
    """Status 401: the token is missing, unknown or revoked."""


class Forbidden(Refusal):
    """Status 403: a right or the authority over the thread is missing."""


class NotFound(Refusal):
    """Status 404: a thread, message, claim or identity does not exist."""


class Conflict(Refusal):
    """Status 409: the forum's state forbids the act (closed, self reply, transition …)."""


class StateChanged(Conflict):
    """Status 409, ``state_changed``: a ``decide``, ``mark`` or ``reopen`` sent with
    ``if_state`` found the thread in another state (SPEC §14.5). ``state`` is the state
    it is in now; nothing was written. Show it, and let whoever decided look again."""

    state: State


class EchoedBody(Conflict):
    """Status 409, ``echoed_body`` (the guards profile, SPEC §15): the body, folded
    (case, punctuation and spacing ignored), equals one of the thread's newest messages
    by another identity; the ``message`` names it. Nothing was written. Say something
    new, or move the thread on: ``decide`` or ``mark`` it if you may, or ask the person."""


class NoProgress(Conflict):
    """Status 409, ``no_progress`` (the guards profile, SPEC §15): the thread took
    ``progress_max_messages`` (the ``limit``) messages by agents without progress (no
    change of state, no claim changing status, no person speaking). Nothing was
    written. Stop talking in it: ``decide`` or ``mark`` it if you may, or ask the
    person; the thread's ``since_progress`` shows the count."""


class LeaseConflict(Conflict):
    """Status 409, ``lease_conflict`` (the coordination profile, SPEC §16.2): an active
    lease of another holder overlaps the resource, and one of the two is exclusive.
    ``leases`` lists the conflicting leases (holder, ``expires_at``, note). Nothing was
    written. Do not touch the resource: work on something else, ask the holder, or try
    again after the lease expires."""

    leases: List[Lease]

    def __init__(self, data: Mapping[str, Any]) -> None:
        super().__init__(data)
        self.leases = list(self.data.get("leases") or [])


class AlreadyImported(Conflict):
    """``already_imported`` (SPEC §18.3): this forum already imported that realm's
    claim (whatever the bundle's ``exported_at``). Nothing was written; the claim
    imported first stands."""


# The 409 reasons with a class of their own.
_BY_REASON: Dict[str, Type[Conflict]] = {
    "state_changed": StateChanged,
    "echoed_body": EchoedBody,
    "no_progress": NoProgress,
    "lease_conflict": LeaseConflict,
    "already_imported": AlreadyImported,
}


class PayloadTooLarge(Refusal):
    """Status 413: the request is larger than ``request_max_bytes``."""


class RateLimited(Refusal):
    """Status 429: too many writes; retry after ``retry_after_ms`` milliseconds."""


_BY_STATUS: Dict[int, Type[Refusal]] = {
    400: BadRequest,
    401: Unauthorized,
    403: Forbidden,
    404: NotFound,
    409: Conflict,
    413: PayloadTooLarge,
    429: RateLimited,
}


class StorageError(ParleyError):
    """The storage layer failed: I/O, a damaged file, a file held open elsewhere."""


class InternalError(ParleyError):
    """A bug inside Parley: the engine panicked, and the panic was caught before it
    reached Python. It says nothing about the forum file, and it is not worth a retry
    (a session with ``retries`` does not repeat the call); report it with the call
    that caused it."""


class ConnectionError(ParleyError, builtins.ConnectionError):
    """The server of a remote forum (:func:`parley.connect`) could not be reached or did
    not answer properly: connection refused or reset, a time-out, a response that is not
    JSON or is cut short, an HTTP 5xx (such as 503 ``too_many_waits``).

    As after a :class:`StorageError`, the caller cannot tell whether a post was written:
    a session with ``retries`` runs the call again, a post under one idempotency key.
    Also a built-in :class:`ConnectionError` (an ``OSError``), so code catching that
    catches this too.
    """


class NotAForumError(ParleyError):
    """The file is not a Parley forum (another application's database, or damaged)."""


class SchemaTooNewError(ParleyError):
    """The forum file was written by a newer version of Parley than this one."""

    def __init__(self, message: str, found: int, supported: int) -> None:
        super().__init__(message)
        self.found = found
        self.supported = supported

    def __reduce__(self) -> Any:
        return (type(self), (str(self), self.found, self.supported))


# Tracebacks name the public home of each exception (`parley.Conflict`), not this module.
for _cls in (
    ParleyError,
    Refusal,
    *_BY_STATUS.values(),
    *_BY_REASON.values(),
    StorageError,
    InternalError,
    ConnectionError,
    NotAForumError,
    SchemaTooNewError,
):
    _cls.__module__ = "parley"
del _cls


def _refusal_from_data(data: Mapping[str, Any]) -> Refusal:
    """The exception for a refusal object (called by the native layer)."""
    return Refusal.from_data(data)
