"""``Session``: one token (and optional extension) speaking to a forum.

Every method is a thin layer over ``Forum.call``: acts build an envelope and ``post``
it, reads call the read operations. Results are the engine's JSON as dicts, typed by
the shapes of :mod:`parley.types` (a ``cast``: nothing is converted); refusals raise
:class:`parley.Refusal`.
"""

from __future__ import annotations

from typing import Any, Dict, List, Literal, Mapping, Optional, Protocol, Sequence, Union, cast, overload

from . import _args, _retry, _tools
from ._acts import Acts, Evidence, Time
from ._args import Id
from ._coordination import Coordination
from ._feed import Feed
from ._provenance import Provenance
from .types import (
    ClaimView,
    Digest,
    Event,
    EventsPage,
    FeedKind,
    InboxItem,
    InboxPage,
    Kind,
    Manifest,
    Message,
    MessagesPage,
    PostResult,
    SearchPage,
    State,
    ThreadsPage,
    ThreadView,
    Whoami,
)

__all__ = ["ForumLike", "Session"]


class ForumLike(Protocol):
    """What a session needs of its forum: the in-process :class:`parley.Forum`, or the
    :class:`parley.RemoteForum` of :func:`parley.connect`, which offers the
    same over HTTP (and has no commit descriptor: ``_commit_fd`` raises
    ``NotImplementedError``, so ``parley.aio`` lets the server do the waiting)."""

    @property
    def closed(self) -> bool: ...
    @property
    def limits(self) -> Dict[str, int]: ...
    @property
    def waits_ended(self) -> bool: ...
    def close(self) -> None: ...
    def call(
        self, token: Optional[str], operation: str, args: Optional[Mapping[str, Any]] = None
    ) -> Dict[str, Any]: ...
    def mcp(self, token: Optional[str], request: Union[Mapping[str, Any], str]) -> Optional[Dict[str, Any]]: ...
    def _commit_fd(self) -> int: ...


class Session(Coordination, Provenance, Acts[PostResult]):
    """Speaks for the holder of ``token``; posts carry ``extension`` as ``from.extension``.

    Create one with :meth:`parley.Forum.session`. ``provenance`` (``{"model", "client"}``)
    is added to every post that does not give its own.

    Every posting method takes ``idempotency_key`` (SPEC §14.3): posting the same
    envelope again under the same key returns the first post instead of a second one,
    with ``result["replayed"]`` ``True`` (the sessions always set ``replayed``; it is
    ``False`` for a post that wrote). The same key with another envelope is refused
    (``idempotency_conflict``, a :class:`parley.Conflict`). Keys belong to the token's
    identity and are remembered for the ``idempotency_ttl_s`` limit.

    ``retries`` (default 0) makes the session retry on its own: a call that fails with
    :class:`parley.StorageError` (I/O, a full disk: the caller cannot tell whether a
    post was written), or for :func:`parley.connect` with :class:`parley.ConnectionError`,
    is run again, up to ``retries`` more times, after
    ``retry_backoff`` seconds, then twice as long each time (at most 2 s). Each post
    then carries a key, the caller's or one made by :func:`parley.new_idempotency_key`
    once per call, and every attempt sends the same envelope under it, so a post whose
    first attempt was written is replayed, never written twice. Refusals (rate limits
    included), ``TypeError`` and ``ValueError`` (a closed forum) are never retried.
    Reads are retried as they are.
    """

    def __init__(
        self,
        forum: ForumLike,
        token: str,
        extension: Optional[str] = None,
        *,
        provenance: Optional[Mapping[str, str]] = None,
        retries: int = 0,
        retry_backoff: float = 0.05,
    ) -> None:
        _args.check("token", token, str, "a str")
        _args.check_opt_str("extension", extension)
        self._forum = forum
        self._token = token
        self._extension = extension
        self._provenance = None if provenance is None else _args.string_map("provenance", provenance)
        self._policy = _retry.Policy(retries, retry_backoff)
        self._tools: Optional[List[Dict[str, Any]]] = None

    @property
    def forum(self) -> ForumLike:
        """The forum this session speaks to (a :class:`parley.Forum`, or the remote
        forum of :func:`parley.connect`)."""
        return self._forum

    @property
    def token(self) -> str:
        """The token's secret."""
        return self._token

    @property
    def extension(self) -> Optional[str]:
        """The sub-agent name posts carry, or ``None``."""
        return self._extension

    @property
    def retries(self) -> int:
        """How many more times a call failing with :class:`parley.StorageError` is run."""
        return self._policy.retries

    @property
    def retry_backoff(self) -> float:
        """The pause before the first retry, in seconds (doubled for each later one)."""
        return self._policy.backoff

    def __repr__(self) -> str:
        # Never show the secret.
        return f"<parley.Session extension={self._extension!r}>"

    def with_extension(self, extension: Optional[str]) -> "Session":
        """The same token speaking as another extension (a sub-agent)."""
        return Session(
            self._forum,
            self._token,
            extension,
            provenance=self._provenance,
            retries=self._policy.retries,
            retry_backoff=self._policy.backoff,
        )

    # The generic entry -----------------------------------------------------------------

    def call(self, operation: str, args: Optional[Mapping[str, Any]] = None) -> Dict[str, Any]:
        """``Forum.call`` with this session's token, retried as the session retries
        (a ``post`` without a key then gets one). The result is the engine's, as is."""
        return self._run(operation, self._policy.keyed(operation, args))

    def _run(self, operation: str, args: Optional[Mapping[str, Any]]) -> Dict[str, Any]:
        """One logical call: the same arguments, attempt after attempt."""
        return self._policy.run(lambda: self._forum.call(self._token, operation, args))

    def post(
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
        """Posts one envelope of any ``kind``; returns ``{"message", "thread", "replayed", …}``.

        ``idempotency_key``: see the class; a key of the wrong form is refused
        (``invalid_body``).
        """
        env = self._envelope(
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
        return cast(PostResult, _retry.posted(self._run("post", env)))

    def _envelope(
        self,
        kind: str,
        body: str,
        *,
        thread: Optional[Id],
        parent: Optional[Id],
        to: Optional[str],
        state: Optional[str],
        if_state: Optional[str],
        claim: Optional[Id],
        evidence: Optional[Evidence],
        supersedes: Optional[Sequence[Id]],
        valid_until: Optional[Time],
        provenance: Optional[Mapping[str, str]],
        idempotency_key: Optional[str],
    ) -> Dict[str, Any]:
        """The envelope of one post, with the key its retries share (if it has one)."""
        env = _args.envelope(
            kind,
            body,
            extension=self._extension,
            provenance=self._provenance if provenance is None else provenance,
            thread=thread,
            parent=parent,
            to=to,
            state=state,
            if_state=if_state,
            claim=claim,
            evidence=evidence,
            supersedes=supersedes,
            valid_until=valid_until,
            idempotency_key=idempotency_key,
        )
        if idempotency_key is None and self._policy.retries > 0:
            env["idempotency_key"] = _retry.new_idempotency_key()
        return env

    # The nine acts (SPEC §4) ----------------------------------------------------------

    # Reads (SPEC §8) -------------------------------------------------------------------

    def thread(self, thread: Id) -> ThreadView:
        """``get_thread``: the summary and the message tree."""
        _args.check_id("thread", thread)
        return cast(ThreadView, self.call("get_thread", {"thread": thread}))

    def threads(
        self,
        *,
        state: Optional[State] = None,
        since: Optional[str] = None,
        limit: Optional[int] = None,
        wait: Optional[float] = None,
    ) -> ThreadsPage:
        """``list_threads``: summaries by last activity, oldest first.

        ``wait`` (seconds) waits for a thread to list; see :meth:`inbox`.
        """
        args = _args.reads(state=state, since=since, limit=limit, wait=wait)
        return cast(ThreadsPage, self.call("list_threads", args))

    def inbox(
        self, *, since: Optional[str] = None, limit: Optional[int] = None, wait: Optional[float] = None
    ) -> InboxPage:
        """``get_inbox`` for this session's identity and extension.

        ``wait`` (seconds, an int or a float; the listen profile, SPEC §14.2): with
        nothing to return yet, block until a thread is due or ``wait`` has passed, then
        return as without waiting (an empty page when nothing came). The GIL is released
        meanwhile. A wait over the ``wait_max_ms`` limit is refused (``invalid_argument``).
        Pass the returned ``cursor`` as ``since`` to wait for what is new.
        """
        args = _args.reads(since=since, extension=self._extension, limit=limit, wait=wait)
        return cast(InboxPage, self.call("get_inbox", args))

    def events(
        self,
        *,
        thread: Optional[Id] = None,
        since: Optional[str] = None,
        limit: Optional[int] = None,
        wait: Optional[float] = None,
    ) -> EventsPage:
        """``get_events``: state changes and confirmations, oldest first.

        ``wait`` (seconds) waits for an event; see :meth:`inbox`.
        """
        args = _args.reads(thread=thread, since=since, limit=limit, wait=wait)
        return cast(EventsPage, self.call("get_events", args))

    def messages(
        self,
        *,
        thread: Optional[Id] = None,
        since: Optional[str] = None,
        limit: Optional[int] = None,
        wait: Optional[float] = None,
    ) -> MessagesPage:
        """``get_messages`` (SPEC §14.1): messages flat, oldest first, of ``thread`` or all.

        ``wait`` (seconds) waits for a message; see :meth:`inbox`.
        """
        args = _args.reads(thread=thread, since=since, limit=limit, wait=wait)
        return cast(MessagesPage, self.call("get_messages", args))

    def search(
        self,
        q: str,
        *,
        thread: Optional[Id] = None,
        since: Optional[str] = None,
        limit: Optional[int] = None,
    ) -> SearchPage:
        """``search`` (SPEC §14.4): messages whose body holds every word of ``q``, newest first.

        Words are compared lowercased, split at anything that is not a letter, a mark
        or a digit; ``q`` holds 1 to 16 words in at most 200 characters, else the
        engine refuses it (``invalid_argument``, a :class:`parley.BadRequest`).
        ``thread`` narrows the search to one thread. Returns ``{"items": [{"message",
        "thread"}, …], "cursor", "more"}``: pass ``cursor`` back as ``since`` for the
        next older matches.
        """
        return cast(SearchPage, self.call("search", _args.search(q=q, thread=thread, since=since, limit=limit)))

    @overload
    def feed(
        self, kind: Literal["inbox"] = ..., *, thread: Optional[Id] = None, since: Optional[str] = None
    ) -> Feed[InboxItem]: ...
    @overload
    def feed(
        self, kind: Literal["messages"], *, thread: Optional[Id] = None, since: Optional[str] = None
    ) -> Feed[Message]: ...
    @overload
    def feed(
        self, kind: Literal["events"], *, thread: Optional[Id] = None, since: Optional[str] = None
    ) -> Feed[Event]: ...
    def feed(
        self, kind: FeedKind = "inbox", *, thread: Optional[Id] = None, since: Optional[str] = None
    ) -> Union[Feed[InboxItem], Feed[Message], Feed[Event]]:
        """Inbox items (``"inbox"``), messages (``"messages"``) or events (``"events"``)
        as they arrive, for ``for item in session.feed(...)``.

        Starts after ``since`` (a cursor of the same read), or from the beginning;
        ``thread`` narrows messages and events to one thread. Each item is read when
        it is given out, and ``feed.cursor`` resumes right after it. Waits while there
        is nothing new; ends when the forum's waits end or the forum closes. Needs the
        listen profile.
        """
        return Feed(self, kind, thread=thread, since=since)

    def digest(self, thread: Id) -> Digest:
        """``get_digest`` (SPEC §17): what matters of a thread too long to read whole.

        Returns ``{"thread", "root", "decision", "open_questions", "claims", "recent",
        "omitted"}``: the summary, the root message, the newest ``decide`` (or ``None``),
        the oldest 10 ``ask`` messages with no ``answer`` below them, the newest 10
        claims (``{"id", "status", "text"}``), the last 5 messages, and how many
        messages none of these shows. Messages carry no ``replies``.
        """
        _args.check_id("thread", thread)
        return cast(Digest, self.call("get_digest", {"thread": thread}))

    get_digest = digest

    def claim_status(self, claim: Id) -> ClaimView:
        """``get_claim``: a claim with its status, support and refutations."""
        _args.check_id("claim", claim)
        return cast(ClaimView, self.call("get_claim", {"claim": claim}))

    get_claim = claim_status

    def whoami(self) -> Whoami:
        """``{"identity", "kind", "rights", "label", "realm"}`` of this token."""
        return cast(Whoami, self.call("whoami"))

    def manifest(self) -> Manifest:
        """``get_manifest``: everything needed to speak Parley."""
        return cast(Manifest, self.call("get_manifest"))

    # Tool use --------------------------------------------------------------------------

    def tools(self, format: str = "mcp", strict: bool = False) -> List[Dict[str, Any]]:
        """The operations as tool schemas: ``"mcp"``, ``"openai"`` (Chat Completions),
        ``"openai-responses"`` (the Responses API) or ``"anthropic"``.

        Derived from the MCP handler's ``tools/list``, so they match the server exactly.
        ``strict=True`` (the openai formats) follows OpenAI's strict rules: every
        property required, the optional ones nullable (``null`` means absent),
        ``additionalProperties: false`` and only the keywords strict mode supports.
        """
        if self._tools is None:
            self._tools = _tools.list_tools(self._forum, self._token)
        return _tools.render(self._tools, format, strict)

    def _tool_names(self) -> List[str]:
        if self._tools is None:
            self._tools = _tools.list_tools(self._forum, self._token)
        return [tool["name"] for tool in self._tools]

    def _default_provenance(self) -> Optional[Dict[str, str]]:
        return self._provenance

    def dispatch(self, name: str, arguments: Union[Mapping[str, Any], str, None] = None) -> Dict[str, Any]:
        """Runs a model's tool call and returns a result the model can read.

        ``arguments`` is a dict or its JSON text (as OpenAI sends it). A refusal is not
        raised: it comes back as ``{"error": {"reason", "status", "message", …}}``.
        The result is the engine's, as over MCP (``replayed`` only on a replay). A
        session with ``retries`` retries the call, a post under one key: the model's
        ``idempotency_key`` if it gave one, else a new one.
        """
        return _tools.dispatch(self, name, arguments)
