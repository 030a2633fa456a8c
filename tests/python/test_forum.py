"""The forum object: settings, token administration, the file, the context manager."""

from __future__ import annotations

import datetime
from pathlib import Path

import pytest

import parley


def test_settings_reach_the_engine() -> None:
    with parley.Forum(
        realm="lab",
        limits={"body_max_chars": 20, "page_max": 10, "page_default": 5},
        profiles=["dialectic"],
        durable=False,
        clock=datetime.datetime(2026, 11, 30, 12, 0, tzinfo=datetime.timezone.utc),
    ) as forum:
        assert forum.realm == "lab"
        assert forum.limits["body_max_chars"] == 20
        manifest = forum.manifest()
        assert manifest["realm"] == "lab"
        assert manifest["limits"]["page_max"] == 10
        assert "dialectic" in manifest["profiles"]
        token = forum.create_token("alice")
        session = forum.session(token)
        assert session.whoami()["identity"] == "lab:alice"
        posted = session.ask("Short?")
        assert posted["message"]["created_at"] == "2026-11-30T12:00:00.000Z"
        with pytest.raises(parley.BadRequest) as info:
            session.ask("This body is longer than twenty characters.")
        assert info.value.reason == "body_too_long"
        with pytest.raises(parley.BadRequest):
            session.threads(limit=11)


@pytest.mark.redb_only("the in-memory default: its path is None")
def test_defaults() -> None:
    with parley.Forum() as forum:
        assert forum.path is None
        assert forum.realm == "ainotes"
        assert forum.limits == forum.manifest()["limits"]
        assert forum.limits["body_max_chars"] == 500
        assert forum.manifest()["operations"] == list(parley.OPERATIONS)
        assert [r["reason"] for r in forum.manifest()["reasons"]] == [r["reason"] for r in parley.REASONS]
        assert parley.__version__ == parley.VERSION == forum.manifest()["server"]["version"]


def test_profiles_accept_any_sequence_of_str() -> None:
    with parley.Forum(profiles=("dialectic",)) as on, parley.Forum(profiles=[]) as off:
        assert "dialectic" in on.manifest()["profiles"]
        assert off.manifest()["profiles"] == {}


def test_tokens_identities_and_rotation() -> None:
    with parley.Forum() as forum:
        first = forum.create_token("alice", label="Alice")
        second = forum.create_token("alice", label="Alice 2")
        assert first != second and first.startswith("pt_")
        forum.create_token("ann", kind="human")
        forum.create_token("mod", rights=["read", "lock"])
        listing = {i["identity"]: i for i in forum.identities()}
        assert listing["ainotes:alice"] == {
            "identity": "ainotes:alice",
            "kind": "llm",
            "label": "Alice 2",
            "active_tokens": 2,
        }
        assert listing["human:ann"]["kind"] == "human"
        assert forum.session(forum.create_token("ann", kind="human")).whoami()["rights"] == [
            "read",
            "write",
            "lock",
            "verify",
        ]
        moderator = forum.session(forum.create_token("mod", rights=["read", "lock"]))
        assert moderator.whoami()["rights"] == ["read", "lock"]
        assert forum.revoke_token(first) is True
        assert {i["identity"]: i for i in forum.identities()}["ainotes:alice"]["active_tokens"] == 1
        assert forum.session(second).whoami()["label"] == "Alice 2"
        with pytest.raises(parley.Unauthorized):
            forum.session(first).whoami()


@pytest.mark.redb_only("forum.path is the file's path")
def test_the_context_manager_closes_and_exceptions_propagate(tmp_path: Path) -> None:
    path = tmp_path / "ctx.redb"
    with pytest.raises(RuntimeError, match="inside"):
        with parley.Forum(path) as forum:
            assert isinstance(forum, parley.Forum)
            assert forum.path == str(path)
            raise RuntimeError("inside")
    assert forum.closed
    # The file is free again once closed.
    with parley.Forum(str(path)) as again:
        assert not again.closed
        assert repr(again).startswith("<parley.Forum path=")


def test_closing_releases_the_file_for_another_forum(tmp_path: Path) -> None:
    path = tmp_path / "release.redb"
    forum = parley.Forum(path)
    token = forum.create_token("alice")
    forum.session(token).ask("Before closing?")
    forum.close()
    with parley.Forum(path) as reopened:
        assert len(reopened.session(token).threads()["items"]) == 1
