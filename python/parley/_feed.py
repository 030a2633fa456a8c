"""``Feed``: inbox items, messages or events as they arrive, resuming from a cursor.

A feed reads one item per call (``limit=1``), so its :attr:`Feed.cursor` is always the
position right after the last item it gave out: start a new feed with
``since=feed.cursor`` and it goes on with the next item, nothing skipped and nothing
given twice. Reading one item at a time also means an inbox item is still due when
it is handed over, not a leftover of a page read minutes before.

When the forum has nothing new, a feed waits (the listen profile, SPEC §14.2); it ends
when the forum's waits are ended (:meth:`parley.Forum.end_waits`) or the forum closes.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, Dict, Iterator, Optional, Tuple, TypeVar

from . import _args
from ._args import Id

if TYPE_CHECKING:
    from ._session import Session

__all__ = ["Feed"]

KINDS = {"inbox": "get_inbox", "messages": "get_messages", "events": "get_events"}

# With `wait_max_ms` set to 0 the engine cannot wait: the feed polls this often.
_POLL_S = 0.05

# The item a feed hands over: an inbox item, a message or an event (parley.types).
T = TypeVar("T")


def plan(session: "Session", kind: object, thread: Optional[Id], since: Optional[str]) -> Tuple[str, Dict[str, Any]]:
    """The read behind a feed of ``kind`` and its fixed arguments (without ``since``)."""
    _args.check("kind", kind, str, "a str")
    assert isinstance(kind, str)
    operation = KINDS.get(kind)
    if operation is None:
        raise ValueError(f"unknown feed kind {kind!r}; the kinds are {', '.join(KINDS)}")
    _args.check_opt_str("since", since)
    if kind == "inbox":
        if thread is not None:
            raise ValueError("an inbox feed takes no thread; use kind='messages' or 'events'")
        return operation, _args.reads(extension=session.extension, limit=1)
    return operation, _args.reads(thread=thread, limit=1)


class Feed(Iterator[T]):
    """Yields the items of a read as they arrive; see :meth:`parley.Session.feed`.

    Each ``next()`` blocks (with the GIL released) until there is an item, and raises
    ``StopIteration`` once the forum's waits are ended or the forum is closed.
    """

    def __init__(
        self,
        session: "Session",
        kind: str = "inbox",
        *,
        thread: Optional[Id] = None,
        since: Optional[str] = None,
    ) -> None:
        self._operation, self._args = plan(session, kind, thread, since)
        self._session = session
        self._kind = kind
        self._cursor = since

    @property
    def kind(self) -> str:
        """``"inbox"``, ``"messages"`` or ``"events"``."""
        return self._kind

    @property
    def cursor(self) -> Optional[str]:
        """Where the feed stands: pass it as ``since`` to resume right after the last
        item given out (``None`` until the first read of a feed started without one)."""
        return self._cursor

    def __repr__(self) -> str:
        return f"<parley.Feed kind={self._kind!r} cursor={self._cursor!r}>"

    def __iter__(self) -> "Feed[T]":
        return self

    def __next__(self) -> T:
        forum = self._session.forum
        while not forum.waits_ended:
            try:
                wait = forum.limits["wait_max_ms"]
                args = dict(self._args, wait_ms=wait)
                if self._cursor is not None:
                    args["since"] = self._cursor
                page = self._session.call(self._operation, args)
            except ValueError:
                if forum.closed:
                    break
                raise
            self._cursor = page["cursor"]
            if page["items"]:
                item: T = page["items"][0]
                return item
            if wait == 0 and not forum.waits_ended:
                time.sleep(_POLL_S)
        raise StopIteration
