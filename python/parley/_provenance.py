"""The provenance profile (SPEC §18) on a session: artifacts and signed claims.

:class:`Provenance` gives :class:`parley.Session` its four methods and
:class:`AsyncProvenance` gives :class:`parley.aio.AsyncSession` theirs; both build the
same arguments (here, checked for type) and make the generic call, so the engine is
the one judge of every value. Quorum (§18.2) needs no method: ``get_claim`` carries it.
"""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any, Dict, Mapping, Optional, Tuple, Union, cast

from . import _args, _retry
from ._args import Id
from ._types_provenance import Artifact, ArtifactContent, ArtifactResult, Bundle, BundleResult
from .types import PostResult

__all__ = ["Provenance", "AsyncProvenance"]

BundleLike = Union[Mapping[str, Any], str, bytes]
"""A bundle as ``export_claim`` returned it, or its JSON text (e.g. a file's bytes)."""


def _put_args(content: object, media_type: Optional[str]) -> Dict[str, Any]:
    if not isinstance(content, (bytes, bytearray, memoryview)):
        raise TypeError(
            f"content must be bytes, bytearray or memoryview, not {_args.type_name(content)} (encode text first)"
        )
    _args.check_opt_str("media_type", media_type)
    args: Dict[str, Any] = {"content_base64": base64.b64encode(bytes(content)).decode("ascii")}
    if media_type is not None:
        args["media_type"] = media_type
    return args


def _ref_args(ref: object) -> Dict[str, Any]:
    _args.check("ref", ref, str, "a str")
    return {"ref": ref}


def _content(found: ArtifactContent) -> Tuple[Artifact, bytes]:
    try:
        return found["artifact"], base64.b64decode(found["content_base64"], validate=True)
    except (binascii.Error, ValueError) as exc:
        # The engine writes the base64 itself: this is a server that is not ours.
        raise ValueError(f"get_artifact: the content is not base64: {exc}") from None


def _claim_args(claim: object) -> Dict[str, Any]:
    _args.check_id("claim", claim)
    return {"claim": claim}


def _import_args(bundle: object, thread: Optional[Id]) -> Dict[str, Any]:
    parsed: Any = bundle
    if isinstance(bundle, (str, bytes)):
        try:
            parsed = json.loads(bundle)
        except ValueError:
            # Not JSON: the engine refuses it as `bundle_invalid`, as it refuses any
            # value that is not a bundle, so every binding gives the same refusal.
            parsed = bundle.decode("utf-8", "replace") if isinstance(bundle, bytes) else bundle
    elif isinstance(bundle, Mapping):
        parsed = dict(bundle)
    else:
        raise TypeError(f"bundle must be a dict or its JSON text (str or bytes), not {_args.type_name(bundle)}")
    args: Dict[str, Any] = {"bundle": parsed}
    if thread is not None:
        _args.check_id("thread", thread)
        args["thread"] = thread
    return args


class _Calls:
    """What the mixin needs of its session."""

    def call(self, operation: str, args: Optional[Mapping[str, Any]] = None) -> Any:
        raise NotImplementedError


class Provenance(_Calls):
    """``put_artifact``, ``get_artifact``, ``export_claim``, ``import_claim``."""

    def put_artifact(self, content: Union[bytes, bytearray, memoryview], *, media_type: Optional[str] = None) -> Artifact:
        """``put_artifact`` (SPEC §18.1): stores ``content`` and returns the artifact,
        whose ``ref`` (``sha256:<hex>``) evidence of kind ``artifact`` may name. The same
        bytes again return the first artifact. Over ``artifact_max_bytes``:
        ``limit_exceeded``; ``media_type`` defaults to ``application/octet-stream``."""
        return cast(ArtifactResult, self.call("put_artifact", _put_args(content, media_type)))["artifact"]

    def get_artifact(self, ref: str) -> Tuple[Artifact, bytes]:
        """``get_artifact``: the artifact named ``ref`` and its bytes; an unknown ref
        raises :class:`parley.NotFound` (``artifact_not_found``)."""
        return _content(cast(ArtifactContent, self.call("get_artifact", _ref_args(ref))))

    def export_claim(self, claim: Id) -> Bundle:
        """``export_claim`` (SPEC §18.3): the claim as a bundle signed with the realm's
        key, a DSSE envelope that :meth:`import_claim` of a forum trusting this realm
        accepts, and that anyone can check (``docs/provenance.md``)."""
        return cast(BundleResult, self.call("export_claim", _claim_args(claim)))["bundle"]

    def import_claim(self, bundle: BundleLike, *, thread: Optional[Id] = None) -> PostResult:
        """``import_claim``: checks ``bundle`` (a dict, or its JSON text) and posts its
        claim as yours, in ``thread`` or a new thread; returns what :meth:`post` returns
        (``replayed`` is always ``False``: an import is never replayed, a second one is
        refused).
        Refusals: ``bundle_invalid`` (:class:`parley.BadRequest`), ``realm_untrusted``
        (:class:`parley.Forbidden`), ``already_imported`` (:class:`parley.AlreadyImported`)."""
        return cast(PostResult, _retry.posted(self.call("import_claim", _import_args(bundle, thread))))


class AsyncProvenance:
    """The coroutine versions, for :class:`parley.aio.AsyncSession`."""

    async def call(self, operation: str, args: Optional[Mapping[str, Any]] = None) -> Dict[str, Any]:
        raise NotImplementedError

    async def put_artifact(
        self, content: Union[bytes, bytearray, memoryview], *, media_type: Optional[str] = None
    ) -> Artifact:
        """See :meth:`parley.Session.put_artifact`."""
        return cast(ArtifactResult, await self.call("put_artifact", _put_args(content, media_type)))["artifact"]

    async def get_artifact(self, ref: str) -> Tuple[Artifact, bytes]:
        """See :meth:`parley.Session.get_artifact`."""
        return _content(cast(ArtifactContent, await self.call("get_artifact", _ref_args(ref))))

    async def export_claim(self, claim: Id) -> Bundle:
        """See :meth:`parley.Session.export_claim`."""
        return cast(BundleResult, await self.call("export_claim", _claim_args(claim)))["bundle"]

    async def import_claim(self, bundle: BundleLike, *, thread: Optional[Id] = None) -> PostResult:
        """See :meth:`parley.Session.import_claim`."""
        return cast(PostResult, _retry.posted(await self.call("import_claim", _import_args(bundle, thread))))
