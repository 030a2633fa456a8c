"""The web view of `parley serve --http` in a real headless Chromium: a human signs
in, confirms, closes and reopens; an agent's session stays read only; forged and
cross-site posts are refused; a second browser follows live; sign-out ends the
session. Agents write concurrently over REST. Every scenario saves a screenshot.
Cross-site forms, sign-in and sign-out and session limits are in `test_web_sessions.py`.
"""

from __future__ import annotations

import re
import threading
from typing import Any, Callable, List

import pytest

from conftest import LAPTOP, PHONE, Agent, Browser, Refused, Server, Tokens, mark_page, raw, same_page, wait_navigation

Make = Callable[..., Browser]


def thread_link(th: str) -> str:
    return f'a[href="/threads/{th}"]'


def state_line(browser: Browser) -> str:
    return browser.text("#thread-state")


def is_confirmed(text: str) -> bool:
    """`#thread-state` says "confirmed" (and not "unconfirmed")."""
    return "unconfirmed" not in text and re.search(r"\bconfirmed\b", text) is not None


def fill_body(browser: Browser, form: Any, text: str) -> None:
    """Types into the form's body field when it has one (the act's message body)."""
    fields = browser.all('textarea[name="body"], input[name="body"]', form)
    if fields:
        fields[0].clear()
        fields[0].send_keys(text)


def events_shown(browser: Browser) -> List[str]:
    return [li.text for li in browser.all("#events li.event")]



# ------------------------------------------------------------------ 1. confirm


def test_confirm_a_proposal(ann: Browser, alice: Agent, bob: Agent) -> None:
    # Opened first, proposed last: the list goes by the proposal, oldest first.
    later, _ = alice.ask("Should the cache expire entries after an hour?")
    th, root = alice.ask("Which storage engine should the session cache use?")
    answer = bob.post(kind="answer", thread=th, body="redb: one file, ACID transactions, no server to run.")["message"]["id"]
    note = alice.post(kind="note", parent=answer, body="Agreed; it is already a dependency of the engine.")["message"]["id"]
    alice.post(kind="mark", thread=th, state="decided", body="We settle on redb for the session cache.")
    assert alice.summary(th)["state_confirmed_at"] is None
    alice.post(kind="mark", thread=later, state="decided", body="One hour, as the old cache did.")

    ann.open("/inbox")
    wait_navigation(ann, lambda: ann.css('nav a[href="/proposals"]').click())
    ann.wait_path("/proposals")
    items = ann.all("#proposals > li")
    hrefs = [ann.css("a[href^='/threads/']", li).get_attribute("href") or "" for li in items]
    order = [h.rsplit("/", 1)[-1] for h in hrefs]
    assert th in order and later in order, f"both proposals listed: {order}"
    assert order.index(th) < order.index(later), "oldest proposal first"
    item = items[order.index(th)]
    assert ann.css("span.state", item).text.strip() == "decided"
    assert "ainotes:alice" in ann.css("span.proposer", item).text
    assert "We settle on redb" in ann.css("q.why", item).text
    assert ann.all('form.action[data-action="confirm"]', item), "a human gets a confirm form in the list"
    ann.shot("proposals")

    ann.css(thread_link(th), item).click()
    ann.wait_path(f"/threads/{th}")
    assert "storage engine" in ann.text("h1")
    state = state_line(ann)
    assert "decided" in state and "unconfirmed" in state, state
    # The tree: the answer under the root, the note under the answer.
    nested = ann.css(f"article.message#{root} .replies article.message#{answer} .replies article.message#{note}")
    assert nested.get_attribute("data-kind") == "note"
    answer_el = ann.css(f"article#{answer}")
    assert answer_el.get_attribute("data-kind") == "answer"
    assert "ainotes:bob" in ann.css(".author", answer_el).text
    assert ann.css(".kind", answer_el).text.strip() == "answer"
    assert "redb: one file" in ann.css(".body", answer_el).text
    before = events_shown(ann)
    for action in ["confirm", "close", "mark", "answer", "note", "ask"]:
        assert ann.all(f'form.action[data-action="{action}"]'), f"the {action} form is shown to a human"
    # The picture of the README: a thread with its tree and the action forms.
    ann.shot("thread", full=True)

    form = ann.action_form("confirm")
    assert form.get_attribute("method") == "post"
    assert (form.get_attribute("action") or "").endswith(f"/threads/{th}/act")
    wait_navigation(ann, lambda: ann.submit(form))
    ann.wait_path(f"/threads/{th}")
    ann.wait("the state to read confirmed", lambda: is_confirmed(state_line(ann)))
    assert "decided" in state_line(ann)
    after = events_shown(ann)
    assert len(after) == len(before) + 1, (before, after)
    assert "confirmation" in after[-1], after[-1]
    assert not ann.all('form.action[data-action="confirm"]'), "nothing left to confirm"
    summary = alice.summary(th)
    assert summary["state"] == "decided" and summary["state_confirmed_at"] is not None
    last = alice.events(th)[-1]
    assert last["type"] == "confirmation" and last["identity"] == "human:ann"
    ann.shot("confirmed")

    ann.open("/proposals")
    assert not ann.all(f"#proposals {thread_link(th)}"), "a confirmed state is no proposal"
    assert ann.all(f"#proposals {thread_link(later)}")


# ------------------------------------------------------- 2. close, 3. reopen


def test_close_refuses_a_late_post(ann: Browser, agent_browser: Browser, bea: Browser, alice: Agent, bob: Agent) -> None:
    th, _ = alice.ask("Can the nightly job be retired?")
    bob.post(kind="answer", thread=th, body="Yes: the hourly job covers everything it did.")
    ann.open(f"/threads/{th}")
    form = ann.action_form("close")
    fill_body(ann, form, "Retired; closing.")
    wait_navigation(ann, lambda: ann.submit(form))
    ann.wait_path(f"/threads/{th}")
    ann.wait("the state to read closed", lambda: "closed" in state_line(ann))
    assert is_confirmed(state_line(ann)), state_line(ann)
    summary = alice.summary(th)
    assert summary["state"] == "closed" and summary["locked"] is True
    ann.shot("closed")

    count = len(alice.messages(th))
    with pytest.raises(Refused) as refused:
        bob.post(kind="note", thread=th, body="One more thing about the nightly job.")
    assert (refused.value.status, refused.value.reason) == (409, "thread_closed")
    assert len(alice.messages(th)) == count, "a refused post writes nothing"

    # Other sessions, an agent's and another human's, show it closed.
    for other in (agent_browser, bea):
        other.open(f"/threads/{th}")
        assert "closed" in state_line(other), state_line(other)
        assert is_confirmed(state_line(other))
    agent_browser.shot("closed-seen-by-agent")


def test_reopen(ann: Browser, alice: Agent, bob: Agent, ann_rest: Agent) -> None:
    th, _ = alice.ask("Is the staging database still needed?")
    ann_rest.post(kind="mark", thread=th, state="closed", body="Closing: nobody uses it.")
    assert alice.summary(th)["locked"] is True
    ann.open(f"/threads/{th}")
    assert "closed" in state_line(ann)
    form = ann.action_form("reopen")
    fill_body(ann, form, "Reopening: the load tests still use it.")
    wait_navigation(ann, lambda: ann.submit(form))
    ann.wait_path(f"/threads/{th}")
    ann.wait("the state to read open", lambda: re.search(r"\bopen\b", state_line(ann)))
    summary = alice.summary(th)
    assert summary["state"] == "open" and summary["locked"] is False
    assert summary["state_origin"] == "user"
    bob.post(kind="answer", thread=th, body="The load tests run against it every night.")
    ann.shot("reopened")


# ------------------------------------------------------ 4. an agent's session


def test_agent_session_is_read_only(agent_browser: Browser, server: Server, alice: Agent, bob: Agent) -> None:
    th, _ = alice.ask("Which log format do the workers write?")
    bob.post(kind="answer", thread=th, body="JSON lines, one object per event.")
    for path in ["/inbox", "/proposals", "/threads", f"/threads/{th}", "/events", "/search?q=workers"]:
        agent_browser.open(path)
        assert agent_browser.path == path, f"{path} is shown to an agent"
        assert not agent_browser.all("form.action"), f"{path} offers an agent no action form"
        assert "read only" in agent_browser.text("#read-only").lower()
        assert "ainotes:alice" in agent_browser.text("#whoami")
        assert not agent_browser.all('nav a[href="/tokens"]'), "the tokens page is for humans"
    agent_browser.open(f"/threads/{th}")
    agent_browser.shot("agent-read-only")

    # A crafted form from the agent's own page, carrying its own valid csrf.
    csrf = agent_browser.csrf()
    messages = len(alice.messages(th))
    for fields in [
        {"action": "note", "body": "A forged note from an agent's session."},
        {"action": "close", "body": "A forged close from an agent's session."},
    ]:
        agent_browser.open(f"/threads/{th}")
        script = """
            const [target, fields] = arguments;
            const form = document.createElement('form');
            form.method = 'post';
            form.action = target;
            for (const [name, value] of Object.entries(fields)) {
                const input = document.createElement('input');
                input.type = 'hidden'; input.name = name; input.value = value;
                form.appendChild(input);
            }
            document.body.appendChild(form);
            form.submit();
        """
        wait_navigation(
            agent_browser,
            lambda: agent_browser.driver.execute_script(script, f"/threads/{th}/act", {**fields, "csrf": csrf}),
        )
        assert agent_browser.refusal() is not None, "the forged post is answered with a refusal"
        assert len(alice.messages(th)) == messages, f"nothing written by a forged {fields['action']}"
        assert alice.summary(th)["state"] == "answered"
    agent_browser.shot("agent-forged-post")

    # What the browser was answered, status included: a refusal, not a redirect.
    reply = raw(server, "POST", f"/threads/{th}/act", {"action": "note", "body": "Forged again.", "csrf": csrf},
                agent_browser.cookie_header())
    assert reply.status == 403, (reply.status, reply.body[:300])
    assert reply.reason() is not None
    assert len(alice.messages(th)) == messages
    assert raw(server, "GET", "/tokens", headers=agent_browser.cookie_header()).status == 403


# ------------------------------------------------------------ 5. live updates


def test_live_message_without_reload(bea: Browser, alice: Agent, bob: Agent) -> None:
    th, root = alice.ask("Why did the deploy at noon fail?")
    bea.open(f"/threads/{th}")
    bea.wait_loaded()
    assert bea.all('script[src="/assets/live.js"]'), "the page loads the live script"
    mark_page(bea)
    # Posted at once, maybe before the script's event stream is open: the page tells
    # the stream what it showed, so a change in between is not lost.
    shown = len(bea.all("article.message"))
    done = bob.post(kind="answer", thread=th, body="The migration took the table lock for ninety seconds.")
    mid = done["message"]["id"]
    bea.wait("the new message to appear", lambda: bea.all(f"article.message#{mid}"))
    assert same_page(bea), "the page was not reloaded"
    assert len(bea.all("article.message")) == shown + 1
    assert bea.css(f"article.message#{root} .replies article.message#{mid}").get_attribute("data-kind") == "answer"
    assert "ninety seconds" in bea.css(f"#{mid} .body").text
    bea.wait("the state to follow", lambda: "answered" in state_line(bea))

    # Two agents writing at once, six commits close together: every one shows up.
    posted: List[str] = []

    def write(agent: Agent, parent: str, who: str) -> None:
        for n in range(3):
            done = agent.post(kind="note", parent=parent, body=f"{who}'s finding number {n + 1} on the deploy.")
            posted.append(done["message"]["id"])

    writers = [
        threading.Thread(target=write, args=(alice, mid, "alice")),
        threading.Thread(target=write, args=(bob, root, "bob")),
    ]
    for writer in writers:
        writer.start()
    for writer in writers:
        writer.join(timeout=30)
    assert len(posted) == 6, posted
    bea.wait("every concurrent message to appear", lambda: all(bea.all(f"article.message#{m}") for m in posted))
    assert same_page(bea), "the page was not reloaded"
    bea.shot("live")

    # A list page follows too.
    bea.open("/threads")
    bea.wait_loaded()
    mark_page(bea)
    fresh, _ = alice.ask("Who owns the deploy pipeline now?")
    bea.wait("the new thread in the list", lambda: bea.all(f"#threads {thread_link(fresh)}"))
    assert same_page(bea), "the list was not reloaded"


# ------------------------------------------------------ 7. refusals in forms


def test_refusal_is_shown_in_its_form(ann: Browser, ann_rest: Agent) -> None:
    th, _ = ann_rest.ask("Ann's question: where are the backups kept?")
    ann.open(f"/threads/{th}")
    typed = "I answer my own question: on the second disk."
    fill_body(ann, ann.action_form("answer"), typed)
    wait_navigation(ann, lambda: ann.submit(ann.action_form("answer")))
    ann.wait_path(f"/threads/{th}")
    form = ann.action_form("answer")
    assert ann.refusal(form) == "self_reply"
    assert ann.css("p.refusal", form).text.startswith("self_reply:")
    assert ann.css('textarea[name="body"]', form).get_attribute("value") == typed, "the typed text is kept"
    assert len(ann_rest.messages(th)) == 1
    ann.shot("refusal", at=form)
    # The flash is shown once: a reload shows the form fresh.
    ann.open(f"/threads/{th}")
    assert ann.refusal(ann.action_form("answer")) is None


def test_refusal_without_javascript(browsers: Make, tokens: Tokens, alice: Agent, ann_rest: Agent) -> None:
    plain = browsers("no-js", javascript=False)
    plain.driver.get("data:text/html,<title>off</title><script>document.title = 'on'</script>")
    assert plain.driver.title == "off", "this browser runs no page script"
    plain.sign_in(tokens.ann)
    th, _ = alice.ask("Can we drop the v0 endpoints?")
    plain.open(f"/threads/{th}")
    # Locked after the page was loaded: the forms on screen are now too late.
    ann_rest.post(kind="mark", thread=th, state="closed", body="Dropped; closing.")
    typed = "Late answer: yes, nobody calls them."
    fill_body(plain, plain.action_form("answer"), typed)
    wait_navigation(plain, lambda: plain.submit(plain.action_form("answer")))
    plain.wait_path(f"/threads/{th}")
    form = plain.action_form("answer")
    assert plain.refusal(form) == "thread_closed"
    assert plain.css('textarea[name="body"]', form).get_attribute("value") == typed
    plain.shot("refusal-no-js", at=form)

    assert len(alice.messages(th)) == 2, "only the root and the closing mark"

    # The same with a mark: the chosen state is kept.
    other, _ = alice.ask("Can we drop the v1 endpoints too?")
    plain.open(f"/threads/{other}")
    ann_rest.post(kind="mark", thread=other, state="closed", body="Not yet; closing the question.")
    mark = plain.action_form("mark")
    plain.css('select[name="state"] option[value="deferred"]', mark).click()
    fill_body(plain, mark, "Deferring instead.")
    wait_navigation(plain, lambda: plain.submit(plain.action_form("mark")))
    mark = plain.action_form("mark")
    assert plain.refusal(mark) == "thread_closed"
    assert plain.css('select[name="state"]', mark).get_attribute("value") == "deferred", "the chosen state is kept"
    assert plain.css('[name="body"]', mark).get_attribute("value") == "Deferring instead."
    assert alice.summary(other)["state"] == "closed"


# ------------------------------------------------------- reading pages, phone


def test_reading_pages(ann: Browser, alice: Agent, bob: Agent) -> None:
    th, _ = alice.ask("Does the importer handle zanzibarite encodings?")
    found = bob.post(kind="answer", thread=th, body="Only zanzibarite v2; v1 files are refused.")["message"]["id"]
    ann.open("/search?q=zanzibarite")
    links = [a.get_attribute("href") or "" for a in ann.all("ol#results li a")]
    assert any(h.endswith(f"/threads/{th}#{found}") for h in links), links
    ann.open("/threads?state=answered")
    assert ann.all(f"#threads {thread_link(th)}")
    assert all(s.text.strip() == "answered" for s in ann.all("#threads li span.state"))
    assert ann.all('form#thread-filter select[name="state"]')
    ann.open(f"/events?thread={th}")
    assert len(ann.all("ol#events li.event")) == len(alice.events(th))
    ann.open("/inbox")
    assert ann.all("ul#inbox")
    # Every visible control of a thread page has a label.
    ann.open(f"/threads/{th}")
    unlabelled = ann.driver.execute_script(
        """
        return [...document.querySelectorAll('textarea, select, input:not([type=hidden])')]
          .filter(e => !(e.labels && e.labels.length) && !e.getAttribute('aria-label'))
          .map(e => e.outerHTML);
        """
    )
    assert unlabelled == [], unlabelled


def test_phone_width(ann: Browser, alice: Agent, bob: Agent) -> None:
    th, _ = alice.ask("Which regions does the CDN serve from?")
    bob.post(kind="answer", thread=th, body="Frankfurt, Virginia and Singapore; Sydney is planned.")
    ann.driver.set_window_size(*PHONE)
    try:
        ann.open(f"/threads/{th}")
        assert ann.all('meta[name="viewport"]')
        widths = ann.driver.execute_script(
            "return [document.documentElement.scrollWidth, document.documentElement.clientWidth]"
        )
        assert widths[0] <= widths[1], f"no sideways scrolling at phone width: {widths}"
        # Nothing sticks out past the right edge either (hidden overflow included).
        outside = ann.driver.execute_script(
            """
            const width = document.documentElement.clientWidth;
            return [...document.querySelectorAll('body *')]
              .filter(e => e.getBoundingClientRect().right > width + 0.5)
              .map(e => e.outerHTML.slice(0, 120));
            """
        )
        assert outside == [], outside
        assert ann.action_form("answer").is_displayed()
        ann.shot("phone-thread", full=True)
    finally:
        ann.driver.set_window_size(*LAPTOP)
