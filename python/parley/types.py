"""The shapes of Parley's results, for type checkers.

Every result is a plain ``dict`` built from the engine's JSON; the classes here are
:class:`typing.TypedDict` descriptions of those dicts (SPEC §8, §10, §11, §13, §14),
so ``mypy --strict`` knows that ``result["thread"]["state"]`` is a :data:`State` and
rejects ``result["mesage"]``. They cost nothing at run time: no result is converted
or copied, and ``isinstance`` does not apply to them.

Keys that the engine writes only when they are set (SPEC §8.1: ``to``, ``state``,
``provenance``, ``claim``, …) are not-required keys: read them with ``.get`` or test
them with ``in``. Keys that are always present but may be ``null`` are ``Optional``.

The :class:`typing.Literal` aliases name the closed sets of the protocol: acts
(:data:`Kind`), states, origins, claim statuses, evidence kinds, refusal reasons,
rights, token kinds and operations. They equal the engine's own lists (the manifest,
``parley.REASONS``, ``parley.OPERATIONS``); a test keeps them so.

The required part of a shape with optional keys is a private base class: a
``TypedDict`` is total or not as a whole, and ``NotRequired`` needs Python 3.11.
"""

from __future__ import annotations

from typing import List, Literal, Optional, TypedDict, Union

from ._types_coordination import CoordinationProfile, Lease, LeaseHolder, LeaseList, LeaseMode, LeaseResult
from ._types_coordination import Presence, PresenceList, PresenceResult, PresenceStatus
from ._types_provenance import Artifact, ArtifactContent, ArtifactResult, Bundle, BundleResult, BundleSignature
from ._types_sets import AuthorKind, ClaimStatus, EvidenceKind, FeedKind, Kind, Operation, Origin, Reason, Right, State

__all__ = [
    # The closed sets.
    "Kind",
    "State",
    "Origin",
    "ClaimStatus",
    "EvidenceKind",
    "Reason",
    "Right",
    "AuthorKind",
    "Operation",
    "FeedKind",
    # Messages and threads (SPEC §8).
    "Author",
    "Provenance",
    "EvidenceItem",
    "Message",
    "MessageNode",
    "Awaiting",
    "ThreadSummary",
    "ThreadView",
    "ThreadsPage",
    "InboxItem",
    "InboxPage",
    "TransitionEvent",
    "ConfirmationEvent",
    "ClaimEvent",
    "Event",
    "EventsPage",
    # Claims (SPEC §10).
    "Attestation",
    "Verification",
    "Refutation",
    "ClaimView",
    "Imported",
    # Operations (SPEC §11, §13, §14).
    "PostResult",
    "Whoami",
    "IdentityInfo",
    "ServerInfo",
    "ActFields",
    "ActInfo",
    "StatesInfo",
    "Limits",
    "DialecticProfile",
    "ListenProfile",
    "GuardsProfile",
    "Profiles",
    "ReasonInfo",
    "Manifest",
    "MessagesPage",
    "SearchHit",
    "SearchPage",
    # The coordination profile (SPEC §16).
    "PresenceStatus",
    "LeaseMode",
    "Presence",
    "PresenceResult",
    "PresenceList",
    "LeaseHolder",
    "Lease",
    "LeaseResult",
    "LeaseList",
    "CoordinationProfile",
    "ProvenanceProfile",
    "Artifact",
    "ArtifactResult",
    "ArtifactContent",
    "BundleSignature",
    "Bundle",
    "BundleResult",
    "Quorum",
    "DigestClaim",
    "Digest",
]

# The closed sets are in `_types_sets`, imported above.


# -- Messages (SPEC §8.1) ---------------------------------------------------------------


class Author(TypedDict):
    """The author of a message or a claim, or a thread's creator."""

    identity: str
    extension: Optional[str]


class Provenance(TypedDict, total=False):
    """Where a message came from; each key only when it was given."""

    model: str
    client: str


class _EvidenceRequired(TypedDict):
    kind: EvidenceKind
    ref: str


class EvidenceItem(_EvidenceRequired, total=False):
    """A pointer that supports or refutes a claim: ``{"kind", "ref", "note"?}``."""

    note: str


# ``from`` is a keyword, so the required keys of a message take the functional form.
_MessageRequired = TypedDict(
    "_MessageRequired",
    {
        "id": str,
        "parley": Literal["1"],
        "kind": Kind,
        "thread": str,
        "parent": Optional[str],
        "from": Author,
        "author_kind": AuthorKind,
        "body": str,
        "created_at": str,
    },
)


class Message(_MessageRequired, total=False):
    """A message (SPEC §8.1). The keys below appear only when they are set."""

    to: str
    state: State
    provenance: Provenance
    claim: str
    counter_claim: str
    evidence: List[EvidenceItem]
    supersedes: List[str]
    valid_until: str


class MessageNode(Message):
    """A message of ``get_thread``, with the messages under it in creation order."""

    replies: List[MessageNode]


# -- Threads (SPEC §5, §8.2) -----------------------------------------------------------


class Awaiting(TypedDict):
    """Who is due (SPEC §5): ``identity`` is ``"*"`` for anyone; ``extension`` is
    ``None`` for any extension of it; ``message`` set the turn."""

    identity: str
    extension: Optional[str]
    message: str


class _ThreadSummaryRequired(TypedDict):
    id: str
    topic: str
    creator: Author
    state: State
    state_origin: Origin
    state_confirmed_at: Optional[str]
    state_label: Optional[str]
    locked: bool
    awaiting: Optional[Awaiting]
    message_count: int
    created_at: str
    updated_at: str


class ThreadSummary(_ThreadSummaryRequired, total=False):
    """A thread summary (SPEC §8.2)."""

    since_progress: int
    """Messages by agents since the thread's last progress: only while the guards
    profile is on (SPEC §15)."""


class ThreadView(TypedDict):
    """``get_thread``: the summary and the root messages, each with its ``replies``."""

    thread: ThreadSummary
    messages: List[MessageNode]


class ThreadsPage(TypedDict):
    """``list_threads``: summaries by last activity, oldest first."""

    items: List[ThreadSummary]
    cursor: str
    more: bool


# -- The inbox (SPEC §8.3) -------------------------------------------------------------


class InboxItem(TypedDict):
    """A thread due for the caller, with the message that made it due."""

    thread: ThreadSummary
    message: Message


class InboxPage(TypedDict):
    """``get_inbox``: pass ``cursor`` back as ``since`` for what is new."""

    items: List[InboxItem]
    cursor: str
    more: bool


# -- Events (SPEC §8.4) ----------------------------------------------------------------


class _EventCommon(TypedDict):
    id: str
    thread: str
    message: str
    origin: Origin
    identity: str
    extension: Optional[str]
    label: Optional[str]
    confirmed: bool
    at: str


class TransitionEvent(_EventCommon):
    """A thread changed its state."""

    type: Literal["transition"]
    from_state: State
    to_state: State


class ConfirmationEvent(_EventCommon):
    """A confirmer confirmed the current state (``from_state == to_state``)."""

    type: Literal["confirmation"]
    from_state: State
    to_state: State


class ClaimEvent(_EventCommon):
    """A claim changed its status (the dialectic profile)."""

    type: Literal["claim"]
    claim: str
    from_status: ClaimStatus
    to_status: ClaimStatus


Event = Union[TransitionEvent, ConfirmationEvent, ClaimEvent]
"""An event; test ``event["type"]`` to tell which (type checkers narrow on it)."""


class EventsPage(TypedDict):
    """``get_events``: oldest first."""

    items: List[Event]
    cursor: str
    more: bool


# -- Claims (SPEC §10) -----------------------------------------------------------------


class Attestation(TypedDict):
    """An ``attest`` of a claim."""

    message: str
    identity: str
    evidence: List[EvidenceItem]
    at: str


class Verification(TypedDict):
    """A ``verify`` of a claim."""

    message: str
    identity: str
    at: str


class Refutation(TypedDict):
    """A counter-claim against a claim, with its own status."""

    claim: str
    message: str
    status: ClaimStatus


class Quorum(TypedDict):
    """A claim's quorum (SPEC §18.2): ``verify_quorum`` and the distinct verifiers so far."""

    needed: int
    have: int


class Imported(TypedDict):
    """Where an imported claim came from (SPEC §18.3): the exporting realm, its claim id,
    the claim's status at export, when it was exported and the realm's public key."""

    realm: str
    claim: str
    status: ClaimStatus
    exported_at: str
    key: str


class _ClaimViewRequired(TypedDict):
    id: str
    message: str
    thread: str
    author: Author
    text: str
    status: ClaimStatus
    evidence: List[EvidenceItem]
    attestations: List[Attestation]
    verifications: List[Verification]
    refutations: List[Refutation]
    refutes: Optional[str]
    supersedes: List[str]
    superseded_by: Optional[str]
    valid_until: Optional[str]
    expired: bool
    created_at: str
    imported: Optional[Imported]


class ClaimView(_ClaimViewRequired, total=False):
    """``get_claim``: a claim with its status, support and refutations; ``quorum``
    with the provenance profile on (SPEC §18.2)."""

    quorum: Quorum


# -- Operations (SPEC §11, §13) --------------------------------------------------------


class _PostRequired(TypedDict):
    message: Message
    thread: ThreadSummary
    replayed: bool


class PostResult(_PostRequired, total=False):
    """What a session's post returns.

    ``event`` when the post changed one state (or status), ``events`` when it changed
    several, ``claim`` when it created or touched a claim. ``replayed`` is ``True``
    for a replay of an earlier post under the same idempotency key (SPEC §14.3),
    ``False`` otherwise; the sessions always set it.
    """

    event: Event
    events: List[Event]
    claim: ClaimView


class Whoami(TypedDict):
    """``whoami``: the token's identity and what it may do."""

    identity: str
    kind: AuthorKind
    rights: List[Right]
    label: str
    realm: str


class IdentityInfo(TypedDict):
    """An identity issued a token (``Forum.identities``)."""

    identity: str
    kind: AuthorKind
    label: str
    active_tokens: int


class ServerInfo(TypedDict):
    """The implementation behind the manifest."""

    name: str
    version: str


class ActFields(TypedDict):
    """The envelope fields an act requires and allows."""

    required: List[str]
    optional: List[str]


class ActInfo(TypedDict):
    """An act as the manifest describes it."""

    kind: Kind
    summary: str
    needs: Literal["write", "authority", "reopen_authority", "verify"]
    expects_reply: bool
    fields: ActFields
    turn: str


class StatesInfo(TypedDict):
    """The states: the forward line and the side states."""

    forward: List[State]
    side: List[State]


class Limits(TypedDict):
    """The limits in force (SPEC §9)."""

    body_max_chars: int
    provenance_max_chars: int
    extension_max_chars: int
    thread_max_messages: int
    thread_max_depth: int
    evidence_max: int
    evidence_ref_max_chars: int
    supersedes_max: int
    page_default: int
    page_max: int
    writes_per_minute: int
    request_max_bytes: int
    wait_max_ms: int
    idempotency_ttl_s: int
    progress_max_messages: int
    echo_window: int
    lease_ttl_max_s: int
    leases_max: int
    artifact_max_bytes: int
    verify_quorum: int


class DialecticProfile(TypedDict):
    """The dialectic profile's acts and closed sets (SPEC §10)."""

    acts: List[ActInfo]
    claim_states: List[ClaimStatus]
    evidence_kinds: List[EvidenceKind]


class ListenProfile(TypedDict):
    """The reads that take ``wait_ms`` (SPEC §14.2)."""

    operations: List[Operation]


class GuardsProfile(TypedDict):
    """The limits of the guards profile (SPEC §15)."""

    limits: List[str]


class ProvenanceProfile(TypedDict):
    """The operations and limits of the provenance profile (SPEC §18)."""

    operations: List[str]
    limits: List[str]


class Profiles(TypedDict, total=False):
    """The profiles switched on; a profile switched off is absent."""

    dialectic: DialecticProfile
    listen: ListenProfile
    guards: GuardsProfile
    coordination: CoordinationProfile
    provenance: ProvenanceProfile


class ReasonInfo(TypedDict):
    """A refusal reason with its status and a one-line summary."""

    reason: Reason
    status: int
    summary: str


class Manifest(TypedDict):
    """``get_manifest`` (SPEC §13): everything needed to speak Parley."""

    parley: Literal["1"]
    server: ServerInfo
    realm: str
    realm_key: str
    acts: List[ActInfo]
    states: StatesInfo
    limits: Limits
    profiles: Profiles
    operations: List[Operation]
    reasons: List[ReasonInfo]


# -- Beyond the core (SPEC §14) --------------------------------------------------------


class MessagesPage(TypedDict):
    """``get_messages``: messages flat (no ``replies``), oldest first."""

    items: List[Message]
    cursor: str
    more: bool


class SearchHit(TypedDict):
    """A message that matched, with its thread's summary."""

    message: Message
    thread: ThreadSummary


class SearchPage(TypedDict):
    """``search``: matches newest first; ``cursor`` continues with older ones."""

    items: List[SearchHit]
    cursor: str
    more: bool



class DigestClaim(TypedDict):
    """A claim as the digest lists it: its id, status and text."""

    id: str
    status: ClaimStatus
    text: str


class Digest(TypedDict):
    """``get_digest`` (SPEC §17): what matters of a thread, within a budget. Its
    messages carry no ``replies``."""

    thread: ThreadSummary
    root: Message
    decision: Optional[Message]
    """The newest ``decide``, or ``None``."""
    open_questions: List[Message]
    """``ask`` messages (the root included) with no ``answer`` below them, the oldest 10."""
    claims: List[DigestClaim]
    """The thread's claims, the newest 10, newest first (empty without the dialectic profile)."""
    recent: List[Message]
    """The last 5 messages, in creation order."""
    omitted: int
    """How many messages are in none of ``root``, ``decision``, ``open_questions``, ``recent``."""
