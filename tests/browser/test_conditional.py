"""A person confirms what their page showed, not what the thread became meanwhile
(SPEC §14.5, issue 38 failure 2), in headless Chromium: Bob asks, Carol answers (the
thread is `answered`, a proposal), the person opens the page, Bob posts `mark
closed`, and the person presses Confirm on the page they have. The form sends the
state it showed (`if_state`): the confirm is refused as `state_changed`, the page
shows the refusal with the thread's new state, and the thread is neither confirmed
nor locked. Confirmed again on the page as it now is, it closes and locks.
"""

from __future__ import annotations

from typing import Callable, Iterator

import pytest

from conftest import Agent, Browser, Server, Tokens, token_create

Make = Callable[..., Browser]


@pytest.fixture(scope="module")
def carol(server: Server) -> Iterator[Agent]:
    # Issued through the running server's admin channel.
    yield Agent(server.base, token_create(server.db, "carol", "--rights", "read,write"))


def mark_page(browser: Browser) -> None:
    browser.driver.execute_script("window.__parley_page = 'kept';")


def wait_navigation(browser: Browser, start: Callable[[], None]) -> None:
    """Runs `start` (which leaves the page) and waits until a new page has loaded."""
    mark_page(browser)
    start()
    browser.wait("a new page", lambda: not browser.driver.execute_script("return window.__parley_page === 'kept';"))
    browser.wait_loaded()


def answered(bob: Agent, carol: Agent, topic: str) -> str:
    """Bob asks, Carol answers: `answered`, an unconfirmed proposal."""
    th, _ = bob.ask(topic)
    carol.post(kind="answer", thread=th, body="7878: it is free on every host.")
    summary = bob.summary(th)
    assert summary["state"] == "answered" and summary["state_confirmed_at"] is None
    return th


def assert_refused_with_new_state(person: Browser, bob: Agent, th: str) -> None:
    """The person is back on the thread page: the refusal in the confirm form, the
    thread shown `closed` and unconfirmed, and nothing posted."""
    person.wait_path(f"/threads/{th}")
    summary = bob.summary(th)
    assert summary["state_confirmed_at"] is None, "the person confirmed a state they never saw"
    assert summary["locked"] is False, "the thread was locked in a state the person never saw"
    assert summary["state"] == "closed", summary
    form = person.action_form("confirm")
    assert person.refusal(form) == "state_changed"
    said = person.css("p.refusal", form).text
    assert said.startswith("state_changed:"), said
    assert "it is `closed` now, not `answered` as your page showed, and nothing was posted" in said, said
    state = person.text("#thread-state")
    assert "closed" in state and "unconfirmed" in state, state
    assert person.css('input[name="if_state"]', form).get_attribute("value") == "closed"
    assert [m["kind"] for m in bob.messages(th)] == ["ask", "answer", "mark"], "nothing was posted"


def confirm_as_shown(person: Browser, bob: Agent, th: str) -> None:
    """Confirmed on the page as it now is: closed, confirmed, locked."""
    wait_navigation(person, lambda: person.submit(person.action_form("confirm")))
    person.wait_path(f"/threads/{th}")
    summary = bob.summary(th)
    assert summary["state"] == "closed" and summary["state_confirmed_at"] is not None
    assert summary["locked"] is True
    assert not person.all('form.action[data-action="confirm"]'), "nothing left to confirm"


def test_a_stale_confirm_on_the_thread_page_is_refused(browsers: Make, tokens: Tokens, bob: Agent, carol: Agent) -> None:
    # Without page scripts the page stays exactly as loaded: the person's view is stale.
    person = browsers("conditional-no-js", javascript=False)
    person.sign_in(tokens.ann)
    th = answered(bob, carol, "Which port should the staging server listen on?")
    person.open(f"/threads/{th}")
    state = person.text("#thread-state")
    assert "answered" in state and "unconfirmed" in state, state

    bob.post(kind="mark", thread=th, state="closed", body="Nothing more to say; closing.")
    assert "answered" in person.text("#thread-state"), "the page the person has still shows answered"

    wait_navigation(person, lambda: person.submit(person.action_form("confirm")))
    assert_refused_with_new_state(person, bob, th)
    person.shot("state-changed", at=person.action_form("confirm"))
    confirm_as_shown(person, bob, th)


def test_a_stale_confirm_from_the_proposals_list_is_refused(
    browsers: Make, tokens: Tokens, bob: Agent, carol: Agent
) -> None:
    person = browsers("conditional-list", javascript=False)
    person.sign_in(tokens.ann)
    th = answered(bob, carol, "Which port should the preview server listen on?")
    person.open("/proposals")
    item = person.css(f"#proposal-{th}")
    assert person.css("span.state", item).text.strip() == "answered"
    bob.post(kind="mark", thread=th, state="closed", body="Closing this one too.")
    form = person.css('form.action[data-action="confirm"]', item)
    wait_navigation(person, lambda: person.submit(form))
    assert_refused_with_new_state(person, bob, th)
    confirm_as_shown(person, bob, th)


def test_a_confirm_held_by_a_typed_comment_is_refused_with_page_scripts(
    browsers: Make, tokens: Tokens, bob: Agent, carol: Agent
) -> None:
    # With page scripts, a form the person is typing in is never swapped under
    # them: the confirm they press is still the one for `answered`.
    person = browsers("conditional-js")
    person.sign_in(tokens.ann)
    th = answered(bob, carol, "Which port should the test server listen on?")
    person.open(f"/threads/{th}")
    form = person.action_form("confirm")
    field = person.css('input[name="body"]', form)
    field.send_keys("Yes, 7878.")
    bob.post(kind="mark", thread=th, state="closed", body="Closing: asked and answered.")
    # The live update has come and gone; the form in use kept what it showed.
    person.wait("the thread page to learn of the change", lambda: "closed" in person.text("#events"))
    form = person.action_form("confirm")
    assert person.css('input[name="body"]', form).get_attribute("value") == "Yes, 7878."
    wait_navigation(person, lambda: person.submit(form))
    assert_refused_with_new_state(person, bob, th)
    confirm_as_shown(person, bob, th)
