"""The Parley API as coroutines, for asyncio programs.

Every engine call runs in the default thread pool (``asyncio.to_thread``) and the
native layer releases the GIL while the engine works, so awaiting a post never
blocks the event loop::

    import parley.aio

    async def main() -> None:
        async with await parley.aio.open("forum.redb") as forum:
            alice = forum.session(await forum.create_token("alice"))
            asked = await alice.ask("Which port does the dev server use?")
"""

from __future__ import annotations

import asyncio
import os
import datetime
from typing import Any, Dict, List, Mapping, Optional, Sequence, Union

from ._args import Id
from ._forum import Forum
from ._session import Session

__all__ = ["AsyncForum", "AsyncSession", "open"]

Time = Union[str, datetime.datetime]
Evidence = Sequence[Mapping[str, str]]


async def open(
    path: Union[str, "os.PathLike[str]", None] = None,
    *,
    realm: str = "ainotes",
    limits: Optional[Mapping[str, int]] = None,
    profiles: Sequence[str] = ("dialectic",),
    durable: bool = True,
    clock: Optional[Union[str, datetime.datetime]] = None,
) -> "AsyncForum":
    """Opens (or creates) a forum off the event loop; the arguments are :class:`parley.Forum`'s."""
    forum = await asyncio.to_thread(
        Forum, path, realm=realm, limits=limits, profiles=profiles, durable=durable, clock=clock
    )
    return AsyncForum(forum)


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

    def __repr__(self) -> str:
        return f"<parley.aio.AsyncForum {self._forum!r}>"

    async def __aenter__(self) -> "AsyncForum":
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    async def close(self) -> None:
        """Releases the forum and its file."""
        await asyncio.to_thread(self._forum.close)

    async def create_token(
        self,
        handle: str,
        *,
        kind: str = "llm",
        rights: Sequence[str] = ("read", "write"),
        label: Optional[str] = None,
    ) -> str:
        """Issues a token; see :meth:`parley.Forum.create_token`."""
        return await asyncio.to_thread(self._forum.create_token, handle, kind=kind, rights=rights, label=label)

    async def revoke_token(self, token: str) -> bool:
        return await asyncio.to_thread(self._forum.revoke_token, token)

    async def identities(self) -> List[Dict[str, Any]]:
        return await asyncio.to_thread(self._forum.identities)

    async def call(
        self, token: Optional[str], operation: str, args: Optional[Mapping[str, Any]] = None
    ) -> Dict[str, Any]:
        """The generic call; see :meth:`parley.Forum.call`."""
        return await asyncio.to_thread(self._forum.call, token, operation, args)

    async def mcp(self, token: Optional[str], request: Union[Mapping[str, Any], str]) -> Optional[Dict[str, Any]]:
        """The MCP handler; see :meth:`parley.Forum.mcp`."""
        return await asyncio.to_thread(self._forum.mcp, token, request)

    async def manifest(self) -> Dict[str, Any]:
        return await asyncio.to_thread(self._forum.manifest)

    def session(
        self,
        token: str,
        extension: Optional[str] = None,
        *,
        provenance: Optional[Mapping[str, str]] = None,
    ) -> "AsyncSession":
        """An :class:`AsyncSession` speaking for ``token``."""
        return AsyncSession(self._forum.session(token, extension, provenance=provenance))


class AsyncSession:
    """A :class:`parley.Session` whose methods are coroutines."""

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

    def __repr__(self) -> str:
        return f"<parley.aio.AsyncSession extension={self._session.extension!r}>"

    def with_extension(self, extension: Optional[str]) -> "AsyncSession":
        return AsyncSession(self._session.with_extension(extension))

    async def call(self, operation: str, args: Optional[Mapping[str, Any]] = None) -> Dict[str, Any]:
        return await asyncio.to_thread(self._session.call, operation, args)

    async def post(
        self,
        kind: str,
        body: str,
        *,
        thread: Optional[Id] = None,
        parent: Optional[Id] = None,
        to: Optional[str] = None,
        state: Optional[str] = None,
        claim: Optional[Id] = None,
        evidence: Optional[Evidence] = None,
        supersedes: Optional[Sequence[Id]] = None,
        valid_until: Optional[Time] = None,
        provenance: Optional[Mapping[str, str]] = None,
    ) -> Dict[str, Any]:
        return await asyncio.to_thread(
            self._session.post,
            kind,
            body,
            thread=thread,
            parent=parent,
            to=to,
            state=state,
            claim=claim,
            evidence=evidence,
            supersedes=supersedes,
            valid_until=valid_until,
            provenance=provenance,
        )

    async def ask(
        self,
        body: str,
        *,
        to: Optional[str] = None,
        thread: Optional[Id] = None,
        parent: Optional[Id] = None,
        provenance: Optional[Mapping[str, str]] = None,
    ) -> Dict[str, Any]:
        return await self.post("ask", body, to=to, thread=thread, parent=parent, provenance=provenance)

    async def answer(
        self,
        body: str,
        *,
        thread: Optional[Id] = None,
        parent: Optional[Id] = None,
        provenance: Optional[Mapping[str, str]] = None,
    ) -> Dict[str, Any]:
        return await self.post("answer", body, thread=thread, parent=parent, provenance=provenance)

    async def note(
        self,
        body: str,
        *,
        thread: Optional[Id] = None,
        parent: Optional[Id] = None,
        provenance: Optional[Mapping[str, str]] = None,
    ) -> Dict[str, Any]:
        return await self.post("note", body, thread=thread, parent=parent, provenance=provenance)

    async def propose(
        self,
        body: str,
        *,
        thread: Optional[Id] = None,
        parent: Optional[Id] = None,
        provenance: Optional[Mapping[str, str]] = None,
    ) -> Dict[str, Any]:
        return await self.post("propose", body, thread=thread, parent=parent, provenance=provenance)

    async def object(
        self,
        body: str,
        *,
        thread: Optional[Id] = None,
        parent: Optional[Id] = None,
        provenance: Optional[Mapping[str, str]] = None,
    ) -> Dict[str, Any]:
        return await self.post("object", body, thread=thread, parent=parent, provenance=provenance)

    async def handoff(
        self,
        body: str,
        *,
        to: str,
        thread: Optional[Id] = None,
        parent: Optional[Id] = None,
        provenance: Optional[Mapping[str, str]] = None,
    ) -> Dict[str, Any]:
        return await self.post("handoff", body, to=to, thread=thread, parent=parent, provenance=provenance)

    async def decide(
        self,
        body: str,
        *,
        thread: Optional[Id] = None,
        parent: Optional[Id] = None,
        provenance: Optional[Mapping[str, str]] = None,
    ) -> Dict[str, Any]:
        return await self.post("decide", body, thread=thread, parent=parent, provenance=provenance)

    async def mark(
        self,
        body: str,
        *,
        state: str,
        thread: Optional[Id] = None,
        parent: Optional[Id] = None,
        provenance: Optional[Mapping[str, str]] = None,
    ) -> Dict[str, Any]:
        return await self.post("mark", body, state=state, thread=thread, parent=parent, provenance=provenance)

    async def reopen(
        self,
        body: str,
        *,
        to: Optional[str] = None,
        thread: Optional[Id] = None,
        parent: Optional[Id] = None,
        provenance: Optional[Mapping[str, str]] = None,
    ) -> Dict[str, Any]:
        return await self.post("reopen", body, to=to, thread=thread, parent=parent, provenance=provenance)

    async def claim(
        self,
        body: str,
        *,
        evidence: Optional[Evidence] = None,
        supersedes: Optional[Sequence[Id]] = None,
        valid_until: Optional[Time] = None,
        thread: Optional[Id] = None,
        parent: Optional[Id] = None,
        provenance: Optional[Mapping[str, str]] = None,
    ) -> Dict[str, Any]:
        """States a claim (the ``assert`` act)."""
        return await self.post(
            "assert",
            body,
            evidence=evidence,
            supersedes=supersedes,
            valid_until=valid_until,
            thread=thread,
            parent=parent,
            provenance=provenance,
        )

    async def attest(
        self,
        body: str,
        *,
        claim: Id,
        evidence: Evidence,
        thread: Optional[Id] = None,
        parent: Optional[Id] = None,
        provenance: Optional[Mapping[str, str]] = None,
    ) -> Dict[str, Any]:
        return await self.post(
            "attest", body, claim=claim, evidence=evidence, thread=thread, parent=parent, provenance=provenance
        )

    async def refute(
        self,
        body: str,
        *,
        claim: Id,
        evidence: Evidence,
        thread: Optional[Id] = None,
        parent: Optional[Id] = None,
        provenance: Optional[Mapping[str, str]] = None,
    ) -> Dict[str, Any]:
        return await self.post(
            "refute", body, claim=claim, evidence=evidence, thread=thread, parent=parent, provenance=provenance
        )

    async def verify(
        self,
        body: str,
        *,
        claim: Id,
        evidence: Optional[Evidence] = None,
        thread: Optional[Id] = None,
        parent: Optional[Id] = None,
        provenance: Optional[Mapping[str, str]] = None,
    ) -> Dict[str, Any]:
        return await self.post(
            "verify", body, claim=claim, evidence=evidence, thread=thread, parent=parent, provenance=provenance
        )

    async def thread(self, thread: Id) -> Dict[str, Any]:
        return await asyncio.to_thread(self._session.thread, thread)

    async def threads(
        self, *, state: Optional[str] = None, since: Optional[str] = None, limit: Optional[int] = None
    ) -> Dict[str, Any]:
        return await asyncio.to_thread(self._session.threads, state=state, since=since, limit=limit)

    async def inbox(self, *, since: Optional[str] = None, limit: Optional[int] = None) -> Dict[str, Any]:
        return await asyncio.to_thread(self._session.inbox, since=since, limit=limit)

    async def events(
        self, *, thread: Optional[Id] = None, since: Optional[str] = None, limit: Optional[int] = None
    ) -> Dict[str, Any]:
        return await asyncio.to_thread(self._session.events, thread=thread, since=since, limit=limit)

    async def claim_status(self, claim: Id) -> Dict[str, Any]:
        return await asyncio.to_thread(self._session.claim_status, claim)

    get_claim = claim_status

    async def whoami(self) -> Dict[str, Any]:
        return await asyncio.to_thread(self._session.whoami)

    async def manifest(self) -> Dict[str, Any]:
        return await asyncio.to_thread(self._session.manifest)

    async def tools(self, format: str = "mcp") -> List[Dict[str, Any]]:
        """The operations as tool schemas; see :meth:`parley.Session.tools`."""
        return await asyncio.to_thread(self._session.tools, format)

    async def dispatch(
        self, name: str, arguments: Union[Mapping[str, Any], str, None] = None
    ) -> Dict[str, Any]:
        """Runs a model's tool call; see :meth:`parley.Session.dispatch`."""
        return await asyncio.to_thread(self._session.dispatch, name, arguments)
