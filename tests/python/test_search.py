"""``session.search`` (SPEC §14.4): by the words of bodies, newest first, in pages."""

from __future__ import annotations

import asyncio
from typing import Any, Dict, List

import pytest

import parley
import parley.aio


def ids(page: Dict[str, Any]) -> List[str]:
    return [item["message"]["id"] for item in page["items"]]


def test_search_finds_old_and_new_messages(forum: parley.Forum, tokens: Dict[str, str]) -> None:
    alice, bob = forum.session(tokens["alice"]), forum.session(tokens["bob"])
    empty = alice.search("port")
    assert (empty["items"], empty["more"]) == ([], False) and isinstance(empty["cursor"], str)
    old = alice.ask("Which PORT does the dev-server use?")
    thread = old["thread"]["id"]
    for i in range(30):
        alice.ask(f"Filler question number {i}?")
    answer = bob.answer("The dev server uses port 7878.", thread=thread)
    found = bob.search("port")
    assert ids(found) == [answer["message"]["id"], old["message"]["id"]]
    assert found["more"] is False
    item = found["items"][0]
    assert set(item) == {"message", "thread"}
    assert item["message"]["body"] == "The dev server uses port 7878."
    assert (item["thread"]["id"], item["thread"]["message_count"], item["thread"]["state"]) == (thread, 2, "answered")
    # Every word must be there; case and punctuation do not matter, word parts do not match.
    assert ids(bob.search("DEV server, port!")) == ids(found)
    assert ids(bob.search("7878")) == [answer["message"]["id"]]
    assert bob.search("por")["items"] == [] and bob.search("port 9999")["items"] == []
    # Unicode words are lowercased, not folded.
    umlaut = bob.ask("Grüße aus der ÉCOLE")
    assert ids(bob.search("grüße école")) == [umlaut["message"]["id"]]
    assert bob.search("ecole")["items"] == []
    # A new message comes first.
    newer = bob.note("The port is 7878, as said.", parent=old["message"]["id"])
    assert ids(bob.search("port"))[0] == newer["message"]["id"]


def test_search_pages_with_since(forum: parley.Forum, tokens: Dict[str, str]) -> None:
    alice = forum.session(tokens["alice"])
    posted = [alice.ask(f"Match {i}: which port?")["message"]["id"] for i in range(5)]
    alice.ask("No match here.")
    seen: List[str] = []
    since = None
    pages = []
    while True:
        page = alice.search("port", since=since, limit=2)
        pages.append((len(page["items"]), page["more"]))
        seen.extend(ids(page))
        since = page["cursor"]
        if not page["more"]:
            break
    assert pages == [(2, True), (2, True), (1, False)]
    assert seen == list(reversed(posted))
    # After the last page, older matches: none; a new message does not come back
    # on a cursor that continues downwards.
    newest = alice.ask("Match 5: which port?")["message"]["id"]
    assert alice.search("port", since=since)["items"] == []
    assert ids(alice.search("port", limit=1)) == [newest]


def test_search_in_one_thread(forum: parley.Forum, tokens: Dict[str, str]) -> None:
    alice, bob = forum.session(tokens["alice"]), forum.session(tokens["bob"])
    first = alice.ask("Which port for the dev server?")
    second = alice.ask("Which port for CI?")
    reply = bob.answer("Port 7878.", thread=first["thread"]["id"])
    assert ids(bob.search("port", thread=first["thread"]["id"])) == [reply["message"]["id"], first["message"]["id"]]
    number = int(second["thread"]["id"].removeprefix("th_"))
    in_second = bob.search("port", thread=number)
    assert ids(in_second) == [second["message"]["id"]]
    assert in_second["items"][0]["thread"]["id"] == second["thread"]["id"]


def test_search_refusals(forum: parley.Forum, tokens: Dict[str, str]) -> None:
    alice = forum.session(tokens["alice"])
    alice.ask("Which port?")
    for q in ("", " ,;! ", "a" * 201, " ".join(f"w{i}" for i in range(17))):
        with pytest.raises(parley.BadRequest) as info:
            alice.search(q)
        assert (info.value.reason, info.value.status, info.value.field) == ("invalid_argument", 400, "q")
    assert alice.search(" ".join(["port"] * 16))["items"]
    with pytest.raises(parley.NotFound) as not_found:
        alice.search("port", thread="th_99")
    assert not_found.value.reason == "thread_not_found"
    feed_cursor = alice.messages()["cursor"]
    with pytest.raises(parley.BadRequest) as bad_cursor:
        alice.search("port", since=feed_cursor)
    assert bad_cursor.value.reason == "invalid_cursor"
    with pytest.raises(parley.BadRequest) as bad_limit:
        alice.search("port", limit=0)
    assert bad_limit.value.reason == "invalid_argument"
    writer = forum.session(forum.create_token("writer", rights=("write",)))
    with pytest.raises(parley.Forbidden) as forbidden:
        writer.search("port")
    assert (forbidden.value.reason, forbidden.value.right) == ("token_right_missing", "read")
    with pytest.raises(parley.Unauthorized):
        forum.session("pt_unknown").search("port")


@pytest.mark.parametrize(
    "kwargs, name",
    [
        ({"q": None}, "q"),
        ({"q": 7}, "q"),
        ({"q": b"port"}, "q"),
        ({"q": ["port"]}, "q"),
        ({"q": "port", "thread": 1.5}, "thread"),
        ({"q": "port", "thread": True}, "thread"),
        ({"q": "port", "since": 3}, "since"),
        ({"q": "port", "limit": "2"}, "limit"),
        ({"q": "port", "limit": True}, "limit"),
    ],
)
def test_search_wrong_types(forum: parley.Forum, tokens: Dict[str, str], kwargs: Dict[str, Any], name: str) -> None:
    session = forum.session(tokens["alice"])
    with pytest.raises(TypeError, match=rf"^{name} must be"):
        session.search(**kwargs)

    async def in_aio() -> None:
        await parley.aio.AsyncSession(session).search(**kwargs)

    with pytest.raises(TypeError, match=rf"^{name} must be"):
        asyncio.run(in_aio())


def test_async_search_matches_sync(forum: parley.Forum, tokens: Dict[str, str]) -> None:
    alice = forum.session(tokens["alice"])
    thread = alice.ask("Which port?")["thread"]["id"]
    alice.ask("Another port?")

    async def scenario() -> List[Dict[str, Any]]:
        session = parley.aio.AsyncSession(alice)
        pages = [await session.search("port"), await session.search("port", thread=thread, limit=1)]
        with pytest.raises(parley.BadRequest):
            await session.search("")
        return pages

    everything, one = asyncio.run(scenario())
    assert everything == alice.search("port")
    assert one == alice.search("port", thread=thread, limit=1)


def test_search_through_tools_and_mcp(forum: parley.Forum, tokens: Dict[str, str]) -> None:
    alice = forum.session(tokens["alice"])
    alice.ask("Which port?")
    via_session = alice.search("port", limit=5)
    assert alice.dispatch("search", {"q": "port", "limit": 5}) == via_session
    assert alice.dispatch("search", '{"q": "port", "limit": 5}') == via_session
    response = forum.mcp(
        tokens["alice"],
        {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "search", "arguments": {"q": "port", "limit": 5}}},
    )
    assert response is not None and response["result"]["structuredContent"] == via_session
    refused = alice.dispatch("search", {"q": ""})
    assert (refused["error"]["reason"], refused["error"]["status"]) == ("invalid_argument", 400)
    missing = alice.dispatch("search", {})
    assert missing["error"]["field"] == "q"
