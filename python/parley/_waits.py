"""Waiting on an event loop: the commit watch behind ``parley.aio``'s waiting reads and
feeds, and the one way ``parley.aio`` runs a session's call off the loop.

A read of the listen profile (SPEC §14.2) runs at once (``wait_ms=0``); while it has
nothing, the coroutine awaits the forum's commit descriptor, watched by the event
loop (``loop.add_reader``), and reads again after each commit. Without
``add_reader`` (e.g. a proactor loop), or without a descriptor (the remote forum of
:func:`parley.connect`, whose server does the waiting), the wait falls back to a
pool thread.
"""

from __future__ import annotations

import asyncio
import os
import weakref
from typing import Any, Dict, Mapping, Optional, Set

from . import _args, _feed
from ._errors import Refusal
from ._session import ForumLike, Session

__all__ = ["call", "waiting_read"]


class _Watch:
    """One event loop's watch over one forum's commits.

    Owns a commit descriptor of the forum (``Forum._commit_fd``) registered with the
    loop. Each time it is readable the watch drains it, counts one more
    ``generation`` and wakes every coroutine awaiting :meth:`changed`. End-of-file
    means the forum closed: the watch unregisters and closes its descriptor, and wakes
    everyone for the last time.
    """

    def __init__(self, fd: int, loop: asyncio.AbstractEventLoop) -> None:
        self.generation = 0
        self.closed = False
        self._fd = fd
        self._waiters: Set["asyncio.Future[None]"] = set()
        # No reference to the loop: the registry below is keyed by it weakly.
        self._loop = weakref.ref(loop)
        self._release = weakref.finalize(self, os.close, fd)
        try:
            loop.add_reader(fd, self._readable)
        except BaseException:
            self._release()
            raise

    def _readable(self) -> None:
        end = False
        while True:
            try:
                chunk = os.read(self._fd, 4096)
            except BlockingIOError:
                break
            if not chunk:
                end = True
                break
        self.generation += 1
        if end:
            self.closed = True
            loop = self._loop()
            if loop is not None:
                loop.remove_reader(self._fd)
            self._release()
        waiters, self._waiters = self._waiters, set()
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(None)

    async def changed(self, seen: int, timeout: Optional[float]) -> None:
        """Returns once ``generation`` is past ``seen``, the forum closed, or ``timeout``
        seconds passed (``None``: no time limit)."""
        if self.generation != seen or self.closed:
            return
        loop = asyncio.get_running_loop()
        waiter: "asyncio.Future[None]" = loop.create_future()
        self._waiters.add(waiter)
        timer = None if timeout is None else loop.call_later(timeout, _settle, waiter)
        try:
            await waiter
        finally:
            if timer is not None:
                timer.cancel()
            self._waiters.discard(waiter)


def _settle(waiter: "asyncio.Future[None]") -> None:
    if not waiter.done():
        waiter.set_result(None)


# forum -> loop -> watch, both weakly: a watch lives as long as its forum and its loop.
_watches: "weakref.WeakKeyDictionary[ForumLike, weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Watch]]" = (
    weakref.WeakKeyDictionary()
)


def _watch(forum: ForumLike) -> Optional[_Watch]:
    """The running loop's watch on ``forum``, made on first use; ``None`` where the
    loop or the platform cannot watch a descriptor. ``ValueError`` once closed."""
    loop = asyncio.get_running_loop()
    per_loop = _watches.setdefault(forum, weakref.WeakKeyDictionary())
    watch = per_loop.get(loop)
    if watch is not None and not watch.closed:
        return watch
    try:
        fd = forum._commit_fd()
    except NotImplementedError:
        return None
    try:
        watch = _Watch(fd, loop)
    except NotImplementedError:
        return None
    per_loop[loop] = watch
    return watch


async def call(session: Session, operation: str, args: Optional[Mapping[str, Any]]) -> Dict[str, Any]:
    """One logical call of ``session`` off the event loop: each attempt runs in a pool
    thread, and the pauses between the attempts a session with ``retries`` makes are
    ``asyncio.sleep``, holding no thread."""
    forum, token = session.forum, session.token
    return await session._policy.run_async(lambda: asyncio.to_thread(forum.call, token, operation, args))


def _bad_wait(forum: ForumLike, wait_ms: int) -> Optional[Refusal]:
    """The engine's refusal of a ``wait_ms`` out of range (SPEC §14.2), which a read
    run with ``wait_ms`` 0 cannot give."""
    most = forum.limits["wait_max_ms"]
    if 0 <= wait_ms <= most:
        return None
    return Refusal.from_data(
        {
            "reason": "invalid_argument",
            "status": 400,
            "message": f"`wait_ms` must be an integer from 0 to {most}",
            "field": "wait_ms",
            "limit": "wait_max_ms",
        }
    )


async def waiting_read(
    session: Session, operation: str, args: Mapping[str, Any], wait_ms: Optional[int]
) -> Dict[str, Any]:
    """Runs a read of the listen profile the way the engine runs ``wait_ms`` (SPEC §14.2),
    waiting on the event loop instead of in a thread. ``wait_ms=None``: wait until there
    is an item or the forum's waits end."""
    forum = session.forum
    loop = asyncio.get_running_loop()
    start = loop.time()
    watch = _watch(forum)
    if watch is None:
        return await _waiting_read_in_thread(session, operation, args, wait_ms)
    # `wait_ms` 0 still checks the profile is on; the range is checked below, after the
    # read's own checks, in the engine's order.
    plain = dict(args, wait_ms=0)
    seen = watch.generation
    result = await call(session, operation, plain)
    if wait_ms is not None:
        refusal = _bad_wait(forum, wait_ms)
        if refusal is not None:
            raise refusal
    deadline = None if wait_ms is None else start + wait_ms / 1000
    while not _args.has_items(result) and not forum.waits_ended and not watch.closed:
        timeout = None
        if deadline is not None:
            timeout = deadline - loop.time()
            if timeout <= 0:
                break
        await watch.changed(seen, timeout)
        # Counted before the read: a commit during it rings again.
        seen = watch.generation
        try:
            result = await call(session, operation, plain)
        except ValueError:
            if forum.closed:  # closed while waiting: the current result stands
                break
            raise
    return result


async def _waiting_read_in_thread(
    session: Session, operation: str, args: Mapping[str, Any], wait_ms: Optional[int]
) -> Dict[str, Any]:
    """The fallback of :func:`waiting_read`: the engine waits, in a pool thread."""
    forum = session.forum
    if wait_ms is not None:
        return await call(session, operation, dict(args, wait_ms=wait_ms))
    while True:
        most = forum.limits["wait_max_ms"]
        result = await call(session, operation, dict(args, wait_ms=most))
        if _args.has_items(result) or forum.waits_ended:
            return result
        if most == 0:
            await asyncio.sleep(_feed._POLL_S)
