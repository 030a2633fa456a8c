"""Native core of Parley (use the :mod:`parley` package, not this module)."""

import datetime
import os
from typing import Any, Dict, List, Literal, Mapping, Optional, Sequence, Tuple, Union

from typing_extensions import Self, disjoint_base

from .types import AuthorKind, IdentityInfo, Manifest, Right

__all__ = ["Forum", "VERSION", "OPERATIONS", "REASONS", "check_integrity"]

VERSION: str
"""The version of the Parley library."""

OPERATIONS: Tuple[str, ...]
"""The operations of SPEC §11 in their fixed order: ``get_manifest``, ``whoami``, ``post``, …"""

REASONS: List[Dict[str, Any]]
"""Every refusal reason of SPEC §12 as ``{"reason", "status", "summary"}``."""

def check_integrity(path: Union[str, "os.PathLike[str]"]) -> bool:
    """Checks a forum file that no one holds open; ``True`` when it is sound.

    Raises :class:`parley.StorageError` when the file cannot be opened and
    :class:`parley.NotAForumError` for a file that is not a forum.
    """

@disjoint_base
class Forum:
    """A Parley forum in a file (``path``), in memory (``path=None``), or in a
    PostgreSQL database (``path="postgres://user@host/db?forum=NAME"``), shared with
    other processes (``docs/deployment.md``).

    Creates the file (or the database's forum) when it does not exist. ``realm`` names agent identities
    (``<realm>:<handle>``); ``limits`` overrides limits of SPEC §9 by name;
    ``profiles`` lists the profiles switched on, by default ``dialectic`` (claims,
    SPEC §10), ``listen`` (reads that wait, §14.2) and ``guards`` (loops across
    agents refused as ``echoed_body`` and ``no_progress``, §15; its limits are
    ``progress_max_messages`` and ``echo_window``) and ``coordination`` (presence and
    leases, §16; its limits are ``lease_ttl_max_s`` and ``leases_max``) and
    ``provenance`` (artifacts, quorum and signed claims, §18; its limits are
    ``artifact_max_bytes`` and ``verify_quorum``): a profile not listed is off, so
    ``profiles=()`` switches all five off; ``guards=False`` (or ``True``) switches the
    guards profile alone, whatever ``profiles`` says, and ``coordination=`` and
    ``provenance=`` their profiles likewise; ``trusted_realms`` maps the realms whose
    signed claims ``import_claim`` accepts to their keys (``{"north": "ed25519:…"}``,
    each realm's :attr:`realm_key`; the forum trusts its own); ``durable=False`` skips the
    fsync after each post; ``clock`` fixes the time (an RFC 3339 string or an aware
    datetime), for deterministic tests.

    Raises ``ValueError`` for bad settings, :class:`parley.StorageError` when the file
    cannot be opened (for instance, another ``Forum`` holds it), and
    :class:`parley.SchemaTooNewError` / :class:`parley.NotAForumError` for a file this
    version cannot read. Thread-safe: share one forum among threads; the GIL is
    released while the engine works. A context manager: leaving it calls :meth:`close`.
    """

    def __new__(
        cls,
        path: Union[str, "os.PathLike[str]", None] = None,
        *,
        realm: str = "ainotes",
        limits: Optional[Mapping[str, int]] = None,
        profiles: Sequence[str] = ["dialectic", "listen", "guards", "coordination", "provenance"],
        guards: Optional[bool] = None,
        coordination: Optional[bool] = None,
        provenance: Optional[bool] = None,
        trusted_realms: Optional[Mapping[str, str]] = None,
        durable: bool = True,
        clock: Union[str, datetime.datetime, None] = None,
    ) -> "Forum": ...
    @property
    def path(self) -> Optional[str]:
        """The forum file (or its PostgreSQL URL, password masked), or ``None`` for an in-memory forum."""
    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called."""
    @property
    def realm(self) -> str:
        """The realm of agent identities."""
    @property
    def realm_key(self) -> str:
        """The public half of the forum's realm key, ``ed25519:<base64url>`` (SPEC §18.3):
        what another forum names in ``trusted_realms`` to accept this one's claims. The
        private half never leaves the forum."""
    @property
    def limits(self) -> Dict[str, int]:
        """The limits in force, by name (as in the manifest)."""
    @property
    def waits_ended(self) -> bool:
        """Whether :meth:`end_waits` (or :meth:`close`) was called."""
    def close(self) -> None:
        """Releases the forum and its file. Idempotent; later calls raise ``ValueError``.

        Ends every wait first (:meth:`end_waits`), so reads waiting in other threads
        return their current result. Calls already running finish first; the file is
        released when the last of them returns.
        """
    def end_waits(self) -> None:
        """Ends every wait, now and later: each read waiting with ``wait_ms`` returns its
        current result at once, and later waits do not wait. For a host shutting down."""
    def _commit_fd(self) -> int:
        """A new non-blocking file descriptor, owned by the caller (close it with
        ``os.close``), that gets one byte after each durable commit and once when the
        waits end, and reads end-of-file once the forum is closed. Drain it when it is
        readable; a full buffer only means a byte is already waiting.

        Raises ``NotImplementedError`` where there are no Unix sockets.
        """
    def __enter__(self) -> Self: ...
    def __exit__(self, *exc_info: object) -> Literal[False]:
        """Closes the forum; exceptions propagate."""
    def create_token(
        self,
        handle: str,
        *,
        kind: AuthorKind = "llm",
        rights: Sequence[Right] = ("read", "write"),
        label: Optional[str] = None,
    ) -> str:
        """Issues a token and returns its secret (shown only here).

        ``kind`` is ``"llm"`` (identity ``<realm>:<handle>``, holding ``rights``, any of
        ``read``, ``write``, ``lock``, ``verify``) or ``"human"`` (identity
        ``human:<handle>``, every right). ``label`` (default: the handle) is shown as
        ``KI · <label>`` on moderated state changes. A bad handle, kind or right is a
        ``ValueError``.
        """
    def revoke_token(self, token: str) -> bool:
        """Revokes a token; ``False`` when it was unknown or already revoked."""
    def identities(self) -> List[IdentityInfo]:
        """Every identity issued a token: ``{"identity", "kind", "label", "active_tokens"}``."""
    def call(self, token: Optional[str], operation: str, args: Optional[Mapping[str, Any]] = None) -> Dict[str, Any]:
        """The generic call (SPEC §11.3): runs ``operation`` with ``args`` for ``token``.

        Returns the result as a dict. A refusal raises :class:`parley.Refusal` (the
        subclass for its status) with the stable ``reason``; an unknown operation is a
        ``ValueError``; ``args`` that are not a mapping (nor ``None``), or an argument
        that is not JSON (a set, bytes, an object), are a ``TypeError``. A read given ``wait_ms`` (the listen profile) may block until it
        has an item; the GIL is released meanwhile, so other threads run and post.
        """
    def mcp(self, token: Optional[str], request: Union[Mapping[str, Any], str]) -> Optional[Dict[str, Any]]:
        """Handles one MCP JSON-RPC message (a dict or its JSON text) for ``token``.

        Returns the JSON-RPC response as a dict, or ``None`` for a notification.
        """
    def manifest(self) -> Manifest:
        """The manifest (SPEC §13): everything needed to speak Parley."""
