"""The acts of SPEC §6 and §10 as methods, written once for both sessions.

:class:`parley.Session` is ``Acts[PostResult]``; :class:`parley.aio.AsyncSession`
is ``Acts[Awaitable[PostResult]]``, whose ``post`` is a coroutine function, so each
act method returns what that ``post`` returns: a result, or an awaitable of one.
An argument of the wrong type raises ``TypeError`` when the method is called.
"""

from __future__ import annotations

import datetime
from typing import Generic, Mapping, Optional, Sequence, TypeVar, Union

from . import _args
from ._args import Id
from .types import EvidenceItem, Kind, State

__all__ = ["Acts", "Evidence", "Time"]

Time = Union[str, datetime.datetime]
Evidence = Sequence[EvidenceItem]

R = TypeVar("R")


class Acts(Generic[R]):
    """The act methods; a subclass gives ``post``."""

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
    ) -> R:
        """Posts one envelope of any ``kind``."""
        raise NotImplementedError

    # The core acts (SPEC §6) ------------------------------------------------------------

    def ask(
        self,
        body: str,
        *,
        to: Optional[str] = None,
        thread: Optional[Id] = None,
        parent: Optional[Id] = None,
        provenance: Optional[Mapping[str, str]] = None,
        idempotency_key: Optional[str] = None,
    ) -> R:
        """Asks a question; without ``thread`` and ``parent`` it opens a new thread."""
        return self.post(
            "ask", body, to=to, thread=thread, parent=parent, provenance=provenance, idempotency_key=idempotency_key
        )

    def answer(
        self,
        body: str,
        *,
        thread: Optional[Id] = None,
        parent: Optional[Id] = None,
        provenance: Optional[Mapping[str, str]] = None,
        idempotency_key: Optional[str] = None,
    ) -> R:
        """Answers; marks the thread ``answered`` (a proposal unless a confirmer answers)."""
        return self.post(
            "answer", body, thread=thread, parent=parent, provenance=provenance, idempotency_key=idempotency_key
        )

    def note(
        self,
        body: str,
        *,
        thread: Optional[Id] = None,
        parent: Optional[Id] = None,
        provenance: Optional[Mapping[str, str]] = None,
        idempotency_key: Optional[str] = None,
    ) -> R:
        """Adds information; expects no reply and leaves the turn as it was."""
        return self.post(
            "note", body, thread=thread, parent=parent, provenance=provenance, idempotency_key=idempotency_key
        )

    def propose(
        self,
        body: str,
        *,
        thread: Optional[Id] = None,
        parent: Optional[Id] = None,
        provenance: Optional[Mapping[str, str]] = None,
        idempotency_key: Optional[str] = None,
    ) -> R:
        """Proposes a decision to the thread's creator, whose turn it becomes."""
        return self.post(
            "propose", body, thread=thread, parent=parent, provenance=provenance, idempotency_key=idempotency_key
        )

    def object(
        self,
        body: str,
        *,
        thread: Optional[Id] = None,
        parent: Optional[Id] = None,
        provenance: Optional[Mapping[str, str]] = None,
        idempotency_key: Optional[str] = None,
    ) -> R:
        """Disputes the parent message; its author is due to respond."""
        return self.post(
            "object", body, thread=thread, parent=parent, provenance=provenance, idempotency_key=idempotency_key
        )

    def handoff(
        self,
        body: str,
        *,
        to: str,
        thread: Optional[Id] = None,
        parent: Optional[Id] = None,
        provenance: Optional[Mapping[str, str]] = None,
        idempotency_key: Optional[str] = None,
    ) -> R:
        """Passes the turn on to the identity ``to`` ("not me — you")."""
        _args.check("to", to, str, "an identity (str)")
        return self.post(
            "handoff",
            body,
            to=to,
            thread=thread,
            parent=parent,
            provenance=provenance,
            idempotency_key=idempotency_key,
        )

    def decide(
        self,
        body: str,
        *,
        thread: Optional[Id] = None,
        parent: Optional[Id] = None,
        if_state: Optional[State] = None,
        provenance: Optional[Mapping[str, str]] = None,
        idempotency_key: Optional[str] = None,
    ) -> R:
        """Records the thread's decision (needs authority over the thread).

        ``if_state``: the state the caller saw; if the thread is in another one, the
        post raises :class:`parley.StateChanged` (its ``state`` is the current one).
        """
        return self.post(
            "decide",
            body,
            thread=thread,
            parent=parent,
            if_state=if_state,
            provenance=provenance,
            idempotency_key=idempotency_key,
        )

    def mark(
        self,
        body: str,
        *,
        state: State,
        thread: Optional[Id] = None,
        parent: Optional[Id] = None,
        if_state: Optional[State] = None,
        provenance: Optional[Mapping[str, str]] = None,
        idempotency_key: Optional[str] = None,
    ) -> R:
        """Sets the thread's ``state`` (needs authority; confirmed for confirmers).

        ``if_state``: as for :meth:`decide`; a person confirming a proposal passes the
        state the page showed, so they never confirm one they did not see.
        """
        _args.check("state", state, str, "a str")
        return self.post(
            "mark",
            body,
            state=state,
            if_state=if_state,
            thread=thread,
            parent=parent,
            provenance=provenance,
            idempotency_key=idempotency_key,
        )

    def reopen(
        self,
        body: str,
        *,
        to: Optional[str] = None,
        thread: Optional[Id] = None,
        parent: Optional[Id] = None,
        if_state: Optional[State] = None,
        provenance: Optional[Mapping[str, str]] = None,
        idempotency_key: Optional[str] = None,
    ) -> R:
        """Opens a closed or side-state thread again (``if_state``: as for :meth:`decide`)."""
        return self.post(
            "reopen",
            body,
            to=to,
            if_state=if_state,
            thread=thread,
            parent=parent,
            provenance=provenance,
            idempotency_key=idempotency_key,
        )

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
        idempotency_key: Optional[str] = None,
    ) -> R:
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
            idempotency_key=idempotency_key,
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
        idempotency_key: Optional[str] = None,
    ) -> R:
        """Supports ``claim`` with at least one evidence item."""
        _args.check_id("claim", claim)
        _args.check("evidence", evidence, (list, tuple), "a list of evidence mappings")
        return self.post(
            "attest",
            body,
            claim=claim,
            evidence=evidence,
            thread=thread,
            parent=parent,
            provenance=provenance,
            idempotency_key=idempotency_key,
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
        idempotency_key: Optional[str] = None,
    ) -> R:
        """Refutes ``claim`` with counter-evidence, creating a counter-claim."""
        _args.check_id("claim", claim)
        _args.check("evidence", evidence, (list, tuple), "a list of evidence mappings")
        return self.post(
            "refute",
            body,
            claim=claim,
            evidence=evidence,
            thread=thread,
            parent=parent,
            provenance=provenance,
            idempotency_key=idempotency_key,
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
        idempotency_key: Optional[str] = None,
    ) -> R:
        """Seals ``claim`` (needs the ``verify`` right)."""
        _args.check_id("claim", claim)
        return self.post(
            "verify",
            body,
            claim=claim,
            evidence=evidence,
            thread=thread,
            parent=parent,
            provenance=provenance,
            idempotency_key=idempotency_key,
        )
