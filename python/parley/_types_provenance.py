"""The shapes of the provenance profile's results (SPEC §18): artifacts and bundles.

Re-exported by :mod:`parley.types`, where they belong; kept apart so that no module
grows past a screenful of shapes.
"""

from __future__ import annotations

from typing import List, TypedDict

# DSSE's own field name; a TypedDict's keys are the JSON's.
_PayloadType = TypedDict("_PayloadType", {"payloadType": str})


class Artifact(TypedDict):
    """A stored artifact (SPEC §18.1): ``ref`` is ``sha256:<hex>`` of its bytes; the
    same bytes stored again keep the first ``media_type`` and ``created_at``."""

    ref: str
    size: int
    media_type: str
    created_at: str


class ArtifactResult(TypedDict):
    """``put_artifact``'s result."""

    artifact: Artifact


class ArtifactContent(TypedDict):
    """``get_artifact``'s result through the generic call: the artifact and its bytes
    in base64 (the session's ``get_artifact`` decodes them)."""

    artifact: Artifact
    content_base64: str


class BundleSignature(TypedDict):
    """One DSSE signature: ``keyid`` is the signing realm's key (``ed25519:…``), ``sig``
    the base64 of the Ed25519 signature over DSSE's PAE."""

    keyid: str
    sig: str


class Bundle(_PayloadType):
    """A claim exported from its realm (SPEC §18.3): a DSSE envelope whose ``payload``
    (base64) is an in-toto Statement in RFC 8785 canonical JSON, and whose
    ``payloadType`` is ``application/vnd.in-toto+json``."""

    payload: str
    signatures: List[BundleSignature]


class BundleResult(TypedDict):
    """``export_claim``'s result."""

    bundle: Bundle
