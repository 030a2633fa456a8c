"""The verification of docs/provenance.md, run as written there, on a bundle made here
with a key of our own (the shape of SPEC §18.3), and the tamper cases of tamper.py,
each of which it must refuse."""

from __future__ import annotations

import base64
import hashlib
import json
import re
from pathlib import Path
from typing import Any, Callable, Dict

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

import tamper

DOC = Path(__file__).resolve().parents[2] / "docs" / "provenance.md"


def doc_code() -> Dict[str, Any]:
    """The doc's Python block, run: its `verify` and `canonical`."""
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)
    assert len(blocks) == 1 and len(blocks[0].strip().splitlines()) < 20
    names: Dict[str, Any] = {}
    exec(compile(blocks[0], str(DOC), "exec"), names)
    return names


CLAIM = {
    "id": "cl_7", "message": "ms_12", "thread": "th_3", "text": "Port 7878 \"works\"\n— ünïcode ✓",
    "author": {"identity": "acme:bob", "kind": "llm", "label": None}, "status": "verified",
    "evidence": [{"kind": "artifact", "ref": "sha256:" + "ab" * 32, "note": "log"}],
    "attestations": [], "verifications": [{"by": "acme:judge", "at": "2026-11-30T12:00:00.000Z"}],
    "refutations": [], "refutes": None, "supersedes": [], "superseded_by": None,
    "valid_until": None, "expired": False, "created_at": "2026-11-30T12:00:00.000Z",
    "quorum": {"needed": 1, "have": 1}, "imported": None,
}


def jcs(value: Any) -> bytes:
    """RFC 8785 by hand, for what a claim holds (strings, ints, bools, null, arrays,
    objects): independent of the doc's `canonical`, which it must equal."""
    if isinstance(value, dict):
        items = sorted(value.items(), key=lambda kv: kv[0].encode("utf-16-be"))
        return b"{" + b",".join(jcs(k) + b":" + jcs(v) for k, v in items) + b"}"
    if isinstance(value, list):
        return b"[" + b",".join(jcs(v) for v in value) + b"]"
    if isinstance(value, str):
        esc = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r"}
        out = "".join(esc.get(c, f"\\u{ord(c):04x}" if ord(c) < 0x20 else c) for c in value)
        return ('"' + out + '"').encode()
    if value is None or isinstance(value, bool):
        return {None: b"null", True: b"true", False: b"false"}[value]
    assert isinstance(value, int)
    return str(value).encode()


@pytest.fixture(scope="module")
def signed() -> Dict[str, Any]:
    key = Ed25519PrivateKey.generate()
    realm_key = tamper.key_id(key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw))
    statement = {
        "_type": "https://in-toto.io/Statement/v1",
        "subject": [{"name": "acme/cl_7", "digest": {"sha256": hashlib.sha256(jcs(CLAIM)).hexdigest()}}],
        "predicateType": "https://parley.dev/claim/v1",
        "predicate": {"realm": "acme", "claim": CLAIM, "exported_at": "2026-11-30T12:05:00.000Z"},
    }
    payload, kind = jcs(statement), "application/vnd.in-toto+json"
    bundle = {
        "payloadType": kind,
        "payload": base64.b64encode(payload).decode(),
        "signatures": [{"keyid": realm_key, "sig": base64.b64encode(key.sign(tamper.pae(kind, payload))).decode()}],
    }
    return {"bundle": bundle, "realm_key": realm_key, "sign": key.sign, "statement": statement}


def refused(verify: Callable[..., Any], candidate: bytes, realm_key: str) -> bool:
    try:
        verify(json.loads(candidate), realm_key)
    except Exception:  # noqa: BLE001 - any failure is a refusal here
        return True
    return False


def test_the_doc_verifies_a_bundle_and_its_canonical_json_is_rfc_8785(signed: Dict[str, Any]) -> None:
    code = doc_code()
    assert code["verify"](signed["bundle"], signed["realm_key"]) == signed["statement"]
    assert code["canonical"](signed["statement"]) == jcs(signed["statement"])
    assert code["canonical"](CLAIM) == jcs(CLAIM)


def test_every_tampered_bundle_is_refused(signed: Dict[str, Any]) -> None:
    verify, bundle, key = doc_code()["verify"], signed["bundle"], signed["realm_key"]
    names, lenient = [], []
    for name, candidate in tamper.cases(bundle, sign=signed["sign"]):
        names.append(name)
        if tamper.same_meaning(bundle, candidate):
            # Python's base64 ignores a base64 field's unused low bits: only a strict
            # decoder (Parley's) refuses these; they say the same thing as the original.
            lenient.append(name)
            continue
        assert refused(verify, candidate, key), name
    assert len(lenient) <= 4, lenient
    for expected in ("other-key", "other-keyid", "indented", "reordered", "wrong-digest",
                     "resigned-indented", "resigned-wrong-digest"):
        assert expected in names
    assert sum(n.startswith("flip-envelope@") for n in names) >= 100
    assert sum(n.startswith("flip-statement@") for n in names) >= 100
