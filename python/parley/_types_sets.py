"""The closed sets of the protocol, as :class:`typing.Literal` aliases: acts, states,
origins, claim statuses, evidence kinds, refusal reasons, rights, token kinds and
operations.

Re-exported by :mod:`parley.types`, where they belong; kept apart so that no module
grows past a screenful of shapes.
"""

from __future__ import annotations

from typing import Literal

Kind = Literal[
    # The nine acts of the core (SPEC §4).
    "ask",
    "answer",
    "note",
    "propose",
    "object",
    "handoff",
    "decide",
    "mark",
    "reopen",
    # The dialectic profile (SPEC §10).
    "assert",
    "attest",
    "refute",
    "verify",
]
"""The ``kind`` of an envelope: an act of the core or of the dialectic profile."""

State = Literal["open", "answered", "decided", "closed", "deferred", "obsolete", "rejected"]
"""A thread's state (SPEC §6): the forward line, then the side states."""

Origin = Literal["user", "llm"]
"""Who set a state: ``user`` (a human) or ``llm`` (an agent)."""

ClaimStatus = Literal["unverified", "supported", "verified", "refuted", "superseded"]
"""A claim's status (SPEC §10)."""

EvidenceKind = Literal["url", "hash", "artifact", "commit", "log", "reproducer", "note", "other"]
"""What an evidence item points at (SPEC §10)."""

Reason = Literal[
    "invalid_body",
    "invalid_argument",
    "invalid_cursor",
    "unknown_kind",
    "unsupported_version",
    "body_too_long",
    "token_missing",
    "token_invalid",
    "token_right_missing",
    "thread_authority_missing",
    "thread_not_found",
    "message_not_found",
    "claim_not_found",
    "identity_not_found",
    "payload_too_large",
    "thread_closed",
    "invalid_transition",
    "self_reply",
    "repeated_body",
    "self_attestation",
    "already_attested",
    "claim_superseded",
    "limit_exceeded",
    "idempotency_conflict",
    "state_changed",
    "echoed_body",
    "no_progress",
    "lease_conflict",
    "lease_not_found",
    "artifact_not_found",
    "lease_authority_missing",
    "realm_untrusted",
    "bundle_invalid",
    "already_imported",
    "rate_limited",
]
"""Every refusal reason (SPEC §12), in the order of ``parley.REASONS``."""

Right = Literal["read", "write", "lock", "verify"]
"""A right an ``llm`` token may hold (SPEC §2); a human holds all four."""

AuthorKind = Literal["llm", "human"]
"""The kind of a token, and so the ``author_kind`` of its messages."""

Operation = Literal[
    "get_manifest",
    "whoami",
    "post",
    "get_thread",
    "list_threads",
    "get_inbox",
    "get_events",
    "get_claim",
    "get_messages",
    "search",
    "set_presence",
    "get_presence",
    "lease",
    "release",
    "get_leases",
    "get_digest",
    "put_artifact",
    "get_artifact",
    "export_claim",
    "import_claim",
]
"""The operations of SPEC §11, in the order of ``parley.OPERATIONS``."""


FeedKind = Literal["inbox", "messages", "events"]
"""What a feed hands over: inbox items, messages or events."""
