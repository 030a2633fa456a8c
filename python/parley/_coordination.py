"""The coordination profile (SPEC §16) on a session: presence and leases.

:class:`Coordination` gives :class:`parley.Session` its five methods and
:class:`AsyncCoordination` gives :class:`parley.aio.AsyncSession` theirs; both build
the same arguments (here, checked for type) and make the generic call, so the engine
is the one judge. ``extension`` defaults to the session's own.
"""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional, cast

from . import _args
from ._args import Id
from .types import Lease, LeaseMode, LeaseResult, Presence, PresenceList, PresenceResult, PresenceStatus

__all__ = ["Coordination", "AsyncCoordination"]


def _set_presence_args(
    status: PresenceStatus, note: Optional[str], ttl_s: Optional[int], extension: Optional[str]
) -> Dict[str, Any]:
    _args.check("status", status, str, "a str")
    _args.check_opt_str("note", note)
    _args.check_opt_str("extension", extension)
    _check_opt_int("ttl_s", ttl_s)
    return _present(status=status, note=note, ttl_s=ttl_s, extension=extension)


def _lease_args(
    resource: str,
    mode: Optional[LeaseMode],
    ttl_s: Optional[int],
    thread: Optional[Id],
    note: Optional[str],
    extension: Optional[str],
) -> Dict[str, Any]:
    _args.check("resource", resource, str, "a str")
    _args.check_opt_str("mode", mode)
    _args.check_opt_str("note", note)
    _args.check_opt_str("extension", extension)
    _check_opt_int("ttl_s", ttl_s)
    if thread is not None:
        _args.check_id("thread", thread)
    return _present(resource=resource, mode=mode, ttl_s=ttl_s, thread=thread, note=note, extension=extension)


def _lease_id(lease: Id) -> Dict[str, Any]:
    _args.check_id("lease", lease)
    return {"lease": lease}


def _filters(**given: Optional[str]) -> Dict[str, Any]:
    for name, value in given.items():
        _args.check_opt_str(name, value)
    return _present(**given)


def _present(**given: Any) -> Dict[str, Any]:
    return {k: v for k, v in given.items() if v is not None}


def _check_opt_int(name: str, value: object) -> None:
    if value is not None and (type(value) is not int):
        raise TypeError(f"{name} must be an int or None, not '{type(value).__name__}'")


class _Calls:
    """What the mixins need of their session."""

    @property
    def extension(self) -> Optional[str]:
        raise NotImplementedError

    def call(self, operation: str, args: Optional[Mapping[str, Any]] = None) -> Any:
        raise NotImplementedError


class Coordination(_Calls):
    """``set_presence``, ``get_presence``, ``lease``, ``release``, ``get_leases``."""

    def set_presence(
        self,
        status: PresenceStatus,
        *,
        note: Optional[str] = None,
        ttl_s: Optional[int] = None,
        extension: Optional[str] = None,
    ) -> Presence:
        """``set_presence`` (SPEC §16.1): says you are ``working``, ``idle`` or ``away``
        for ``ttl_s`` seconds (default 900); returns the presence as recorded."""
        args = _set_presence_args(status, note, ttl_s, extension or self.extension)
        return cast(PresenceResult, self.call("set_presence", args))["presence"]

    def get_presence(self, identity: Optional[str] = None) -> List[Presence]:
        """``get_presence``: every presence (or ``identity``'s), ``stale`` when expired."""
        return cast(PresenceList, self.call("get_presence", _filters(identity=identity)))["items"]

    def lease(
        self,
        resource: str,
        *,
        mode: Optional[LeaseMode] = None,
        ttl_s: Optional[int] = None,
        thread: Optional[Id] = None,
        note: Optional[str] = None,
        extension: Optional[str] = None,
    ) -> Lease:
        """``lease`` (SPEC §16.2): claims ``resource`` (a trailing ``/`` covers everything
        under it), ``exclusive`` by default, for ``ttl_s`` seconds (default 600); asking
        again renews it (same id). Another holder's overlapping lease raises
        :class:`parley.LeaseConflict`, whose ``leases`` name it."""
        args = _lease_args(resource, mode, ttl_s, thread, note, extension or self.extension)
        return cast(LeaseResult, self.call("lease", args))["lease"]

    def release(self, lease: Id) -> Lease:
        """``release``: ends an active lease (``ls_<n>`` or its number); the result
        carries ``released_at``."""
        return cast(LeaseResult, self.call("release", _lease_id(lease)))["lease"]

    def get_leases(self, *, resource: Optional[str] = None, identity: Optional[str] = None) -> List[Lease]:
        """``get_leases``: the active leases, by id, overlapping ``resource`` and/or held
        by ``identity`` when given."""
        return cast(Dict[str, List[Lease]], self.call("get_leases", _filters(resource=resource, identity=identity)))[
            "items"
        ]


class AsyncCoordination:
    """The coroutine versions, for :class:`parley.aio.AsyncSession`."""

    @property
    def extension(self) -> Optional[str]:
        raise NotImplementedError

    async def call(self, operation: str, args: Optional[Mapping[str, Any]] = None) -> Dict[str, Any]:
        raise NotImplementedError

    async def set_presence(
        self,
        status: PresenceStatus,
        *,
        note: Optional[str] = None,
        ttl_s: Optional[int] = None,
        extension: Optional[str] = None,
    ) -> Presence:
        """See :meth:`parley.Session.set_presence`."""
        args = _set_presence_args(status, note, ttl_s, extension or self.extension)
        return cast(PresenceResult, await self.call("set_presence", args))["presence"]

    async def get_presence(self, identity: Optional[str] = None) -> List[Presence]:
        """See :meth:`parley.Session.get_presence`."""
        return cast(PresenceList, await self.call("get_presence", _filters(identity=identity)))["items"]

    async def lease(
        self,
        resource: str,
        *,
        mode: Optional[LeaseMode] = None,
        ttl_s: Optional[int] = None,
        thread: Optional[Id] = None,
        note: Optional[str] = None,
        extension: Optional[str] = None,
    ) -> Lease:
        """See :meth:`parley.Session.lease`."""
        args = _lease_args(resource, mode, ttl_s, thread, note, extension or self.extension)
        return cast(LeaseResult, await self.call("lease", args))["lease"]

    async def release(self, lease: Id) -> Lease:
        """See :meth:`parley.Session.release`."""
        return cast(LeaseResult, await self.call("release", _lease_id(lease)))["lease"]

    async def get_leases(self, *, resource: Optional[str] = None, identity: Optional[str] = None) -> List[Lease]:
        """See :meth:`parley.Session.get_leases`."""
        found = await self.call("get_leases", _filters(resource=resource, identity=identity))
        return cast(Dict[str, List[Lease]], found)["items"]
