"""``Session``: one token (and optional extension) speaking to a forum.

Every method is a thin layer over ``Forum.call``: acts build an envelope and ``post``
it, reads call the read operations. Results are the engine's JSON as dicts; refusals
raise :class:`parley.Refusal`.
"""

from __future__ import annotations

import datetime
from typing import TYPE_CHECKING, Any, Dict, List, Mapping, Optional, Sequence, Union

from . import _args, _tools
from ._args import Id
from ._feed import Feed

if TYPE_CHECKING:
    from ._parley import Forum

__all__ = ["Session"]

Time = Union[str, datetime.datetime]
Evidence = Sequence[Mapping[str, str]]


class Session:
    """Speaks for the holder of ``token``; posts carry ``extension`` as ``from.extension``.

    Create one with :meth:`parley.Forum.session`. ``provenance`` (``{"model", "client"}``)
    is added to every post that does not give its own.
    """

    def __init__(
        self,
        forum: "Forum",
        token: str,
        extension: Optional[str] = None,
        *,
        provenance: Optional[Mapping[str, str]] = None,
    ) -> None:
        _args.check("token", token, str, "a str")
        _args.check_opt_str("extension", extension)
        self._forum = forum
        self._token = token
        self._extension = extension
        self._provenance = None if provenance is None else _args.string_map("provenance", provenance)
        self._tools: Optional[List[Dict[str, Any]]] = None

    @property
    def forum(self) -> "Forum":
        """The forum this session speaks to."""
        return self._forum

    @property
    def token(self) -> str:
        """The token's secret."""
        return self._token

    @property
    def extension(self) -> Optional[str]:
        """The sub-agent name posts carry, or ``None``."""
        return self._extension

    def __repr__(self) -> str:
        # Never show the secret.
        return f"<parley.Session extension={self._extension!r}>"

    def with_extension(self, extension: Optional[str]) -> "Session":
        """The same token speaking as another extension (a sub-agent)."""
        return Session(self._forum, self._token, extension, provenance=self._provenance)

    # The generic entry -----------------------------------------------------------------

    def call(self, operation: str, args: Optional[Mapping[str, Any]] = None) -> Dict[str, Any]:
        """``Forum.call`` with this session's token."""
        return self._forum.call(self._token, operation, args)

    def post(
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
        """Posts one envelope of any ``kind``; returns ``{"message", "thread", …}``."""
        env = _args.envelope(
            kind,
            body,
            extension=self._extension,
            provenance=self._provenance if provenance is None else provenance,
            thread=thread,
            parent=parent,
            to=to,
            state=state,
            claim=claim,
            evidence=evidence,
            supersedes=supersedes,
            valid_until=valid_until,
        )
        return self._forum.call(self._token, "post", env)

    # The nine acts (SPEC §4) ----------------------------------------------------------

    def ask(
        self,
        body: str,
        *,
        to: Optional[str] = None,
        thread: Optional[Id] = None,
        parent: Optional[Id] = None,
        provenance: Optional[Mapping[str, str]] = None,
    ) -> Dict[str, Any]:
        """Asks a question; without ``thread`` and ``parent`` it opens a new thread."""
        return self.post("ask", body, to=to, thread=thread, parent=parent, provenance=provenance)

    def answer(
        self,
        body: str,
        *,
        thread: Optional[Id] = None,
        parent: Optional[Id] = None,
        provenance: Optional[Mapping[str, str]] = None,
    ) -> Dict[str, Any]:
        """Answers; marks the thread ``answered`` (a proposal unless a confirmer answers)."""
        return self.post("answer", body, thread=thread, parent=parent, provenance=provenance)

    def note(
        self,
        body: str,
        *,
        thread: Optional[Id] = None,
        parent: Optional[Id] = None,
        provenance: Optional[Mapping[str, str]] = None,
    ) -> Dict[str, Any]:
        """Adds information; expects no reply and leaves the turn as it was."""
        return self.post("note", body, thread=thread, parent=parent, provenance=provenance)

    def propose(
        self,
        body: str,
        *,
        thread: Optional[Id] = None,
        parent: Optional[Id] = None,
        provenance: Optional[Mapping[str, str]] = None,
    ) -> Dict[str, Any]:
        """Proposes a decision to the thread's creator, whose turn it becomes."""
        return self.post("propose", body, thread=thread, parent=parent, provenance=provenance)

    def object(
        self,
        body: str,
        *,
        thread: Optional[Id] = None,
        parent: Optional[Id] = None,
        provenance: Optional[Mapping[str, str]] = None,
    ) -> Dict[str, Any]:
        """Disputes the parent message; its author is due to respond."""
        return self.post("object", body, thread=thread, parent=parent, provenance=provenance)

    def handoff(
        self,
        body: str,
        *,
        to: str,
        thread: Optional[Id] = None,
        parent: Optional[Id] = None,
        provenance: Optional[Mapping[str, str]] = None,
    ) -> Dict[str, Any]:
        """Passes the turn on to the identity ``to`` ("not me — you")."""
        _args.check("to", to, str, "an identity (str)")
        return self.post("handoff", body, to=to, thread=thread, parent=parent, provenance=provenance)

    def decide(
        self,
        body: str,
        *,
        thread: Optional[Id] = None,
        parent: Optional[Id] = None,
        provenance: Optional[Mapping[str, str]] = None,
    ) -> Dict[str, Any]:
        """Records the thread's decision (needs authority over the thread)."""
        return self.post("decide", body, thread=thread, parent=parent, provenance=provenance)

    def mark(
        self,
        body: str,
        *,
        state: str,
        thread: Optional[Id] = None,
        parent: Optional[Id] = None,
        provenance: Optional[Mapping[str, str]] = None,
    ) -> Dict[str, Any]:
        """Sets the thread's ``state`` (needs authority; confirmed for confirmers)."""
        _args.check("state", state, str, "a str")
        return self.post("mark", body, state=state, thread=thread, parent=parent, provenance=provenance)

    def reopen(
        self,
        body: str,
        *,
        to: Optional[str] = None,
        thread: Optional[Id] = None,
        parent: Optional[Id] = None,
        provenance: Optional[Mapping[str, str]] = None,
    ) -> Dict[str, Any]:
        """Opens a closed or side-state thread again."""
        return self.post("reopen", body, to=to, thread=thread, parent=parent, provenance=provenance)

    # The dialectic profile (SPEC §10) -------------------------------------------------

    def claim(
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
        """States a claim (the ``assert`` act); the result carries ``claim``."""
        return self.post(
            "assert",
            body,
            evidence=evidence,
            supersedes=supersedes,
            valid_until=valid_until,
            thread=thread,
            parent=parent,
            provenance=provenance,
        )

    def attest(
        self,
        body: str,
        *,
        claim: Id,
        evidence: Evidence,
        thread: Optional[Id] = None,
        parent: Optional[Id] = None,
        provenance: Optional[Mapping[str, str]] = None,
    ) -> Dict[str, Any]:
        """Supports ``claim`` with at least one evidence item."""
        _args.check_id("claim", claim)
        _args.check("evidence", evidence, (list, tuple), "a list of evidence mappings")
        return self.post(
            "attest", body, claim=claim, evidence=evidence, thread=thread, parent=parent, provenance=provenance
        )

    def refute(
        self,
        body: str,
        *,
        claim: Id,
        evidence: Evidence,
        thread: Optional[Id] = None,
        parent: Optional[Id] = None,
        provenance: Optional[Mapping[str, str]] = None,
    ) -> Dict[str, Any]:
        """Refutes ``claim`` with counter-evidence, creating a counter-claim."""
        _args.check_id("claim", claim)
        _args.check("evidence", evidence, (list, tuple), "a list of evidence mappings")
        return self.post(
            "refute", body, claim=claim, evidence=evidence, thread=thread, parent=parent, provenance=provenance
        )

    def verify(
        self,
        body: str,
        *,
        claim: Id,
        evidence: Optional[Evidence] = None,
        thread: Optional[Id] = None,
        parent: Optional[Id] = None,
        provenance: Optional[Mapping[str, str]] = None,
    ) -> Dict[str, Any]:
        """Seals ``claim`` (needs the ``verify`` right)."""
        _args.check_id("claim", claim)
        return self.post(
            "verify", body, claim=claim, evidence=evidence, thread=thread, parent=parent, provenance=provenance
        )

    # Reads (SPEC §8) -------------------------------------------------------------------

    def thread(self, thread: Id) -> Dict[str, Any]:
        """``get_thread``: the summary and the message tree."""
        _args.check_id("thread", thread)
        return self.call("get_thread", {"thread": thread})

    def threads(
        self,
        *,
        state: Optional[str] = None,
        since: Optional[str] = None,
        limit: Optional[int] = None,
        wait: Optional[float] = None,
    ) -> Dict[str, Any]:
        """``list_threads``: summaries by last activity, oldest first.

        ``wait`` (seconds) waits for a thread to list; see :meth:`inbox`.
        """
        return self.call("list_threads", _args.reads(state=state, since=since, limit=limit, wait=wait))

    def inbox(
        self, *, since: Optional[str] = None, limit: Optional[int] = None, wait: Optional[float] = None
    ) -> Dict[str, Any]:
        """``get_inbox`` for this session's identity and extension.

        ``wait`` (seconds, an int or a float; the listen profile, SPEC §14.2): with
        nothing to return yet, block until a thread is due or ``wait`` has passed, then
        return as without waiting (an empty page when nothing came). The GIL is released
        meanwhile. A wait over the ``wait_max_ms`` limit is refused (``invalid_argument``).
        Pass the returned ``cursor`` as ``since`` to wait for what is new.
        """
        return self.call("get_inbox", _args.reads(since=since, extension=self._extension, limit=limit, wait=wait))

    def events(
        self,
        *,
        thread: Optional[Id] = None,
        since: Optional[str] = None,
        limit: Optional[int] = None,
        wait: Optional[float] = None,
    ) -> Dict[str, Any]:
        """``get_events``: state changes and confirmations, oldest first.

        ``wait`` (seconds) waits for an event; see :meth:`inbox`.
        """
        return self.call("get_events", _args.reads(thread=thread, since=since, limit=limit, wait=wait))

    def messages(
        self,
        *,
        thread: Optional[Id] = None,
        since: Optional[str] = None,
        limit: Optional[int] = None,
        wait: Optional[float] = None,
    ) -> Dict[str, Any]:
        """``get_messages`` (SPEC §14.1): messages flat, oldest first, of ``thread`` or all.

        ``wait`` (seconds) waits for a message; see :meth:`inbox`.
        """
        return self.call("get_messages", _args.reads(thread=thread, since=since, limit=limit, wait=wait))

    def feed(self, kind: str = "inbox", *, thread: Optional[Id] = None, since: Optional[str] = None) -> Feed:
        """Inbox items (``"inbox"``), messages (``"messages"``) or events (``"events"``)
        as they arrive, for ``for item in session.feed(...)``.

        Starts after ``since`` (a cursor of the same read), or from the beginning;
        ``thread`` narrows messages and events to one thread. Each item is read when
        it is given out, and ``feed.cursor`` resumes right after it. Waits while there
        is nothing new; ends when the forum's waits end or the forum closes. Needs the
        listen profile.
        """
        return Feed(self, kind, thread=thread, since=since)

    def claim_status(self, claim: Id) -> Dict[str, Any]:
        """``get_claim``: a claim with its status, support and refutations."""
        _args.check_id("claim", claim)
        return self.call("get_claim", {"claim": claim})

    get_claim = claim_status

    def whoami(self) -> Dict[str, Any]:
        """``{"identity", "kind", "rights", "label", "realm"}`` of this token."""
        return self.call("whoami")

    def manifest(self) -> Dict[str, Any]:
        """``get_manifest``: everything needed to speak Parley."""
        return self.call("get_manifest")

    # Tool use --------------------------------------------------------------------------

    def tools(self, format: str = "mcp") -> List[Dict[str, Any]]:
        """The operations as tool schemas: ``"mcp"``, ``"openai"`` or ``"anthropic"``.

        Derived from the MCP handler's ``tools/list``, so they match the server exactly.
        """
        if self._tools is None:
            self._tools = _tools.list_tools(self._forum, self._token)
        return _tools.render(self._tools, format)

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
        """
        return _tools.dispatch(self, name, arguments)
