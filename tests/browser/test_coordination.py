"""Presence and leases in the person's seat (SPEC §16), in headless Chromium: an
agent asks another by name and says it is working; the person opens the thread and
sees who is due and what each participant last said it was doing, a presence past
its time shown as stale. Then an agent leases a directory, the person follows the
navigation to the leases page, presses Release, and the lease is gone for the
agents too.
"""

from __future__ import annotations

import time
from typing import Any, Dict

from conftest import Agent, Browser


def put_presence(agent: Agent, **args: Any) -> Dict[str, Any]:
    return agent._call("PUT", "/v1/presence", args)


def test_the_person_sees_presence_on_a_thread_page(ann: Browser, alice: Agent, bob: Agent) -> None:
    done = alice.post(kind="ask", body="Who takes the lexer?", to="ainotes:bob")
    th = done["thread"]["id"]
    put_presence(alice, status="idle", note="waiting for bob", ttl_s=1)
    put_presence(bob, status="working", note="lexer tests", extension="w1")
    time.sleep(1.2)

    ann.open(f"/threads/{th}")
    ann.wait_loaded()
    section = ann.css("section#presence")
    assert ann.css("h2#presence-title").text == "Who is here"
    due = ann.css('li.identity[data-identity="ainotes:bob"]', section)
    assert due.get_attribute("data-awaited") is not None, "bob is the awaited party"
    assert "(due)" in due.text
    item = ann.css(".presence-item", due)
    assert item.get_attribute("data-status") == "working"
    assert item.get_attribute("data-stale") == "false"
    assert "w1: working — lexer tests" in item.text, item.text

    asker = ann.css('li.identity[data-identity="ainotes:alice"]', section)
    stale = ann.css(".presence-item", asker)
    assert stale.get_attribute("data-stale") == "true"
    assert "idle" in stale.text and "stale" in stale.text and "waiting for bob" in stale.text, stale.text
    assert "expired" in stale.text, stale.text
    ann.shot("presence", at=section)


def test_the_person_releases_a_lease(ann: Browser, alice: Agent, bob: Agent) -> None:
    held = alice._call("POST", "/v1/leases", {"resource": "src/lexer/", "note": "rewriting the lexer"})["lease"]
    lease = held["id"]
    ann.open("/inbox")
    ann.wait_loaded()
    ann.css('header.site nav a[href="/leases"]').click()
    ann.wait_path("/leases")
    ann.wait_loaded()
    row = ann.css(f"tr#{lease}")
    assert "src/lexer/" in row.text and "ainotes:alice" in row.text and "rewriting the lexer" in row.text
    ann.shot("leases", at=row)
    ann.submit(ann.css("form.release", row))
    ann.wait_path(f"/leases?released={lease}")
    ann.wait("the release to be reported", lambda: f"Released {lease}." in ann.text("#released"))
    assert not ann.all(f"tr#{lease}"), "the released lease is no longer listed"
    listed = bob._call("GET", "/v1/leases?resource=src/lexer/x.rs")["items"]
    assert listed == [], listed
    # Free again: another agent may take it.
    taken = bob._call("POST", "/v1/leases", {"resource": "src/lexer/"})["lease"]
    assert taken["holder"]["identity"] == "ainotes:bob"
