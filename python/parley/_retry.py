"""Safe retries: idempotency keys (SPEC §14.3) and the failures worth another try.

A session made with ``retries=N`` runs a call again, up to ``N`` more times, when it
failed with one of :data:`RETRIED`: failures of the storage layer (I/O, a full disk)
or, for a remote forum, of the connection to its server, which may pass, and after
which the caller cannot tell whether a post was written.
Each post of such a session carries an idempotency key, generated once per logical
call unless the caller gave one, and every attempt sends the same envelope under the
same key: if an earlier attempt was written, the retry replays it (``"replayed":
true``) instead of posting twice.

Never retried: refusals (:class:`parley.Refusal`, including ``rate_limited``, whose
``retry_after_ms`` is the caller's to honour), type and value errors, a closed forum
(``ValueError``), and every other exception. Reads are retried as they are: running
one again changes nothing.
"""

from __future__ import annotations

import asyncio
import math
import time
import uuid
from typing import Any, Awaitable, Callable, Dict, Mapping, Optional, Tuple, Type, TypeVar

from . import _args
from ._errors import ConnectionError, StorageError

__all__ = ["RETRIED", "Policy", "new_idempotency_key"]

T = TypeVar("T")

RETRIED: Tuple[Type[BaseException], ...] = (StorageError, ConnectionError)
"""The exceptions a session with ``retries`` runs a call again after: a failed store,
or (for :func:`parley.connect`) a server that could not be reached or did not answer."""

# The longest pause between two attempts, in seconds, however many there are.
_MAX_DELAY_S = 2.0


def new_idempotency_key() -> str:
    """A fresh idempotency key: a random UUID (version 4) as text, 36 characters of
    ``[0-9a-f-]``, within SPEC §14.3's 1-128 characters of ``[A-Za-z0-9._:-]``."""
    return str(uuid.uuid4())


class Policy:
    """How often and how patiently a session retries: ``retries`` more attempts after
    the first, the first retry after ``backoff`` seconds, each later one after twice
    the pause before it (at most two seconds)."""

    __slots__ = ("retries", "backoff")

    def __init__(self, retries: object = 0, backoff: object = 0.05) -> None:
        _args.check("retries", retries, int, "an int")
        _args.check("retry_backoff", backoff, (int, float), "a number of seconds (int or float)")
        assert isinstance(retries, int) and isinstance(backoff, (int, float))
        if retries < 0:
            raise ValueError(f"retries must be 0 or more, not {retries}")
        if not math.isfinite(backoff) or backoff < 0:
            raise ValueError(f"retry_backoff must be a finite number of seconds, 0 or more, not {backoff!r}")
        self.retries: int = retries
        self.backoff: float = float(backoff)

    def __repr__(self) -> str:
        return f"Policy(retries={self.retries}, backoff={self.backoff})"

    def delay(self, attempt: int) -> float:
        """The pause before retry number ``attempt`` (0 for the first retry)."""
        return min(_MAX_DELAY_S, self.backoff * float(2 ** min(attempt, 32)))

    def keyed(self, operation: str, args: Optional[Mapping[str, Any]]) -> Optional[Mapping[str, Any]]:
        """``args``, with a new idempotency key when the call is a post this policy may
        retry and it names no key of its own (a ``None`` key is no key, as in the engine)."""
        if self.retries == 0 or operation != "post" or not isinstance(args, Mapping):
            return args
        if args.get("idempotency_key") is not None:
            return args
        return {**args, "idempotency_key": new_idempotency_key()}

    def run(self, attempt: Callable[[], T]) -> T:
        """Runs ``attempt``, and runs it again after each failure in :data:`RETRIED`
        while retries are left; the last failure propagates."""
        for n in range(self.retries):
            try:
                return attempt()
            except RETRIED:
                time.sleep(self.delay(n))
        return attempt()

    async def run_async(self, attempt: Callable[[], Awaitable[T]]) -> T:
        """:meth:`run` for coroutines: the pauses are ``asyncio.sleep``, holding no thread."""
        for n in range(self.retries):
            try:
                return await attempt()
            except RETRIED:
                await asyncio.sleep(self.delay(n))
        return await attempt()


def posted(result: Dict[str, Any]) -> Dict[str, Any]:
    """A post's result as the sessions return it: ``replayed`` is always there,
    ``False`` unless the post was a replay (the engine only sends it when ``true``)."""
    result.setdefault("replayed", False)
    return result
