"""The shapes of the coordination profile's results (SPEC §16): presence and leases.

Re-exported by :mod:`parley.types`, where they belong; kept apart so that no module
grows past a screenful of shapes.
"""

from __future__ import annotations

from typing import List, Literal, Optional, TypedDict

PresenceStatus = Literal["working", "idle", "away"]
"""What an agent says it is doing (SPEC §16.1)."""

LeaseMode = Literal["exclusive", "shared"]
"""Whether a lease excludes every other holder or only exclusive ones (SPEC §16.2)."""


class Presence(TypedDict):
    """The presence of one (identity, extension). ``since`` is when the status last
    changed; past ``expires_at`` it reads ``stale`` with its last status kept."""

    identity: str
    extension: Optional[str]
    status: PresenceStatus
    note: Optional[str]
    since: str
    expires_at: str
    stale: bool


class PresenceResult(TypedDict):
    """``set_presence``: the caller's presence as recorded."""

    presence: Presence


class PresenceList(TypedDict):
    """``get_presence``: by identity, then extension (none first)."""

    items: List[Presence]


class LeaseHolder(TypedDict):
    """Who holds a lease: an identity and its extension."""

    identity: str
    extension: Optional[str]


class _LeaseRequired(TypedDict):
    id: str
    resource: str
    mode: LeaseMode
    holder: LeaseHolder
    thread: Optional[str]
    note: Optional[str]
    granted_at: str
    expires_at: str


class Lease(_LeaseRequired, total=False):
    """A lease (SPEC §16.2); ``released_at`` only in what ``release`` returns."""

    released_at: str


class LeaseResult(TypedDict):
    """``lease`` and ``release``: the lease."""

    lease: Lease


class LeaseList(TypedDict):
    """``get_leases``: the active leases, by id."""

    items: List[Lease]


class CoordinationProfile(TypedDict):
    """The coordination profile's operations and limits (SPEC §16)."""

    operations: List[str]
    limits: List[str]
