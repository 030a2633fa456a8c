"""``parley.Forum``: the native forum plus the Python conveniences."""

from __future__ import annotations

from typing import Mapping, Optional

from . import _parley
from ._session import Session

__all__ = ["Forum"]


class Forum(_parley.Forum):
    """A Parley forum in a file (``path``), in memory (``path=None``), or in a
    PostgreSQL database (``path="postgres://user@host/db?forum=NAME"``), which other
    processes and servers may share at once (``docs/deployment.md``).

    Use it as a context manager, or call :meth:`close`, to release the file.
    Settings: ``realm`` of agent identities, ``limits`` (SPEC §9, e.g.
    ``{"body_max_chars": 500}``), ``profiles`` (default ``["dialectic", "listen",
    "guards", "coordination", "provenance"]``; a profile not listed is off), ``guards``
    (``False`` switches the guards profile off alone, SPEC §15), ``coordination``
    (likewise for presence and leases, SPEC §16), ``provenance`` (likewise for
    artifacts, quorum and signed claims, SPEC §18), ``trusted_realms`` (the realms whose
    signed claims it imports, each to its :attr:`realm_key`), ``durable`` (fsync every
    post) and ``clock`` (fix the time, for tests). Closing it, or :meth:`end_waits`, ends every waiting read.
    """

    def session(
        self,
        token: str,
        extension: Optional[str] = None,
        *,
        provenance: Optional[Mapping[str, str]] = None,
        retries: int = 0,
        retry_backoff: float = 0.05,
    ) -> Session:
        """A :class:`Session` speaking for ``token`` (as sub-agent ``extension``).

        ``retries``: how many more times a call failing with :class:`parley.StorageError`
        is run, each post under one idempotency key, so that it is written once; see
        :class:`Session`.
        """
        return Session(self, token, extension, provenance=provenance, retries=retries, retry_backoff=retry_backoff)
