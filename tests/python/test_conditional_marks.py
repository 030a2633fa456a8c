"""SPEC §14.5 from Python: ``if_state=`` on ``decide``, ``mark`` and ``reopen``, and
:class:`parley.StateChanged` carrying the thread's current ``state``, in process, over
``parley.aio``, and through ``parley.connect`` against a real ``parley serve --http``.

The scenario is issue 38's failure 2: Bob asks, Carol answers (a proposal), the person
opens the thread; meanwhile Bob marks it closed. The person's confirmation of what
they saw must not confirm ``closed``.
"""

from __future__ import annotations

import asyncio
import json
import pickle
import urllib.error
import urllib.request
from typing import Callable, Dict, Tuple

import pytest

import parley
import parley.aio
from served import SERVED_ONLY, Server


def moved_on(bob: parley.Session, carol: parley.Session) -> str:
    """A thread the person saw ``answered`` that Bob has since proposed to close."""
    thread = bob.ask("Which port should the server use?")["thread"]["id"]
    assert carol.answer("7878.", thread=thread)["thread"]["state"] == "answered"
    assert bob.mark("Closing: done.", state="closed", thread=thread)["thread"]["locked"] is False
    return thread


def confirm_what_was_seen(ann: parley.Session, thread: str) -> None:
    """The person confirms ``answered``, as the page showed: refused, nothing locked;
    then confirms what the refusal says the thread is now."""
    with pytest.raises(parley.StateChanged) as caught:
        ann.mark("Confirmed.", state="closed", if_state="answered", thread=thread)
    refusal = caught.value
    assert isinstance(refusal, parley.Conflict) and isinstance(refusal, parley.Refusal)
    assert (refusal.reason, refusal.status, refusal.state) == ("state_changed", 409, "closed")
    assert refusal.data["state"] == "closed" and refusal.field == "if_state"
    view = ann.thread(thread)["thread"]
    assert (view["state"], view["locked"], view["message_count"]) == ("closed", False, 3)
    confirmed = ann.mark("Confirmed.", state="closed", if_state=refusal.state, thread=thread)
    assert confirmed["thread"]["locked"] is True


def test_a_confirmation_of_a_state_that_moved_on_is_refused(
    forum: parley.Forum, tokens: Dict[str, str]
) -> None:
    bob, carol, ann = (forum.session(tokens[who]) for who in ("bob", "carol", "ann"))
    thread = moved_on(bob, carol)
    confirm_what_was_seen(ann, thread)
    # reopen and decide take the condition too.
    with pytest.raises(parley.StateChanged) as caught:
        ann.reopen("Reopening.", if_state="answered", thread=thread)
    assert caught.value.state == "closed"
    assert ann.reopen("Reopening.", if_state="closed", thread=thread)["thread"]["state"] == "open"
    with pytest.raises(parley.StateChanged) as caught:
        bob.decide("7878 it is.", if_state="answered", thread=thread)
    assert caught.value.state == "open"
    assert bob.decide("7878 it is.", if_state="open", thread=thread)["thread"]["state"] == "decided"
    # The generic post and the generic call carry it as the envelope field.
    with pytest.raises(parley.StateChanged):
        bob.post("mark", "Close it.", state="closed", if_state="open", thread=thread)
    with pytest.raises(parley.StateChanged) as caught:
        forum.call(
            tokens["bob"], "post", {"kind": "mark", "body": "Close.", "state": "closed", "if_state": "open", "thread": thread}
        )
    assert caught.value.data["state"] == "decided"


def test_invalid_conditions_are_refused(forum: parley.Forum, tokens: Dict[str, str]) -> None:
    bob = forum.session(tokens["bob"])
    thread = bob.ask("A thread to condition on?")["thread"]["id"]
    for value in ("done", "Open", ""):
        with pytest.raises(parley.BadRequest) as caught:
            bob.decide("Decided.", if_state=value, thread=thread)  # type: ignore[arg-type]
        assert (caught.value.reason, caught.value.field) == ("invalid_body", "if_state")
    with pytest.raises(parley.BadRequest) as caught:
        bob.post("note", "A note is not a mark.", if_state="open", thread=thread)
    assert caught.value.field == "if_state"
    with pytest.raises(TypeError, match="if_state"):
        bob.decide("Decided.", if_state=3, thread=thread)  # type: ignore[arg-type]


def test_state_changed_from_data_and_pickle() -> None:
    data = {"reason": "state_changed", "status": 409, "message": "moved", "state": "closed"}
    exc = parley.Refusal.from_data(data)
    assert type(exc) is parley.StateChanged and exc.state == "closed"
    again = pickle.loads(pickle.dumps(exc))
    assert type(again) is parley.StateChanged and again.state == "closed"
    other = parley.Refusal.from_data({"reason": "self_reply", "status": 409, "message": "m"})
    assert type(other) is parley.Conflict and other.state is None
    assert "StateChanged" in parley.__all__ and parley.StateChanged.__module__ == "parley"


def test_async_sessions_take_if_state(forum: parley.Forum, tokens: Dict[str, str]) -> None:
    async def scenario() -> Tuple[str, str]:
        aforum = parley.aio.AsyncForum(forum)
        bob, carol, ann = (aforum.session(tokens[who]) for who in ("bob", "carol", "ann"))
        thread = (await bob.ask("Which port?"))["thread"]["id"]
        await carol.answer("7878.", thread=thread)
        await bob.mark("Closing.", state="closed", thread=thread)
        with pytest.raises(parley.StateChanged) as caught:
            await ann.mark("Confirmed.", state="closed", if_state="answered", thread=thread)
        with pytest.raises(parley.StateChanged):
            await ann.reopen("Again.", if_state="open", thread=thread)
        with pytest.raises(parley.StateChanged):
            await bob.decide("Decided.", if_state="open", thread=thread)
        done = await ann.mark("Confirmed.", state="closed", if_state="closed", thread=thread)
        return str(caught.value.state), str(done["thread"]["state"])

    assert asyncio.run(scenario()) == ("closed", "closed")


@SERVED_ONLY
def test_a_remote_session_raises_state_changed(servers: Callable[..., Server]) -> None:  # noqa: F811
    server = servers()
    tokens = {who: server.token(who) for who in ("bob", "carol")}
    tokens["ann"] = server.token("ann", kind="human")
    server.start()
    bob, carol, ann = (parley.connect(server.url, tokens[who]) for who in ("bob", "carol", "ann"))
    try:
        confirm_what_was_seen(ann, moved_on(bob, carol))
        # REST takes the same envelope: POST /v1/messages answers 409 with the state.
        envelope = {"kind": "reopen", "thread": "th_1", "if_state": "open", "body": "Reopening."}
        request = urllib.request.Request(
            f"{server.url}/v1/messages",
            data=json.dumps(envelope).encode(),
            headers={"Authorization": f"Bearer {tokens['ann']}", "Content-Type": "application/json"},
            method="POST",
        )
        with pytest.raises(urllib.error.HTTPError) as caught:
            urllib.request.urlopen(request, timeout=30)
        assert caught.value.code == 409
        error = json.loads(caught.value.read())["error"]
        caught.value.close()
        assert (error["reason"], error["state"]) == ("state_changed", "closed")
    finally:
        for session in (bob, carol, ann):
            session.forum.close()

    async def remote_async() -> str:
        aann = parley.aio.connect(server.url, tokens["ann"])
        try:
            with pytest.raises(parley.StateChanged) as caught:
                await aann.reopen("Reopening.", if_state="open", thread="th_1")
            return str(caught.value.state)
        finally:
            aann.sync.forum.close()

    assert asyncio.run(remote_async()) == "closed"
