"""Tampered variants of a Parley bundle (SPEC §18.3), each of which a verifier must refuse.

Independent of Parley: its own base64, JSON and Ed25519 (the ``cryptography`` package).
``cases(bundle)`` yields ``(name, envelope_bytes)`` from a valid bundle:

- ``flip-envelope@N``: one byte of the envelope's JSON text XOR 0x01, at many positions;
- ``flip-statement@N``: one byte of the decoded statement XOR 0x01, re-encoded, the
  signature kept;
- ``other-key``: the right PAE signed by another key, under the realm's keyid, and
  ``other-keyid`` the same under that other key's own id;
- ``indented`` and ``reordered``: the statement re-serialised non-canonically (indented;
  keys in reverse order), the original signature kept;
- ``wrong-digest``: a subject digest that does not match its claim, signature kept.

With ``sign`` (a function of the PAE bytes, for a key the caller holds, as in a
reference test), ``resigned-indented`` and ``resigned-wrong-digest`` are signed again by
the realm's own key, so that only the canonical-form and digest checks can refuse them.

Run as a script, ``python tamper.py BUNDLE.json [COUNT]`` prints the cases as JSON lines;
a verifier in Python takes them from :func:`cases`.
"""

from __future__ import annotations

import base64
import json
import sys
from typing import Any, Callable, Dict, Iterator, Optional, Tuple

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

Case = Tuple[str, bytes]


def pae(payload_type: str, payload: bytes) -> bytes:
    """DSSE's pre-authentication encoding."""
    kind = payload_type.encode()
    return b"DSSEv1 %d %s %d %s" % (len(kind), kind, len(payload), payload)


def key_id(public: bytes) -> str:
    return "ed25519:" + base64.urlsafe_b64encode(public).decode().rstrip("=")


def _with_payload(bundle: Dict[str, Any], payload: bytes, sig: Optional[bytes] = None, keyid: Optional[str] = None) -> bytes:
    out = json.loads(json.dumps(bundle))
    out["payload"] = base64.b64encode(payload).decode()
    if sig is not None:
        out["signatures"] = [{"keyid": keyid or bundle["signatures"][0]["keyid"], "sig": base64.b64encode(sig).decode()}]
    return json.dumps(out).encode()


def _positions(length: int, count: int) -> range:
    return range(0, length, max(1, length // count))


def cases(bundle: Dict[str, Any], sign: Optional[Callable[[bytes], bytes]] = None, count: int = 150) -> Iterator[Case]:
    text = json.dumps(bundle).encode()
    for n in _positions(len(text), count):
        flipped = bytearray(text)
        flipped[n] ^= 0x01
        yield f"flip-envelope@{n}", bytes(flipped)
    payload = base64.b64decode(bundle["payload"])
    for n in _positions(len(payload), count):
        flipped = bytearray(payload)
        flipped[n] ^= 0x01
        yield f"flip-statement@{n}", _with_payload(bundle, bytes(flipped))
    other = Ed25519PrivateKey.generate()
    other_sig = other.sign(pae(bundle["payloadType"], payload))
    other_id = key_id(other.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw))
    yield "other-key", _with_payload(bundle, payload, other_sig)
    yield "other-keyid", _with_payload(bundle, payload, other_sig, other_id)
    statement = json.loads(payload)
    indented = json.dumps(statement, indent=2, ensure_ascii=False).encode()
    reordered = json.dumps(_reversed(statement), separators=(",", ":"), ensure_ascii=False).encode()
    yield "indented", _with_payload(bundle, indented)
    yield "reordered", _with_payload(bundle, reordered)
    wrong = json.loads(payload)
    wrong["subject"][0]["digest"]["sha256"] = "0" * 64
    wrong_bytes = json.dumps(wrong, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
    yield "wrong-digest", _with_payload(bundle, wrong_bytes)
    if sign is not None:
        kind = bundle["payloadType"]
        yield "resigned-indented", _with_payload(bundle, indented, sign(pae(kind, indented)))
        yield "resigned-wrong-digest", _with_payload(bundle, wrong_bytes, sign(pae(kind, wrong_bytes)))


def _reversed(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _reversed(value[k]) for k in sorted(value, reverse=True)}
    if isinstance(value, list):
        return [_reversed(v) for v in value]
    return value


def same_meaning(original: Dict[str, Any], candidate: bytes) -> bool:
    """Whether ``candidate`` decodes, leniently, to the very same envelope: a flip in the
    unused low bits of a base64 field's last character. Only a verifier that insists on
    the canonical base64 (as Parley's does) refuses those."""
    try:
        got = json.loads(candidate)
        fields = lambda b: (b["payloadType"], base64.b64decode(b["payload"]),  # noqa: E731
                            [(s["keyid"], base64.b64decode(s["sig"])) for s in b["signatures"]])
        return bool(fields(got) == fields(original))
    except (ValueError, KeyError, TypeError):
        return False


if __name__ == "__main__":
    # tamper.py BUNDLE.json [COUNT]: one JSON line per case, {"name", "base64"} of its
    # bytes, for a verifier in another language (tests/fuzz_provenance.rs reads
    # tests/provenance/tampered.jsonl, made from fuzz/corpus/bundle/python-0.json).
    with open(sys.argv[1], "rb") as f:
        original = json.load(f)
    for name, candidate in cases(original, count=int(sys.argv[2]) if len(sys.argv) > 2 else 150):
        print(json.dumps({"name": name, "base64": base64.b64encode(candidate).decode()}))
