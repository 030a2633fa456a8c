"""The Parley API as coroutines, for asyncio programs.

Every engine call runs in the default thread pool (``asyncio.to_thread``) and the
native layer releases the GIL while the engine works, so awaiting a post never
blocks the event loop::

    import parley.aio

    async def main() -> None:
        async with await parley.aio.open("forum.redb") as forum:
            alice = forum.session(await forum.create_token("alice"))
            asked = await alice.ask("Which port does the dev server use?")
            async for item in alice.feed("inbox"):
                ...  # each thread that becomes due for alice, as it arrives

Waiting (``wait=`` on the reads, :meth:`AsyncSession.feed`) holds no thread: the read
runs at once (``wait_ms=0``), and while it has nothing the coroutine awaits the
forum's commit descriptor, watched by the event loop (``loop.add_reader``), and
reads again after each commit. A thousand waiting coroutines are a thousand
futures, not a thousand threads. (On an event loop without ``add_reader``, such as
Windows' proactor loop, a wait falls back to a pool thread.) The machinery is in
``parley._waits``. :func:`connect` gives an :class:`AsyncSession` with a forum that
``parley serve --http`` serves; there the server waits, and each waiting read holds
a pool thread for its call.

A session made with ``retries`` retries here too, with the pauses between attempts
on the event loop (``asyncio.sleep``); see :class:`parley.Session`.
"""

from __future__ import annotations

import asyncio
import datetime
import os
from typing import Any, AsyncIterator, Awaitable, Dict, List, Literal, Mapping, Optional, Sequence, TypeVar, Union, cast, overload

from . import _args, _feed, _remote, _retry, _tools
from ._acts import Acts, Evidence, Time
from ._args import Id
from ._coordination import AsyncCoordination
from ._provenance import AsyncProvenance
from ._errors import Refusal
from ._forum import Forum
from ._session import Session
from .types import (
    AuthorKind,
    ClaimView,
    Digest,
    Event,
    EventsPage,
    FeedKind,
    IdentityInfo,
    InboxItem,
    InboxPage,
    Kind,
    Manifest,
    Message,
    MessagesPage,
    PostResult,
    Right,
    SearchPage,
    State,
    ThreadsPage,
    ThreadView,
    Whoami,
)
from ._waits import call as _call
from ._waits import waiting_read as _waiting_read

__all__ = ["AsyncFeed", "AsyncForum", "AsyncSession", "connect", "open"]

# The item an AsyncFeed hands over: an inbox item, a message or an event.
T = TypeVar("T")


async def open(
    path: Union[str, "os.PathLike[str]", None] = None,
    *,
    realm: str = "ainotes",
    limits: Optional[Mapping[str, int]] = None,
    profiles: Sequence[str] = ("dialectic", "listen", "guards", "coordination", "provenance"),
    guards: Optional[bool] = None,
    coordination: Optional[bool] = None,
    provenance: Optional[bool] = None,
    durable: bool = True,
    clock: Optional[Union[str, datetime.datetime]] = None,
) -> "AsyncForum":
    """Opens (or creates) a forum off the event loop; the arguments are :class:`parley.Forum`'s."""
    forum = await asyncio.to_thread(
        Forum,
        path,
        realm=realm,
        limits=limits,
        profiles=profiles,
        guards=guards,
        coordination=coordination,
        provenance=provenance,
        durable=durable,
        clock=clock,
    )
    return AsyncForum(forum)


def connect(
    url: str,
    token: str,
    extension: Optional[str] = None,
    *,
    provenance: Optional[Mapping[str, str]] = None,
    retries: int = 0,
    retry_backoff: float = 0.05,
    timeout: float = _remote.DEFAULT_TIMEOUT,
) -> "AsyncSession":
    """An :class:`AsyncSession` with the forum a ``parley serve --http`` serves at
    ``url``; the arguments are :func:`parley.connect`'s. Nothing is sent yet. Each call
    runs in a pool thread; so does a waiting read (the server waits, not the loop)."""
    return AsyncSession(
        _remote.connect(
            url,
            token,
            extension,
            provenance=provenance,
            retries=retries,
            retry_backoff=retry_backoff,
            timeout=timeout,
        )
    )


class AsyncFeed(AsyncIterator[T]):
    """Yields the items of a read as they arrive; see :meth:`AsyncSession.feed`.

    Ends (``StopAsyncIteration``) once the forum's waits are ended or the forum is
    closed. Breaking out of ``async for`` leaves nothing behind; :attr:`cursor` says
    where to resume.
    """

    def __init__(
        self,
        session: Session,
        kind: str = "inbox",
        *,
        thread: Optional[Id] = None,
        since: Optional[str] = None,
    ) -> None:
        self._operation, self._args = _feed.plan(session, kind, thread, since)
        self._session = session
        self._kind = kind
        self._cursor = since

    @property
    def kind(self) -> str:
        """``"inbox"``, ``"messages"`` or ``"events"``."""
        return self._kind

    @property
    def cursor(self) -> Optional[str]:
        """Pass it as ``since`` to resume right after the last item given out."""
        return self._cursor

    def __repr__(self) -> str:
        return f"<parley.aio.AsyncFeed kind={self._kind!r} cursor={self._cursor!r}>"

    def __aiter__(self) -> "AsyncFeed[T]":
        return self

    async def __anext__(self) -> T:
        forum = self._session.forum
        while not forum.waits_ended and not forum.closed:
            args = dict(self._args)
            if self._cursor is not None:
                args["since"] = self._cursor
            try:
                page = await _waiting_read(self._session, self._operation, args, None)
            except ValueError:
                if forum.closed:
                    break
                raise
            self._cursor = page["cursor"]
            if page["items"]:
                item: T = page["items"][0]
                return item
        raise StopAsyncIteration


class AsyncForum:
    """A :class:`parley.Forum` whose blocking methods are coroutines.

    ``async with`` closes it on exit.
    """

    def __init__(self, forum: Forum) -> None:
        if not isinstance(forum, Forum):
            raise TypeError(f"forum must be a parley.Forum, not {type(forum).__name__}")
        self._forum = forum

    @property
    def forum(self) -> Forum:
        """The wrapped synchronous forum."""
        return self._forum

    @property
    def closed(self) -> bool:
        return self._forum.closed

    @property
    def realm(self) -> str:
        return self._forum.realm

    @property
    def waits_ended(self) -> bool:
        """Whether :meth:`end_waits` (or :meth:`close`) was called."""
        return self._forum.waits_ended

    def end_waits(self) -> None:
        """Ends every wait and feed, now and later; see :meth:`parley.Forum.end_waits`."""
        self._forum.end_waits()

    def __repr__(self) -> str:
        return f"<parley.aio.AsyncForum {self._forum!r}>"

    async def __aenter__(self) -> "AsyncForum":
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    async def close(self) -> None:
        """Releases the forum and its file, ending every wait and feed first."""
        await asyncio.to_thread(self._forum.close)

    async def create_token(
        self,
        handle: str,
        *,
        kind: AuthorKind = "llm",
        rights: Sequence[Right] = ("read", "write"),
        label: Optional[str] = None,
    ) -> str:
        """Issues a token; see :meth:`parley.Forum.create_token`."""
        return await asyncio.to_thread(self._forum.create_token, handle, kind=kind, rights=rights, label=label)

    async def revoke_token(self, token: str) -> bool:
        return await asyncio.to_thread(self._forum.revoke_token, token)

    async def identities(self) -> List[IdentityInfo]:
        return await asyncio.to_thread(self._forum.identities)

    async def call(
        self, token: Optional[str], operation: str, args: Optional[Mapping[str, Any]] = None
    ) -> Dict[str, Any]:
        """The generic call; see :meth:`parley.Forum.call`."""
        return await asyncio.to_thread(self._forum.call, token, operation, args)

    async def mcp(self, token: Optional[str], request: Union[Mapping[str, Any], str]) -> Optional[Dict[str, Any]]:
        """The MCP handler; see :meth:`parley.Forum.mcp`."""
        return await asyncio.to_thread(self._forum.mcp, token, request)

    async def manifest(self) -> Manifest:
        return await asyncio.to_thread(self._forum.manifest)

    def session(
        self,
        token: str,
        extension: Optional[str] = None,
        *,
        provenance: Optional[Mapping[str, str]] = None,
        retries: int = 0,
        retry_backoff: float = 0.05,
    ) -> "AsyncSession":
        """An :class:`AsyncSession` speaking for ``token``; ``retries`` as in
        :meth:`parley.Forum.session` (the pauses between attempts hold no thread)."""
        session = self._forum.session(
            token, extension, provenance=provenance, retries=retries, retry_backoff=retry_backoff
        )
        return AsyncSession(session)


class AsyncSession(AsyncCoordination, AsyncProvenance, Acts[Awaitable[PostResult]]):
    """A :class:`parley.Session` whose methods are coroutines (the act methods return
    awaitables of the result)."""

    def __init__(self, session: Session) -> None:
        if not isinstance(session, Session):
            raise TypeError(f"session must be a parley.Session, not {type(session).__name__}")
        self._session = session

    @property
    def sync(self) -> Session:
        """The wrapped synchronous session."""
        return self._session

    @property
    def extension(self) -> Optional[str]:
        return self._session.extension

    @property
    def retries(self) -> int:
        """How many more times a call failing with :class:`parley.StorageError` is run."""
        return self._session.retries

    def __repr__(self) -> str:
        return f"<parley.aio.AsyncSession extension={self._session.extension!r}>"

    def with_extension(self, extension: Optional[str]) -> "AsyncSession":
        return AsyncSession(self._session.with_extension(extension))

    async def call(self, operation: str, args: Optional[Mapping[str, Any]] = None) -> Dict[str, Any]:
        """The generic call; see :meth:`parley.Session.call`."""
        return await _call(self._session, operation, self._session._policy.keyed(operation, args))

    async def post(
        self,
        kind: Kind,
        body: str,
        *,
        thread: Optional[Id] = None,
        parent: Optional[Id] = None,
        to: Optional[str] = None,
        state: Optional[State] = None,
        if_state: Optional[State] = None,
        claim: Optional[Id] = None,
        evidence: Optional[Evidence] = None,
        supersedes: Optional[Sequence[Id]] = None,
        valid_until: Optional[Time] = None,
        provenance: Optional[Mapping[str, str]] = None,
        idempotency_key: Optional[str] = None,
    ) -> PostResult:
        """Posts one envelope; see :meth:`parley.Session.post` (``idempotency_key``,
        ``replayed``, and how a session with ``retries`` retries)."""
        env = self._session._envelope(
            kind,
            body,
            thread=thread,
            parent=parent,
            to=to,
            state=state,
            if_state=if_state,
            claim=claim,
            evidence=evidence,
            supersedes=supersedes,
            valid_until=valid_until,
            provenance=provenance,
            idempotency_key=idempotency_key,
        )
        return cast(PostResult, _retry.posted(await _call(self._session, "post", env)))

    # Reads (SPEC §8) -------------------------------------------------------------------

    async def thread(self, thread: Id) -> ThreadView:
        _args.check_id("thread", thread)
        return cast(ThreadView, await _call(self._session, "get_thread", {"thread": thread}))

    async def _read(self, operation: str, args: Dict[str, Any]) -> Dict[str, Any]:
        wait_ms = args.pop("wait_ms", None)
        if wait_ms is None:
            return await _call(self._session, operation, args)
        return await _waiting_read(self._session, operation, args, wait_ms)

    async def threads(
        self,
        *,
        state: Optional[State] = None,
        since: Optional[str] = None,
        limit: Optional[int] = None,
        wait: Optional[float] = None,
    ) -> ThreadsPage:
        """``list_threads``; ``wait`` (seconds) as in :meth:`inbox`."""
        args = _args.reads(state=state, since=since, limit=limit, wait=wait)
        return cast(ThreadsPage, await self._read("list_threads", args))

    async def inbox(
        self, *, since: Optional[str] = None, limit: Optional[int] = None, wait: Optional[float] = None
    ) -> InboxPage:
        """``get_inbox``; see :meth:`parley.Session.inbox`.

        ``wait`` (seconds) waits for a thread to become due without holding a thread:
        the coroutine sleeps on the event loop until a commit, then reads again.
        """
        args = _args.reads(since=since, extension=self._session.extension, limit=limit, wait=wait)
        return cast(InboxPage, await self._read("get_inbox", args))

    async def events(
        self,
        *,
        thread: Optional[Id] = None,
        since: Optional[str] = None,
        limit: Optional[int] = None,
        wait: Optional[float] = None,
    ) -> EventsPage:
        """``get_events``; ``wait`` (seconds) as in :meth:`inbox`."""
        args = _args.reads(thread=thread, since=since, limit=limit, wait=wait)
        return cast(EventsPage, await self._read("get_events", args))

    async def messages(
        self,
        *,
        thread: Optional[Id] = None,
        since: Optional[str] = None,
        limit: Optional[int] = None,
        wait: Optional[float] = None,
    ) -> MessagesPage:
        """``get_messages``; ``wait`` (seconds) as in :meth:`inbox`."""
        args = _args.reads(thread=thread, since=since, limit=limit, wait=wait)
        return cast(MessagesPage, await self._read("get_messages", args))

    async def search(
        self,
        q: str,
        *,
        thread: Optional[Id] = None,
        since: Optional[str] = None,
        limit: Optional[int] = None,
    ) -> SearchPage:
        """``search``, newest first; see :meth:`parley.Session.search`."""
        args = _args.search(q=q, thread=thread, since=since, limit=limit)
        return cast(SearchPage, await _call(self._session, "search", args))

    @overload
    def feed(
        self, kind: Literal["inbox"] = ..., *, thread: Optional[Id] = None, since: Optional[str] = None
    ) -> AsyncFeed[InboxItem]: ...
    @overload
    def feed(
        self, kind: Literal["messages"], *, thread: Optional[Id] = None, since: Optional[str] = None
    ) -> AsyncFeed[Message]: ...
    @overload
    def feed(
        self, kind: Literal["events"], *, thread: Optional[Id] = None, since: Optional[str] = None
    ) -> AsyncFeed[Event]: ...
    def feed(
        self, kind: FeedKind = "inbox", *, thread: Optional[Id] = None, since: Optional[str] = None
    ) -> Union[AsyncFeed[InboxItem], AsyncFeed[Message], AsyncFeed[Event]]:
        """``async for item in session.feed(...)``: inbox items, messages or events as
        they arrive; see :meth:`parley.Session.feed`. Waiting holds no thread."""
        return AsyncFeed(self._session, kind, thread=thread, since=since)

    async def digest(self, thread: Id) -> Digest:
        """``get_digest``; see :meth:`parley.Session.digest`."""
        _args.check_id("thread", thread)
        return cast(Digest, await _call(self._session, "get_digest", {"thread": thread}))

    get_digest = digest

    async def claim_status(self, claim: Id) -> ClaimView:
        _args.check_id("claim", claim)
        return cast(ClaimView, await _call(self._session, "get_claim", {"claim": claim}))

    get_claim = claim_status

    async def whoami(self) -> Whoami:
        return cast(Whoami, await _call(self._session, "whoami", None))

    async def manifest(self) -> Manifest:
        return cast(Manifest, await _call(self._session, "get_manifest", None))

    async def tools(self, format: str = "mcp", strict: bool = False) -> List[Dict[str, Any]]:
        """The operations as tool schemas; see :meth:`parley.Session.tools`."""
        return await asyncio.to_thread(self._session.tools, format, strict)

    async def dispatch(
        self, name: str, arguments: Union[Mapping[str, Any], str, None] = None
    ) -> Dict[str, Any]:
        """Runs a model's tool call; see :meth:`parley.Session.dispatch`.

        A read with a ``wait_ms`` waits on the event loop, as :meth:`inbox` does.
        """
        session = self._session
        args, error = await asyncio.to_thread(_tools.prepare, session, name, arguments)
        if error is not None:
            return error
        wait_ms = args.get("wait_ms")
        try:
            # Only a well-formed, positive wait waits here; any other value goes to the
            # engine as it is, which refuses it (or returns at once) without waiting.
            if name in _args.WAITING_READS and type(wait_ms) is int and wait_ms > 0:
                del args["wait_ms"]
                return await _waiting_read(session, name, args, wait_ms)
            return await _call(session, name, session._policy.keyed(name, args))
        except Refusal as refusal:
            return _tools.refused(refusal)
