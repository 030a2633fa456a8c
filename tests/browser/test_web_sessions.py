"""The web view's sessions in a real headless Chromium: cross-site and forged forms are
refused (each defence alone too), sign-in refused and sign-out, a revoked token ends its
sessions, a new secret is not cached, and sessions expire when idle and at their limit.
"""

from __future__ import annotations

import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Optional

import pytest

from conftest import Agent, Browser, Refused, Server, Tokens, find_tags, raw, serve, token_create, wait_navigation

Make = Callable[..., Browser]


# ------------------------------------------------------- 6. cross-site forms


class Attacker:
    """A second loopback HTTP server, on another port, serving pages that post."""

    def __init__(self) -> None:
        self.pages: Dict[str, str] = {}
        pages = self.pages

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 (the stdlib's name)
                page = pages.get(self.path)
                body = (page or "not here").encode()
                self.send_response(200 if page else 404)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def page(self, path: str, target: str, fields: Dict[str, str]) -> None:
        inputs = "".join(f'<input type="hidden" name="{k}" value="{v}">' for k, v in fields.items())
        self.pages[path] = (
            "<!doctype html><title>You have won</title>"
            f'<form id="f" method="post" action="{target}">{inputs}</form>'
            "<script>document.getElementById('f').submit();</script>"
        )

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def attacker() -> Iterator[Attacker]:
    site = Attacker()
    yield site
    site.close()


def test_cross_site_form_is_refused(
    browsers: Make, tokens: Tokens, server: Server, attacker: Attacker, alice: Agent
) -> None:
    victim = browsers("victim")
    victim.sign_in(tokens.ann)
    th, _ = alice.ask("Shall we rotate the signing keys this week?")
    target = f"{server.base}/threads/{th}/act"
    leaked = victim.csrf()
    fields = {"action": "close", "body": "Closed by a stranger."}
    # localhost and 127.0.0.1 are different sites, so SameSite=Strict withholds the
    # cookie; another port of 127.0.0.1 is the same site but another origin, so the
    # cookie goes along and only the Origin rule (and the CSRF field) stop it.
    cases = [
        ("cross-site", f"http://localhost:{attacker.port}/guess", "guessed-csrf", None),
        ("cross-site-leaked-csrf", f"http://localhost:{attacker.port}/leak", leaked, None),
        ("same-site-leaked-csrf", f"http://127.0.0.1:{attacker.port}/leak", leaked, "cross_origin"),
        ("same-site", f"http://127.0.0.1:{attacker.port}/guess", "guessed-csrf", None),
    ]
    events = alice.events(th)
    messages = len(alice.messages(th))
    for name, url, csrf, reason in cases:
        attacker.page(url.split(str(attacker.port), 1)[1], target, {**fields, "csrf": csrf})
        victim.driver.get(url)
        victim.wait(f"{name}: the forged post to be answered", lambda: victim.driver.current_url.startswith(server.base))
        victim.wait_loaded()
        got = victim.refusal()
        assert victim.path != f"/threads/{th}", f"{name}: the forged post was taken as an action"
        if reason:
            assert got == reason, f"{name}: refused as {got}"
        else:
            assert got in ("cross_origin", "csrf_invalid") or victim.path == "/sign-in", (name, got, victim.path)
        victim.shot(f"forged-{name}")
        summary = alice.summary(th)
        assert summary["state"] == "open", f"{name}: the thread changed"
        assert len(alice.messages(th)) == messages and alice.events(th) == events, f"{name}: something was written"
    victim.open("/inbox")
    assert victim.path == "/inbox", "the victim is still signed in"


def sign_in_raw(server: Server, token: str, extra: Optional[Dict[str, str]] = None) -> Any:
    """The sign-in of a browser, by hand: the pre-session CSRF cookie and field."""
    page = raw(server, "GET", "/sign-in")
    assert page.status == 200
    cookies = [v.split(";", 1)[0] for v in page.headers.get_all("Set-Cookie") or []]
    pre = [c for c in cookies if c.startswith("parley_csrf=")]
    assert pre, f"GET /sign-in sets parley_csrf: {cookies}"
    csrf = [t.get("value", "") for t in find_tags(page.body, "input", {"name": "csrf"})]
    assert csrf and csrf[0], "the sign-in form carries a csrf field"
    headers = {"Cookie": pre[0], **(extra or {})}
    return raw(server, "POST", "/sign-in", {"token": token, "csrf": csrf[0]}, headers), pre[0], csrf[0]


def session_cookies(reply: Any) -> List[str]:
    """The `parley_session` cookies a reply sets (a deletion has an empty value)."""
    values = [str(v) for v in reply.headers.get_all("Set-Cookie") or []]
    return [v for v in values if v.startswith("parley_session=") and not v.startswith("parley_session=;")]


def session_of(reply: Any) -> str:
    cookies = session_cookies(reply)
    assert cookies, "no parley_session cookie was set"
    return cookies[0]


def test_each_defence_alone(server: Server, tokens: Tokens, ann: Browser, alice: Agent, attacker: Attacker) -> None:
    cookie = ann.session_cookie()
    assert cookie["httpOnly"] is True and cookie["sameSite"] == "Strict" and cookie["path"] == "/"
    assert cookie["secure"] is False, "plain http: no Secure flag"

    reply, pre, csrf = sign_in_raw(server, tokens.bea)
    assert reply.status == 303 and reply.headers["Location"].endswith("/inbox"), reply.status
    set_cookie = session_of(reply)
    attributes = [a.strip().lower() for a in set_cookie.split(";")]
    assert "httponly" in attributes and "samesite=strict" in attributes and "path=/" in attributes, set_cookie
    assert "secure" not in attributes
    value = set_cookie.split(";", 1)[0].split("=", 1)[1]
    assert len(value) >= 43, "a 256-bit session id"
    assert tokens.bea not in set_cookie and tokens.bea not in reply.body

    wrong_token = "pt_0000000000000000000000000000000000000000deadbeef"
    bad, _, _ = sign_in_raw(server, wrong_token)
    assert (bad.status, bad.reason()) == (401, "token_invalid")
    assert wrong_token not in bad.body and not session_cookies(bad), "no session, no echo"

    behind_tls, _, _ = sign_in_raw(server, tokens.bea, {"X-Forwarded-Proto": "https"})
    assert "secure" in [a.strip().lower() for a in session_of(behind_tls).split(";")]

    # Sign-in without the pre-session cookie, or with a field that does not match it.
    bare = raw(server, "POST", "/sign-in", {"token": tokens.bea, "csrf": csrf})
    assert (bare.status, bare.reason()) == (403, "csrf_invalid")
    wrong = raw(server, "POST", "/sign-in", {"token": tokens.bea, "csrf": "x" + csrf}, {"Cookie": pre})
    assert (wrong.status, wrong.reason()) == (403, "csrf_invalid")

    session = {"Cookie": f"parley_session={value}"}
    th, _ = alice.ask("Is the weekly report still read by anyone?")
    page = raw(server, "GET", f"/threads/{th}", headers=session)
    assert page.status == 200
    token = [t.get("value", "") for t in find_tags(page.body, "input", {"name": "csrf"})][0]
    note = {"action": "note", "body": "The finance team reads it."}
    refusals = [
        ("foreign origin", {**note, "csrf": token}, {"Origin": f"http://localhost:{attacker.port}"}, "cross_origin"),
        ("other port", {**note, "csrf": token}, {"Origin": f"http://127.0.0.1:{attacker.port}"}, "cross_origin"),
        ("cross-site fetch", {**note, "csrf": token}, {"Sec-Fetch-Site": "cross-site"}, "cross_origin"),
        ("wrong csrf", {**note, "csrf": token[::-1]}, {}, "csrf_invalid"),
        ("no csrf", note, {}, "csrf_invalid"),
    ]
    for name, form, headers, reason in refusals:
        got = raw(server, "POST", f"/threads/{th}/act", form, {**session, **headers})
        assert (got.status, got.reason()) == (403, reason), (name, got.status, got.body[:300])
        assert len(alice.messages(th)) == 1, f"{name}: nothing written"
    # The same post with its own origin goes through: the refusals above are the rules.
    done = raw(server, "POST", f"/threads/{th}/act", {**note, "csrf": token}, {**session, "Origin": server.base})
    assert done.status == 303, (done.status, done.body[:300])
    assert done.headers["Location"].split("#", 1)[0].endswith(f"/threads/{th}"), done.headers["Location"]
    assert [m["body"] for m in alice.messages(th)][-1] == note["body"]


# --------------------------------------------------------------- 8. sign-out


def test_sign_in_refused_and_sign_out(browsers: Make, tokens: Tokens, server: Server) -> None:
    cy = browsers("cy")
    cy.open("/")
    cy.wait_path("/sign-in")
    wrong = "pt_not-a-token-at-all-0123456789"
    cy.css("#token").send_keys(wrong)
    wait_navigation(cy, lambda: cy.submit(cy.css("form#sign-in")))
    assert cy.refusal() == "token_invalid"
    assert cy.css("#token").get_attribute("value") == "", "the token field is empty"
    assert wrong not in cy.driver.page_source, "a token is never echoed into a page"
    cy.shot("sign-in-refused")

    cy.sign_in(tokens.cy)
    assert "human:cy" in cy.text("#whoami")
    nav = {(a.get_attribute("href") or "").split(server.base, 1)[-1]: a.text.strip() for a in cy.all("nav a")}
    expected = {"/inbox": "Waiting for you", "/proposals": "To confirm", "/threads": "Threads",
                "/events": "Events", "/tokens": "Tokens"}
    assert {k: nav.get(k) for k in expected} == expected, nav
    assert cy.all('form#search[method="get"][action="/search"] input[name="q"][type="search"]')
    old = cy.cookie_header()
    assert raw(server, "GET", "/inbox", headers=old).status == 200
    home = raw(server, "GET", "/", headers=old)
    assert home.status == 303 and home.headers["Location"].endswith("/inbox")
    wait_navigation(cy, lambda: cy.submit(cy.css("form#sign-out")))
    cy.wait_path("/sign-in")
    cy.shot("signed-out")
    cy.open("/inbox")
    cy.wait_path("/sign-in")
    # The old cookie, sent again, opens nothing: the session is gone server-side.
    for path in ["/inbox", "/"]:
        reply = raw(server, "GET", path, headers=old)
        assert reply.status == 303 and reply.headers["Location"].endswith("/sign-in"), (path, reply.status)


def test_revoked_token_ends_its_sessions(ann: Browser, browsers: Make, server: Server) -> None:
    ann.open("/tokens")
    form = ann.css("form#token-create")
    ann.css('input[name="handle"]', form).send_keys("dee")
    ann.css('input[name="rights"][value="read"]', form).click()
    ann.css('input[name="label"]', form).send_keys("Dee")
    wait_navigation(ann, lambda: ann.submit(form))
    secret = ann.text("output#new-secret").strip()
    assert secret, "the new secret is shown once"
    assert Agent(server.base, secret)._call("GET", "/v1/whoami")["identity"] == "ainotes:dee"
    ann.open("/tokens")
    assert "ainotes:dee" in ann.text("table#tokens")
    assert secret not in ann.driver.page_source, "shown once, then never again"

    dee = browsers("dee")
    dee.sign_in(secret)
    assert "read only" in dee.text("#read-only").lower()

    revoke = ann.css("form.token-revoke")
    ann.css('input[name="token"][type="password"]', revoke).send_keys(secret)
    wait_navigation(ann, lambda: ann.submit(ann.css("form.token-revoke")))
    with pytest.raises(Refused) as refused:
        Agent(server.base, secret)._call("GET", "/v1/whoami")
    assert refused.value.reason == "token_invalid"
    dee.open("/inbox")
    dee.wait_path("/sign-in")
    dee.css("#token").send_keys(secret)
    wait_navigation(dee, lambda: dee.submit(dee.css("form#sign-in")))
    assert dee.refusal() == "token_invalid", "a revoked token signs in no more"


def test_new_secret_is_not_cached(ann: Browser, server: Server) -> None:
    ann.open("/tokens")
    csrf = ann.csrf()
    reply = raw(server, "POST", "/tokens", {"handle": "eve", "rights": "read", "label": "Eve", "csrf": csrf},
                {**ann.cookie_header(), "Origin": server.base})
    assert reply.status == 200, (reply.status, reply.body[:300])
    assert "no-store" in (reply.headers.get("Cache-Control") or "")
    assert find_tags(reply.body, "output", {"id": "new-secret"})


# ------------------------------------------------------------ session limits


def test_sessions_expire(workdir: Path) -> None:
    db = workdir / "expiry.redb"
    person = token_create(db, "ann", "--human")
    short = serve(db, "--web-session-idle-s", "2", "--web-session-max-s", "4", "--web-secure-cookie")
    try:
        idle, _, _ = sign_in_raw(short, person)
        busy, _, _ = sign_in_raw(short, person)
        for reply in (idle, busy):
            assert reply.status == 303
            assert "secure" in [a.strip().lower() for a in session_of(reply).split(";")], "--web-secure-cookie"
        idle_cookie = {"Cookie": session_of(idle).split(";", 1)[0]}
        busy_cookie = {"Cookie": session_of(busy).split(";", 1)[0]}
        start = time.monotonic()
        # A session in use outlives the idle limit, up to the absolute one.
        while time.monotonic() - start < 3.2:
            assert raw(short, "GET", "/inbox", headers=busy_cookie).status == 200
            time.sleep(0.5)
        gone = raw(short, "GET", "/inbox", headers=idle_cookie)
        assert gone.status == 303 and gone.headers["Location"].endswith("/sign-in"), "idle past 2 s"
        time.sleep(max(0.0, 4.3 - (time.monotonic() - start)))
        over = raw(short, "GET", "/inbox", headers=busy_cookie)
        assert over.status == 303 and over.headers["Location"].endswith("/sign-in"), "past 4 s since sign-in"
    finally:
        short.stop()
