"""SPEC §18 from Python: artifacts, quorum and signed claims across realms through
``Session``, ``parley.aio`` and ``parley.connect`` against a real ``parley serve
--http``; ``trusted_realms=`` and ``Forum.realm_key``; every refusal the layer adds
or passes on (``artifact_not_found``, ``limit_exceeded``, ``bundle_invalid``,
``realm_untrusted``, ``already_imported`` as :class:`parley.AlreadyImported`) and the
``TypeError`` of each wrong type.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import pickle
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, Tuple

import pytest

import parley
import parley.aio
from served import SERVED_ONLY, Server

CLOCK = "2026-11-30T12:00:00.000Z"
NOWHERE = "sha256:" + "0" * 64


def statement(bundle: parley.Bundle) -> Dict[str, Any]:
    payload: Dict[str, Any] = json.loads(base64.b64decode(bundle["payload"]))
    return payload


def canonical(value: Any) -> bytes:
    """RFC 8785 for what a claim holds (strings, integers, no floats): sorted keys, no
    whitespace, UTF-8 as is. The independent check of every case is tests/provenance."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


@pytest.fixture
def realms(backend: str) -> Iterator[Tuple[parley.Forum, parley.Forum]]:
    """``north``, and ``south`` which trusts it; no posting rate limit in either."""
    no_rate = {"writes_per_minute": 0}
    with parley.Forum(realm="north", clock=CLOCK, limits=no_rate) as north:
        with parley.Forum(realm="south", clock=CLOCK, limits=no_rate, trusted_realms={"north": north.realm_key}) as south:
            yield north, south


def verified_claim(forum: parley.Forum, text: str = "Port 7878 is free.") -> Tuple[parley.Session, str]:
    """A claim of bob's with an attestation, verified by a judge: its session and id."""
    bob = forum.session(forum.create_token("bob"))
    judge = forum.session(forum.create_token("judge", rights=("read", "write", "verify")))
    carol = forum.session(forum.create_token("carol"))
    claim = bob.claim(text, evidence=[{"kind": "log", "ref": "ci.txt"}])["claim"]["id"]
    carol.attest("Seen on runner 2.", claim=claim, evidence=[{"kind": "url", "ref": "https://ci/2"}])
    judge.verify("Checked.", claim=claim)
    return bob, claim


# -- Artifacts (§18.1) -----------------------------------------------------------------


def test_artifacts_are_stored_once_by_their_digest(forum: parley.Forum, tokens: Dict[str, str]) -> None:
    alice, bob = forum.session(tokens["alice"]), forum.session(tokens["bob"])
    content = b"runner 3: port 7878 in use\n"
    ref = "sha256:" + hashlib.sha256(content).hexdigest()
    stored = alice.put_artifact(content, media_type="text/plain")
    assert stored == {"ref": ref, "size": len(content), "media_type": "text/plain", "created_at": CLOCK}
    # The same bytes again (as a bytearray, then a memoryview): the first artifact.
    assert bob.put_artifact(bytearray(content), media_type="text/x-log") == stored
    assert bob.put_artifact(memoryview(content)) == stored
    assert bob.get_artifact(ref) == (stored, content)
    assert alice.put_artifact(b"")["media_type"] == "application/octet-stream"

    with pytest.raises(parley.NotFound) as missing:
        bob.get_artifact(NOWHERE)
    assert (missing.value.reason, missing.value.status) == ("artifact_not_found", 404)

    # Evidence naming a stored artifact is accepted; an unknown sha256 ref is refused.
    claimed = bob.claim("7878 is taken on runner 3.", evidence=[{"kind": "artifact", "ref": ref}])
    assert claimed["message"]["evidence"] == [{"kind": "artifact", "ref": ref}]
    with pytest.raises(parley.NotFound) as unknown:
        bob.claim("So is 7879.", evidence=[{"kind": "artifact", "ref": NOWHERE}])
    assert unknown.value.reason == "artifact_not_found"


def test_artifact_refusals_and_wrong_types(forum: parley.Forum, tokens: Dict[str, str]) -> None:
    bob, reader = forum.session(tokens["bob"]), forum.session(tokens["reader"])
    for content in ("text", 5, None, [1, 2]):
        with pytest.raises(TypeError, match="content must be bytes"):
            bob.put_artifact(content)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="media_type must be a str"):
        bob.put_artifact(b"x", media_type=1)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="ref must be a str"):
        bob.get_artifact(7)  # type: ignore[arg-type]
    with pytest.raises(parley.Forbidden) as no_write:
        reader.put_artifact(b"x")
    assert no_write.value.reason == "token_right_missing"
    with pytest.raises(parley.BadRequest) as long_type:
        bob.put_artifact(b"x", media_type="t" * 101)
    assert long_type.value.reason == "invalid_argument"
    # Not base64 through the generic call (the session always encodes).
    with pytest.raises(parley.BadRequest) as not_b64:
        bob.call("put_artifact", {"content_base64": "@@@"})
    assert not_b64.value.reason == "invalid_argument"
    with pytest.raises(parley.BadRequest):
        bob.get_artifact("sha256:XYZ")


def test_artifact_max_bytes(backend: str) -> None:
    with parley.Forum(clock=CLOCK, limits={"artifact_max_bytes": 4}) as forum:
        bob = forum.session(forum.create_token("bob"))
        assert bob.put_artifact(b"1234")["size"] == 4
        with pytest.raises(parley.Conflict) as over:
            bob.put_artifact(b"12345")
        assert (over.value.reason, over.value.limit) == ("limit_exceeded", "artifact_max_bytes")
        assert forum.limits["artifact_max_bytes"] == 4


# -- Quorum (§18.2) --------------------------------------------------------------------


def test_a_quorum_of_distinct_verifiers(backend: str) -> None:
    with parley.Forum(clock=CLOCK, limits={"verify_quorum": 2, "writes_per_minute": 0}) as forum:
        bob = forum.session(forum.create_token("bob"))
        one, two = (forum.session(forum.create_token(h, rights=("read", "write", "verify"))) for h in ("v1", "v2"))
        claim = bob.claim("The build is reproducible.")["claim"]["id"]
        one.verify("Rebuilt it.", claim=claim)
        one.verify("Rebuilt it again.", claim=claim)
        got = bob.claim_status(claim)
        # Two verifications by one identity count once.
        assert (got["status"], got.get("quorum")) == ("unverified", {"needed": 2, "have": 1})
        assert len(got["verifications"]) == 2
        two.verify("Rebuilt it too.", claim=claim)
        got = bob.claim_status(claim)
        assert (got["status"], got.get("quorum")) == ("verified", {"needed": 2, "have": 2})
    with parley.Forum(clock=CLOCK, provenance=False) as forum:
        bob = forum.session(forum.create_token("bob"))
        claim = bob.claim("No quorum here.")["claim"]["id"]
        assert "quorum" not in bob.claim_status(claim)


# -- Signed claims across realms (§18.3) ----------------------------------------------


def test_a_claim_travels_from_north_to_south(realms: Tuple[parley.Forum, parley.Forum]) -> None:
    north, south = realms
    assert north.realm_key.startswith("ed25519:") and len(north.realm_key) == len("ed25519:") + 43
    assert north.manifest()["realm_key"] == north.realm_key != south.realm_key
    bob, claim = verified_claim(north)
    bundle = bob.export_claim(claim)
    assert bundle["payloadType"] == "application/vnd.in-toto+json"
    assert [s["keyid"] for s in bundle["signatures"]] == [north.realm_key]
    told = statement(bundle)
    assert told["subject"][0]["name"] == f"north/{claim}"
    assert told["predicate"]["claim"] == bob.claim_status(claim)
    assert told["subject"][0]["digest"]["sha256"] == hashlib.sha256(canonical(told["predicate"]["claim"])).hexdigest()

    carol = south.session(south.create_token("carol"))
    imported = carol.import_claim(bundle)
    new = imported["claim"]["id"]
    assert imported["message"]["body"] == "Port 7878 is free." and imported["message"]["kind"] == "assert"
    assert imported["message"]["from"]["identity"] == "south:carol" and imported["replayed"] is False
    view = carol.claim_status(new)
    assert view["imported"] == {
        "realm": "north",
        "claim": claim,
        "status": "verified",
        "exported_at": told["predicate"]["exported_at"],
        "key": north.realm_key,
    }
    assert view["status"] == "unverified"
    assert view["evidence"] == [
        {"kind": "hash", "ref": "sha256:" + told["subject"][0]["digest"]["sha256"], "note": f"north/{claim}: verified"}
    ]
    # A claim made here has no origin.
    assert carol.claim_status(carol.claim("Local.")["claim"]["id"])["imported"] is None

    # Once per realm and claim, whatever the form the bundle comes in.
    with pytest.raises(parley.AlreadyImported) as again:
        carol.import_claim(json.dumps(bundle))
    assert isinstance(again.value, parley.Conflict) and (again.value.reason, again.value.status) == ("already_imported", 409)
    with pytest.raises(parley.AlreadyImported):
        carol.import_claim(json.dumps(bob.export_claim(claim)).encode())

    # Into a thread of one's choosing.
    _, other = verified_claim(north, "Port 7879 is free.")
    dave = south.session(south.create_token("dave"))
    thread = dave.ask("Which ports are free?")["thread"]["id"]
    placed = carol.import_claim(bob.export_claim(other), thread=thread)
    assert placed["thread"]["id"] == thread


def test_bundles_that_are_refused(realms: Tuple[parley.Forum, parley.Forum]) -> None:
    north, south = realms
    bob, claim = verified_claim(north)
    bundle = bob.export_claim(claim)
    carol = south.session(south.create_token("carol"))
    reader = south.session(south.create_token("reader", rights=("read",)))

    def refused(given: Any) -> parley.Refusal:
        with pytest.raises(parley.Refusal) as caught:
            carol.import_claim(given)
        return caught.value

    # A statement whose claim was changed after signing: its digest no longer matches.
    told = statement(bundle)
    told["predicate"]["claim"]["text"] = "Port 7878 is taken."
    changed = dict(bundle, payload=base64.b64encode(canonical(told)).decode())
    assert refused(changed).reason == "bundle_invalid"
    # A signature that is not north's (the right length, another key's bytes).
    forged = dict(bundle, signatures=[{"keyid": north.realm_key, "sig": base64.b64encode(bytes(64)).decode()}])
    assert (refused(forged).reason, refused(forged).status) == ("realm_untrusted", 403)
    # Not JSON, not an envelope: the engine refuses both alike.
    assert refused("{not json").reason == "bundle_invalid"
    assert refused(b"\xff\xfe").reason == "bundle_invalid"
    assert refused({"payloadType": "text/plain"}).reason == "bundle_invalid"
    # A valid bundle needs the write right; nothing was imported by any of these.
    with pytest.raises(parley.Forbidden) as no_write:
        reader.import_claim(bundle)
    assert no_write.value.reason == "token_right_missing"
    assert carol.import_claim(bundle)["claim"]["id"]

    # A realm this forum does not trust.
    with parley.Forum(realm="east", clock=CLOCK) as east:
        dave = east.session(east.create_token("dave"))
        with pytest.raises(parley.Forbidden) as untrusted:
            dave.import_claim(bundle)
        assert untrusted.value.reason == "realm_untrusted"

    for wrong in (5, None, ["a"]):
        with pytest.raises(TypeError, match="bundle must be a dict"):
            carol.import_claim(wrong)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="thread must be an id"):
        carol.import_claim(bundle, thread=1.5)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="claim must be an id"):
        bob.export_claim(None)  # type: ignore[arg-type]
    with pytest.raises(parley.NotFound) as no_claim:
        bob.export_claim("cl_999")
    assert no_claim.value.reason == "claim_not_found"


def test_trusted_realms_settings(backend: str) -> None:
    with parley.Forum(realm="north") as north:
        key = north.realm_key
    wrongs: Tuple[Tuple[Any, str], ...] = (
        (["north"], "trusted_realms must be a dict"),
        ({1: key}, "keys must be str"),
        ({"north": 5}, "must be a str"),
    )
    for wrong, what in wrongs:
        with pytest.raises(TypeError, match=what):
            parley.Forum(trusted_realms=wrong)
    for bad in ({"north": "ed25519:short"}, {"north": "rsa:" + key[8:]}, {"North!": key}):
        with pytest.raises(ValueError, match="trusted_realms"):
            parley.Forum(trusted_realms=bad)


def test_the_realm_key_is_kept_with_the_forum(tmp_path: Path) -> None:
    with parley.Forum(tmp_path / "forum.redb") as forum:
        key = forum.realm_key
    with parley.Forum(tmp_path / "forum.redb") as forum:
        assert forum.realm_key == key
    closed = parley.Forum()
    closed.close()
    with pytest.raises(ValueError, match="closed"):
        _ = closed.realm_key


def test_the_switch(backend: str) -> None:
    with parley.Forum(clock=CLOCK, provenance=False) as forum:
        bob = forum.session(forum.create_token("bob"))
        assert "provenance" not in forum.manifest()["profiles"]
        claim = bob.claim("Off.")["claim"]["id"]
        for call in (
            lambda: bob.put_artifact(b"x"),
            lambda: bob.get_artifact(NOWHERE),
            lambda: bob.export_claim(claim),
            lambda: bob.import_claim({}),
        ):
            with pytest.raises(parley.BadRequest) as off:
                call()
            assert off.value.reason == "invalid_argument"


def test_already_imported_from_data_and_pickle() -> None:
    exc = parley.Refusal.from_data({"reason": "already_imported", "status": 409, "message": "m"})
    assert type(exc) is parley.AlreadyImported
    assert type(pickle.loads(pickle.dumps(exc))) is parley.AlreadyImported
    assert parley.AlreadyImported.__module__ == "parley" and "AlreadyImported" in parley.__all__


def test_async_sessions(realms: Tuple[parley.Forum, parley.Forum]) -> None:
    north, south = realms
    bob, claim = verified_claim(north)

    async def scenario() -> Tuple[bytes, str]:
        abob = parley.aio.AsyncForum(north).session(bob.token)
        acarol = parley.aio.AsyncForum(south).session(south.create_token("carol"))
        ref = (await abob.put_artifact(b"async bytes"))["ref"]
        _, content = await abob.get_artifact(ref)
        imported = await acarol.import_claim(await abob.export_claim(claim))
        with pytest.raises(parley.AlreadyImported):
            await acarol.import_claim(await abob.export_claim(claim))
        return content, imported["message"]["body"]

    assert asyncio.run(scenario()) == (b"async bytes", "Port 7878 is free.")


@SERVED_ONLY
def test_a_remote_session(realms: Tuple[parley.Forum, parley.Forum], servers: Callable[..., Server]) -> None:  # noqa: F811
    north, _ = realms
    bob, claim = verified_claim(north)
    bundle = bob.export_claim(claim)
    server = servers({"realm": "west", "limits": {"writes_per_minute": 0}, "trusted_realms": {"north": north.realm_key}})
    token = server.token("carol")
    key = server.cli("realm-key")
    server.start()
    carol = parley.connect(server.url, token)
    try:
        assert carol.manifest()["realm_key"] == key
        stored = carol.put_artifact(b"remote bytes", media_type="text/plain")
        assert carol.get_artifact(stored["ref"]) == (stored, b"remote bytes")
        with pytest.raises(parley.NotFound):
            carol.get_artifact(NOWHERE)
        imported = carol.import_claim(bundle)
        assert carol.claim_status(imported["claim"]["id"])["imported"]["realm"] == "north"  # type: ignore[index]
        with pytest.raises(parley.AlreadyImported):
            carol.import_claim(bundle)
        # West's own export, checked with the key `parley realm-key` printed.
        back = carol.export_claim(imported["claim"]["id"])
        assert back["signatures"][0]["keyid"] == key
    finally:
        carol.forum.close()

    off = servers({"profiles": ["dialectic"]})
    token = off.token("carol")
    off.start()
    carol = parley.connect(off.url, token)
    try:
        with pytest.raises(parley.BadRequest) as unknown:
            carol.import_claim(bundle)
        assert unknown.value.reason == "invalid_argument"
    finally:
        carol.forum.close()
