"""Refusals of every status class, and the library's own errors."""

from __future__ import annotations

import pickle
from pathlib import Path
from typing import Dict, Type

import pytest

import parley

BY_STATUS: Dict[int, Type[parley.Refusal]] = {
    400: parley.BadRequest,
    401: parley.Unauthorized,
    403: parley.Forbidden,
    404: parley.NotFound,
    409: parley.Conflict,
    413: parley.PayloadTooLarge,
    429: parley.RateLimited,
}
# Reasons with a class of their own, a subclass of their status's.
BY_REASON: Dict[str, Type[parley.Refusal]] = {
    "state_changed": parley.StateChanged,
    "echoed_body": parley.EchoedBody,
    "no_progress": parley.NoProgress,
    "lease_conflict": parley.LeaseConflict,
    "already_imported": parley.AlreadyImported,
}


def test_every_reason_has_the_class_of_its_status() -> None:
    with parley.Forum() as forum:
        assert parley.REASONS == forum.manifest()["reasons"]
    assert len(parley.REASONS) >= 24  # SPEC §12's table, and whatever later sections add
    assert {r["status"] for r in parley.REASONS} == set(BY_STATUS)
    for entry in parley.REASONS:
        exc = parley.Refusal.from_data({"reason": entry["reason"], "status": entry["status"], "message": "m"})
        assert type(exc) is BY_REASON.get(entry["reason"], BY_STATUS[entry["status"]])
        assert isinstance(exc, BY_STATUS[entry["status"]])
        assert isinstance(exc, parley.Refusal) and isinstance(exc, parley.ParleyError)
        assert (exc.reason, exc.status, exc.message) == (entry["reason"], entry["status"], "m")
        assert str(exc) == f"{entry['reason']}: m"
    assert len(set(BY_STATUS.values())) == len(BY_STATUS)


def test_400_bad_request(forum: parley.Forum, tokens: Dict[str, str]) -> None:
    with pytest.raises(parley.BadRequest) as info:
        forum.call(tokens["alice"], "post", {"kind": "ask", "body": "   "})
    assert (info.value.reason, info.value.status) == ("invalid_body", 400)
    assert info.value.data["reason"] == "invalid_body"
    with pytest.raises(parley.BadRequest) as info:
        forum.call(tokens["alice"], "post", {"kind": "ask", "body": "x" * 501})
    assert info.value.reason == "body_too_long"
    # An envelope that is not an object is the engine's `invalid_body` over MCP and HTTP;
    # Python's call takes a mapping and stops it first (tests/python/test_types_literals.py).
    with pytest.raises(TypeError, match="args must be a mapping"):
        forum.call(tokens["alice"], "post", ["ask", "Not an object."])  # type: ignore[arg-type]
    with pytest.raises(parley.BadRequest) as info:
        forum.call(tokens["alice"], "get_inbox", {"limit": 1000})
    assert info.value.reason == "invalid_argument"


def test_401_unauthorized(forum: parley.Forum, tokens: Dict[str, str]) -> None:
    with pytest.raises(parley.Unauthorized) as info:
        forum.call(None, "whoami")
    assert (info.value.reason, info.value.status) == ("token_missing", 401)
    assert forum.revoke_token(tokens["bob"]) is True
    assert forum.revoke_token(tokens["bob"]) is False
    with pytest.raises(parley.Unauthorized) as info:
        forum.session(tokens["bob"]).whoami()
    assert info.value.reason == "token_invalid"


def test_403_forbidden(forum: parley.Forum, tokens: Dict[str, str]) -> None:
    with pytest.raises(parley.Forbidden) as info:
        forum.session(tokens["reader"]).ask("May I?")
    assert (info.value.reason, info.value.status, info.value.right) == ("token_right_missing", 403, "write")
    thread = forum.session(tokens["alice"]).ask("Mine?")["thread"]["id"]
    with pytest.raises(parley.Forbidden) as info:
        forum.session(tokens["bob"]).decide("Not yours.", thread=thread)
    assert info.value.reason == "thread_authority_missing"
    assert info.value.right is None


def test_404_not_found(forum: parley.Forum, tokens: Dict[str, str]) -> None:
    with pytest.raises(parley.NotFound) as info:
        forum.session(tokens["alice"]).thread("th_99")
    assert (info.value.reason, info.value.status) == ("thread_not_found", 404)
    with pytest.raises(parley.NotFound) as info:
        forum.session(tokens["alice"]).ask("Who?", to="ainotes:nobody")
    assert info.value.reason == "identity_not_found"


def test_409_conflict(forum: parley.Forum, tokens: Dict[str, str]) -> None:
    alice = forum.session(tokens["alice"])
    thread = alice.ask("Alone?")["thread"]["id"]
    with pytest.raises(parley.Conflict) as info:
        alice.answer("Yes.", thread=thread)
    assert (info.value.reason, info.value.status) == ("self_reply", 409)


def test_413_payload_too_large_over_mcp() -> None:
    with parley.Forum(limits={"request_max_bytes": 200}) as small:
        request = {"jsonrpc": "2.0", "id": 7, "method": "tools/list", "params": {"pad": "x" * 300}}
        response = small.mcp(None, request)
        assert response is not None and response["id"] == 7
        data = response["error"]["data"]
        exc = parley.Refusal.from_data(data)
        assert isinstance(exc, parley.PayloadTooLarge)
        assert (exc.reason, exc.status, exc.limit) == ("payload_too_large", 413, "request_max_bytes")


def test_429_rate_limited() -> None:
    with parley.Forum(limits={"writes_per_minute": 2}, clock="2026-11-30T12:00:00.000Z") as forum:
        alice = forum.session(forum.create_token("alice"))
        alice.ask("One?")
        alice.ask("Two?")
        with pytest.raises(parley.RateLimited) as info:
            alice.ask("Three?")
        assert (info.value.reason, info.value.status) == ("rate_limited", 429)
        assert isinstance(info.value.retry_after_ms, int) and info.value.retry_after_ms > 0


def test_refusals_pickle(forum: parley.Forum) -> None:
    with pytest.raises(parley.Unauthorized) as info:
        forum.call("pt_nope", "whoami")
    again = pickle.loads(pickle.dumps(info.value))
    assert type(again) is parley.Unauthorized and again.data == info.value.data
    schema = parley.SchemaTooNewError("too new", 3, 1)
    again_schema = pickle.loads(pickle.dumps(schema))
    assert (again_schema.found, again_schema.supported, str(again_schema)) == (3, 1, "too new")


@pytest.mark.redb_only("redb's errors: a file held open, a file that is not a forum, a missing directory")
def test_storage_errors(tmp_path: Path) -> None:
    path = tmp_path / "forum.redb"
    with parley.Forum(path):
        # redb allows one open handle per file.
        with pytest.raises(parley.StorageError):
            parley.Forum(path)
    garbage = tmp_path / "garbage.redb"
    garbage.write_bytes(b"this is not a database " * 64)
    # Not redb's: refused before a byte is written, and left as it was.
    with pytest.raises(parley.NotAForumError):
        parley.Forum(garbage)
    assert garbage.read_bytes() == b"this is not a database " * 64
    with pytest.raises(parley.StorageError):
        parley.Forum(tmp_path / "missing-dir" / "f.redb")
    with pytest.raises(parley.NotAForumError):
        parley.check_integrity(garbage)
    with pytest.raises(parley.StorageError):
        parley.check_integrity(tmp_path / "missing.redb")
    assert parley.check_integrity(path) is True
    assert not issubclass(parley.StorageError, parley.Refusal)
    assert not issubclass(parley.SchemaTooNewError, parley.StorageError)


def test_host_side_errors_are_value_errors(forum: parley.Forum) -> None:
    with pytest.raises(ValueError, match="unknown operation"):
        forum.call(None, "fly")
    with pytest.raises(ValueError, match="handle"):
        forum.create_token("Not A Handle")
    with pytest.raises(ValueError, match="kind"):
        forum.create_token("x", kind="robot")
    with pytest.raises(ValueError, match="right"):
        forum.create_token("x", rights=["fly"])
    with pytest.raises(ValueError, match="unknown limit"):
        parley.Forum(limits={"nope": 1})
    with pytest.raises(ValueError, match="realm"):
        parley.Forum(realm="Bad Realm")
    with pytest.raises(ValueError, match="profile"):
        parley.Forum(profiles=["nope"])
    with pytest.raises(ValueError, match="clock"):
        parley.Forum(clock="yesterday")
    with pytest.raises(ValueError):
        parley.Forum(limits={"body_max_chars": -1})


def test_a_closed_forum_refuses_calls(tmp_path: Path) -> None:
    forum = parley.Forum(tmp_path / "f.redb")
    token = forum.create_token("alice")
    forum.close()
    forum.close()
    assert forum.closed
    for call in (
        lambda: forum.call(token, "whoami"),
        lambda: forum.create_token("bob"),
        lambda: forum.identities(),
        lambda: forum.mcp(None, "{}"),
        lambda: forum.manifest(),
    ):
        with pytest.raises(ValueError, match="closed"):
            call()
    assert "closed" in repr(forum)


def test_a_panic_inside_the_engine_is_an_internal_error(
    forum: parley.Forum, tokens: Dict[str, str]
) -> None:
    # tests/python/run.sh builds the module with `fault-injection`; a wheel has no
    # such body, and then there is nothing to trigger.
    fault = getattr(parley._parley, "_FAULT_BODY", None)
    if fault is None:
        pytest.skip("the native module was built without the fault-injection feature")
    alice = forum.session(tokens["alice"])
    thread = alice.ask("Which port?")["thread"]["id"]
    with pytest.raises(parley.InternalError) as info:
        alice.note(fault, thread=thread)
    assert not isinstance(info.value, parley.StorageError)
    assert "panicked" in str(info.value) and "damaged" not in str(info.value)
    # Not stored, and the forum serves on.
    bob = forum.session(tokens["bob"])
    bob.answer("7878.", thread=thread)
    assert fault not in str(forum.call(tokens["alice"], "get_thread", {"thread": thread}))
