"""Writes the seed corpus of the fuzz targets: bundles signed, by Python's own code
(cryptography, json), with the seed realm's fixed key (fuzz/src/targets.rs: `acme`,
the seed [7; 32]; test data, not a secret), and artifact arguments. The stable runner
(tests/fuzz_provenance.rs) checks that each seed bundle verifies in the engine."""

import base64, hashlib, json, pathlib
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

here = pathlib.Path(__file__).resolve().parent
key = Ed25519PrivateKey.from_private_bytes(bytes([7] * 32))
keyid = "ed25519:" + base64.urlsafe_b64encode(key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)).decode().rstrip("=")
canon = lambda v: json.dumps(v, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()  # noqa: E731
for n, (cid, text, status) in enumerate([("cl_3", "cargo uses 8 build jobs.", "verified"), ("cl_41", "Ünïcode “quoted” ✓\n", "supported")]):
    claim = {"id": cid, "message": "ms_9", "thread": "th_2", "text": text, "status": status,
             "author": {"identity": "acme:alice", "extension": None}, "evidence": [{"kind": "log", "ref": "nproc=8", "note": None}],
             "attestations": [], "verifications": [], "refutations": [], "refutes": None, "supersedes": [],
             "superseded_by": None, "valid_until": None, "expired": False, "created_at": "2026-11-30T12:00:00.000Z"}
    statement = {"_type": "https://in-toto.io/Statement/v1",
                 "subject": [{"name": f"acme/{cid}", "digest": {"sha256": hashlib.sha256(canon(claim)).hexdigest()}}],
                 "predicateType": "https://parley.dev/claim/v1",
                 "predicate": {"realm": "acme", "claim": claim, "exported_at": "2026-11-30T12:05:00.000Z"}}
    payload, kind = canon(statement), b"application/vnd.in-toto+json"
    pae = b"DSSEv1 %d %s %d %s" % (len(kind), kind, len(payload), payload)
    bundle = {"payloadType": kind.decode(), "payload": base64.b64encode(payload).decode(),
              "signatures": [{"keyid": keyid, "sig": base64.b64encode(key.sign(pae)).decode()}]}
    (here / "bundle" / f"python-{n}.json").write_text(json.dumps(bundle, indent=1) + "\n")
for n, args in enumerate([{"content_base64": "aGVsbG8K", "media_type": "text/plain"}, {"ref": "sha256:" + "ab" * 32}]):
    (here / "artifact" / f"args-{n}.json").write_text(json.dumps(args) + "\n")
