"""The harness of the browser tests: one `parley serve --http` on a free loopback
port for the whole run, its tokens, agents that write over REST with `urllib`, and
headless Chromium sessions driven by Selenium through Debian's chromedriver.

The binary comes from PARLEY_BIN, else `target/debug/parley` (run.sh builds it).
Screenshots go to PARLEY_BROWSER_OUT, else `target/browser-test-output`.
"""

from __future__ import annotations

import base64
import html.parser
import json
import os
import queue
import shutil
import subprocess
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple

import pytest
from selenium import webdriver
from selenium.common.exceptions import NoSuchElementException, StaleElementReferenceException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webelement import WebElement
from selenium.webdriver.support.ui import WebDriverWait

REPO = Path(__file__).resolve().parents[2]
BIN = Path(os.environ.get("PARLEY_BIN", REPO / "target" / "debug" / "parley"))
OUT = Path(os.environ.get("PARLEY_BROWSER_OUT", REPO / "target" / "browser-test-output"))
CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
LAPTOP = (1280, 900)
PHONE = (390, 844)
# Long enough for a loaded two-core machine, short enough that a missing feature
# fails the run in seconds rather than minutes.
WAIT_S = 10.0


def parley_env() -> Dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("PARLEY_")}


# --------------------------------------------------------------------------- server


@dataclass
class Server:
    base: str
    db: Path
    proc: "subprocess.Popen[str]"
    log: List[str] = field(default_factory=list)
    reader: Optional[threading.Thread] = None

    def stop(self) -> None:
        """SIGTERM, then a clean exit within 30 s."""
        self.proc.terminate()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            pytest.fail("the server did not stop after SIGTERM")
        if self.reader is not None:
            self.reader.join(timeout=10)
        if self.proc.stderr is not None:
            self.proc.stderr.close()
        assert self.proc.returncode == 0, "the server exited with %s:\n%s" % (self.proc.returncode, "\n".join(self.log))

    def path_of(self, url: str) -> str:
        """The path (and query) of one of this server's URLs."""
        assert url.startswith(self.base), f"{url} is not on {self.base}"
        return url[len(self.base) :] or "/"


def token_create(db: Path, handle: str, *extra: str) -> str:
    done = subprocess.run(
        [str(BIN), "--db", str(db), "token", "create", handle, *extra],
        capture_output=True,
        text=True,
        env=parley_env(),
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


@dataclass
class Tokens:
    ann: str  # human: the one who confirms, closes and reopens
    bea: str  # human: a second person watching
    cy: str  # human: signs in and out
    alice: str  # llm read,write: opens threads and proposes
    bob: str  # llm read,write: answers and posts late


@pytest.fixture(scope="session")
def workdir() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="parley-browser-"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope="session")
def tokens(workdir: Path) -> Tokens:
    assert BIN.exists(), f"{BIN} is missing: build it with `cargo build -p parley-cli`"
    db = workdir / "forum.redb"
    return Tokens(
        ann=token_create(db, "ann", "--human"),
        bea=token_create(db, "bea", "--human"),
        cy=token_create(db, "cy", "--human"),
        alice=token_create(db, "alice", "--rights", "read,write", "--label", "Alice"),
        bob=token_create(db, "bob", "--rights", "read,write"),
    )


def serve(db: Path, *extra: str) -> Server:
    """Starts `parley --db DB serve --http 127.0.0.1:0 EXTRA…` and waits for the
    address it reports on stderr."""
    proc = subprocess.Popen(
        [str(BIN), "--db", str(db), "serve", "--http", "127.0.0.1:0", *extra],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=parley_env(),
    )
    lines: "queue.Queue[str]" = queue.Queue()
    log: List[str] = []

    def drain() -> None:
        # The pipe is read to its end, so a chatty server never blocks on stderr.
        assert proc.stderr is not None
        for line in proc.stderr:
            log.append(line.rstrip("\n"))
            lines.put(line)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    base = ""
    deadline = time.monotonic() + 30
    while not base:
        left = deadline - time.monotonic()
        if left <= 0 or proc.poll() is not None:
            proc.kill()
            proc.wait()
            pytest.fail("the server did not report its address:\n" + "\n".join(log))
        try:
            line = lines.get(timeout=min(left, 0.5))
        except queue.Empty:
            continue
        if "listening on http://" in line:
            base = "http://" + line.split("listening on http://", 1)[1].split()[0]
    return Server(base=base, db=db, proc=proc, log=log, reader=reader)


@pytest.fixture(scope="session")
def server(workdir: Path, tokens: Tokens) -> Iterator[Server]:
    srv = serve(workdir / "forum.redb")
    yield srv
    srv.stop()
    secrets = [tokens.ann, tokens.bea, tokens.cy, tokens.alice, tokens.bob]
    leaked = [line for line in srv.log for secret in secrets if secret in line]
    assert not leaked, f"a token appeared in the server's log: {leaked}"


# ------------------------------------------------------------------------ plain HTTP


class Refused(Exception):
    def __init__(self, status: int, body: Dict[str, Any]) -> None:
        error = body.get("error", {})
        super().__init__(f"{status} {error.get('reason')}: {error.get('message')}")
        self.status = status
        self.reason = error.get("reason")


@dataclass
class Agent:
    """A REST client holding one bearer token (SPEC §11.2)."""

    base: str
    token: str

    def _call(self, method: str, path: str, body: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.base + path, data=data, method=method)
        req.add_header("Authorization", f"Bearer {self.token}")
        if data is not None:
            req.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(req, timeout=30) as resp:
                result: Dict[str, Any] = json.load(resp)
                return result
        except urllib.error.HTTPError as err:
            with err:
                raise Refused(err.code, json.load(err)) from None

    def post(self, **envelope: Any) -> Dict[str, Any]:
        return self._call("POST", "/v1/messages", envelope)

    def ask(self, body: str) -> Tuple[str, str]:
        """Opens a thread; returns (thread id, root message id)."""
        done = self.post(kind="ask", body=body)
        return done["thread"]["id"], done["message"]["id"]

    def thread(self, thread: str) -> Dict[str, Any]:
        return self._call("GET", f"/v1/threads/{thread}")

    def summary(self, thread: str) -> Dict[str, Any]:
        summary: Dict[str, Any] = self.thread(thread)["thread"]
        return summary

    def messages(self, thread: str) -> List[Dict[str, Any]]:
        """Every message of the thread, the tree flattened."""
        out: List[Dict[str, Any]] = []

        def walk(nodes: List[Dict[str, Any]]) -> None:
            for node in nodes:
                out.append(node)
                walk(node.get("replies", []))

        walk(self.thread(thread)["messages"])
        return out

    def events(self, thread: str) -> List[Dict[str, Any]]:
        items: List[Dict[str, Any]] = self._call("GET", f"/v1/events?thread={thread}&limit=200")["items"]
        return items


@dataclass
class Reply:
    status: int
    headers: Any
    body: str

    def reason(self) -> Optional[str]:
        """The `data-reason` of the page's first `p.refusal`, if any."""
        found = find_tags(self.body, "p", {"class": "refusal"})
        return found[0].get("data-reason") if found else None


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


_opener = urllib.request.build_opener(_NoRedirect)


def raw(
    server: Server,
    method: str,
    path: str,
    form: Optional[Dict[str, str]] = None,
    headers: Optional[Dict[str, str]] = None,
) -> Reply:
    """One request without following redirects: what a browser would receive."""
    data = None if form is None else urllib.parse.urlencode(form).encode()
    req = urllib.request.Request(server.base + path, data=data, method=method)
    if data is not None:
        req.add_header("Content-Type", "application/x-www-form-urlencoded")
    for name, value in (headers or {}).items():
        req.add_header(name, value)
    try:
        with _opener.open(req, timeout=30) as resp:
            return Reply(resp.status, resp.headers, resp.read().decode())
    except urllib.error.HTTPError as err:
        with err:
            return Reply(err.code, err.headers, err.read().decode())


class _Tags(html.parser.HTMLParser):
    def __init__(self, tag: str, attrs: Dict[str, str]) -> None:
        super().__init__()
        self.tag, self.want, self.found = tag, attrs, []  # type: ignore[var-annotated]

    def handle_starttag(self, tag: str, attrs: List[Tuple[str, Optional[str]]]) -> None:
        have = {k: v or "" for k, v in attrs}
        if tag == self.tag and all(
            (v in have.get(k, "").split()) if k == "class" else have.get(k) == v for k, v in self.want.items()
        ):
            self.found.append(have)


def find_tags(page: str, tag: str, attrs: Dict[str, str]) -> List[Dict[str, str]]:
    """The attributes of every `tag` of `page` carrying `attrs` (a class by word)."""
    parser = _Tags(tag, attrs)
    parser.feed(page)
    found: List[Dict[str, str]] = parser.found
    return found


# -------------------------------------------------------------------------- browsers


def chromium(javascript: bool = True) -> webdriver.Chrome:
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    profile = tempfile.mkdtemp(prefix="parley-chromium-")
    for flag in [
        "--headless=new",
        "--no-sandbox",  # we run as root
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        # Without these Chromium dials out at start, and the closed network refuses it.
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={profile}",
        f"--window-size={LAPTOP[0]},{LAPTOP[1]}",
        "--lang=en-US",
    ]:
        options.add_argument(flag)
    if not javascript:
        options.add_experimental_option("prefs", {"profile.managed_default_content_settings.javascript": 2})
    # A driver path given to Service keeps Selenium Manager from downloading anything.
    driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(30)
    driver._parley_profile = profile  # type: ignore[attr-defined]
    return driver


class Browser:
    """One Chromium with its own profile, hence its own cookies and session."""

    def __init__(self, server: Server, name: str, javascript: bool = True) -> None:
        self.server = server
        self.name = name
        self.driver = chromium(javascript)

    def quit(self) -> None:
        profile = getattr(self.driver, "_parley_profile", None)
        self.driver.quit()
        if profile:
            shutil.rmtree(profile, ignore_errors=True)

    # navigation
    def open(self, path: str) -> None:
        self.driver.get(self.server.base + path)

    @property
    def path(self) -> str:
        return self.server.path_of(self.driver.current_url).split("#", 1)[0]

    def wait(self, what: str, check: Callable[[], Any], timeout: float = WAIT_S) -> Any:
        """Polls `check` until it returns something truthy; fails naming `what`."""
        last: Optional[Exception] = None
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                result = check()
                if result:
                    return result
            except (NoSuchElementException, StaleElementReferenceException) as err:
                last = err
            time.sleep(0.1)
        self.shot(f"timeout-{self.name}")
        why = f" ({last})" if last else ""
        pytest.fail(f"[{self.name}] timed out waiting for {what} on {self.driver.current_url}{why}")

    def wait_path(self, path: str) -> None:
        self.wait(f"the path {path}", lambda: self.path == path)

    def wait_loaded(self) -> None:
        WebDriverWait(self.driver, WAIT_S).until(lambda d: d.execute_script("return document.readyState") == "complete")

    # elements
    def css(self, selector: str, within: Optional[WebElement] = None) -> WebElement:
        return (within or self.driver).find_element(By.CSS_SELECTOR, selector)

    def all(self, selector: str, within: Optional[WebElement] = None) -> List[WebElement]:
        return (within or self.driver).find_elements(By.CSS_SELECTOR, selector)

    def text(self, selector: str) -> str:
        return self.css(selector).text

    def action_form(self, action: str) -> WebElement:
        """The thread-level form of `action`: not a reply form under one message
        (those carry a hidden `parent`)."""
        for form in self.all(f'form.action[data-action="{action}"]'):
            if not self.all('input[name="parent"]', form):
                return form
        raise NoSuchElementException(f"no thread-level {action} form")

    def submit(self, form: WebElement) -> None:
        """Clicks the form's submit button, as a person would."""
        self.css('button[type="submit"]', form).click()

    def refusal(self, within: Optional[WebElement] = None) -> Optional[str]:
        found = self.all("p.refusal", within)
        return found[0].get_attribute("data-reason") if found else None

    # session
    def sign_in(self, token: str) -> None:
        self.open("/sign-in")
        field = self.css("form#sign-in input#token")
        assert field.get_attribute("type") == "password"
        field.send_keys(token)
        self.submit(self.css("form#sign-in"))
        self.wait_path("/inbox")
        assert token not in self.driver.current_url, "a token never appears in a URL"

    def csrf(self) -> str:
        """This session's CSRF token, as every signed-in page carries it."""
        value = self.css('form#sign-out input[name="csrf"]').get_attribute("value")
        assert value, "the sign-out form carries no csrf value"
        return value

    def session_cookie(self) -> Dict[str, Any]:
        cookie = self.driver.get_cookie("parley_session")
        assert cookie, f"[{self.name}] holds no parley_session cookie"
        return cookie

    def cookie_header(self) -> Dict[str, str]:
        return {"Cookie": "parley_session=" + self.session_cookie()["value"]}

    # screenshots
    def shot(self, name: str, full: bool = False, at: Optional[WebElement] = None) -> Path:
        """Saves a PNG of the page: the viewport (scrolled to `at` when given), or
        with `full` the whole page."""
        OUT.mkdir(parents=True, exist_ok=True)
        target = OUT / f"{name}.png"
        if at is not None:
            self.driver.execute_script("arguments[0].scrollIntoView({block: 'center'});", at)
        if full:
            size = self.driver.execute_script(
                "return [document.documentElement.scrollWidth, document.documentElement.scrollHeight]"
            )
            clip = {"x": 0, "y": 0, "width": size[0], "height": min(size[1], 6000), "scale": 1}
            shot = self.driver.execute_cdp_cmd(
                "Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True, "clip": clip}
            )
            target.write_bytes(base64.b64decode(shot["data"]))
        else:
            assert self.driver.save_screenshot(str(target))
        return target


def mark_page(browser: Browser) -> None:
    """Sets a marker that survives only as long as this very page (no reload)."""
    browser.driver.execute_script("window.__parley_page = 'kept';")


def same_page(browser: Browser) -> bool:
    return bool(browser.driver.execute_script("return window.__parley_page === 'kept';"))


def wait_navigation(browser: Browser, start: Callable[[], None]) -> None:
    """Runs `start` (which leaves the page) and waits until a new page has loaded."""
    mark_page(browser)
    start()
    browser.wait("a new page", lambda: not same_page(browser))
    browser.wait_loaded()


@pytest.fixture(scope="session")
def browsers(server: Server) -> Iterator[Callable[..., Browser]]:
    """Makes browsers on demand; every one is closed at the end of the run."""
    made: List[Browser] = []

    def make(name: str, javascript: bool = True) -> Browser:
        browser = Browser(server, name, javascript)
        made.append(browser)
        return browser

    yield make
    for browser in made:
        browser.quit()


@pytest.fixture(scope="session")
def ann(browsers: Callable[..., Browser], tokens: Tokens) -> Browser:
    browser = browsers("ann")
    browser.sign_in(tokens.ann)
    return browser


@pytest.fixture(scope="session")
def bea(browsers: Callable[..., Browser], tokens: Tokens) -> Browser:
    browser = browsers("bea")
    browser.sign_in(tokens.bea)
    return browser


@pytest.fixture(scope="session")
def agent_browser(browsers: Callable[..., Browser], tokens: Tokens) -> Browser:
    browser = browsers("alice")
    browser.sign_in(tokens.alice)
    return browser


@pytest.fixture(scope="session")
def alice(server: Server, tokens: Tokens) -> Agent:
    return Agent(server.base, tokens.alice)


@pytest.fixture(scope="session")
def bob(server: Server, tokens: Tokens) -> Agent:
    return Agent(server.base, tokens.bob)


@pytest.fixture(scope="session")
def ann_rest(server: Server, tokens: Tokens) -> Agent:
    return Agent(server.base, tokens.ann)


@pytest.fixture(scope="session")
def bea_rest(server: Server, tokens: Tokens) -> Agent:
    return Agent(server.base, tokens.bea)
