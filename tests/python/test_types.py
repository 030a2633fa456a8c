"""Wrong Python types raise TypeError naming the argument; nothing crashes."""

from __future__ import annotations

import datetime
from typing import Any, Callable, Dict, List, Tuple

import pytest

import parley
import parley.aio

Case = Tuple[str, Callable[[parley.Forum, parley.Session], Any], str]


class Opaque:
    """An object with no JSON form."""


CASES: List[Case] = [
    # The forum's constructor.
    ("path", lambda f, s: parley.Forum(123), "path"),
    ("realm", lambda f, s: parley.Forum(realm=1), "realm"),
    ("limits-not-dict", lambda f, s: parley.Forum(limits="x"), "limits"),
    ("limits-value", lambda f, s: parley.Forum(limits={"body_max_chars": "9"}), "limits"),
    ("limits-bool", lambda f, s: parley.Forum(limits={"body_max_chars": True}), "limits"),
    ("limits-key", lambda f, s: parley.Forum(limits={1: 1}), "limits"),
    ("profiles-str", lambda f, s: parley.Forum(profiles="dialectic"), "profiles"),
    ("profiles-item", lambda f, s: parley.Forum(profiles=[1]), "profiles"),
    ("durable", lambda f, s: parley.Forum(durable="yes"), "durable"),
    ("clock", lambda f, s: parley.Forum(clock=12), "clock"),
    # Token administration.
    ("handle", lambda f, s: f.create_token(1), "handle"),
    ("kind", lambda f, s: f.create_token("x", kind=1), "kind"),
    ("rights-str", lambda f, s: f.create_token("x", rights="read"), "rights"),
    ("rights-item", lambda f, s: f.create_token("x", rights=[1]), "rights"),
    ("label", lambda f, s: f.create_token("x", label=1), "label"),
    ("revoke", lambda f, s: f.revoke_token(None), "token"),
    # The generic call and the MCP handler.
    ("call-token", lambda f, s: f.call(1, "whoami"), "token"),
    ("call-operation", lambda f, s: f.call(None, 1), "operation"),
    ("call-args-key", lambda f, s: f.call(None, "get_manifest", {1: 2}), "args"),
    ("call-args-set", lambda f, s: f.call(None, "get_manifest", {"a": {1, 2}}), r"args\['a'\]|args\[\"a\"\]"),
    ("call-args-object", lambda f, s: f.call(None, "get_manifest", Opaque()), "args"),
    ("call-args-bytes", lambda f, s: f.call(None, "get_manifest", {"b": [b"x"]}), "args"),
    ("mcp-token", lambda f, s: f.mcp(1, "{}"), "token"),
    ("mcp-request", lambda f, s: f.mcp(None, 1), "request"),
    ("mcp-request-list", lambda f, s: f.mcp(None, [1]), "request"),
    # Sessions.
    ("session-token", lambda f, s: f.session(1), "token"),
    ("session-extension", lambda f, s: f.session("t", 1), "extension"),
    ("session-provenance", lambda f, s: f.session("t", provenance=["m"]), "provenance"),
    ("body", lambda f, s: s.ask(1), "body"),
    ("body-none", lambda f, s: s.note(None, thread=1), "body"),
    ("to", lambda f, s: s.ask("x", to=1), "to"),
    ("thread-float", lambda f, s: s.note("x", thread=1.5), "thread"),
    ("thread-bool", lambda f, s: s.note("x", thread=True), "thread"),
    ("parent", lambda f, s: s.note("x", parent=["msg_1"]), "parent"),
    ("state", lambda f, s: s.mark("x", state=1, thread=1), "state"),
    ("claim", lambda f, s: s.attest("x", claim=None, evidence=[]), "claim"),  # type: ignore[arg-type]
    ("evidence-str", lambda f, s: s.attest("x", claim=1, evidence="log"), "evidence"),
    ("evidence-item", lambda f, s: s.attest("x", claim=1, evidence=[1]), "evidence"),
    ("evidence-field", lambda f, s: s.attest("x", claim=1, evidence=[{"kind": 1}]), "evidence"),
    ("supersedes", lambda f, s: s.claim("x", supersedes="cl_1"), "supersedes"),
    ("supersedes-item", lambda f, s: s.claim("x", supersedes=[1.0]), "supersedes"),
    ("valid_until", lambda f, s: s.claim("x", valid_until=2030), "valid_until"),
    ("provenance", lambda f, s: s.ask("x", provenance={"model": 1}), "provenance"),
    ("kind-post", lambda f, s: s.post(1, "x"), "kind"),
    ("idempotency-key-int", lambda f, s: s.ask("x", idempotency_key=5), "idempotency_key"),
    ("idempotency-key-bytes", lambda f, s: s.post("note", "x", thread=1, idempotency_key=b"k"), "idempotency_key"),
    ("idempotency-key-uuid", lambda f, s: s.claim("x", idempotency_key=__import__("uuid").uuid4()), "idempotency_key"),
    ("session-retries", lambda f, s: f.session("t", retries="3"), "retries"),
    ("session-retries-bool", lambda f, s: f.session("t", retries=True), "retries"),
    ("session-retry-backoff", lambda f, s: f.session("t", retry_backoff="0.1"), "retry_backoff"),
    ("search-q", lambda f, s: s.search(1), "q"),
    ("search-q-none", lambda f, s: s.search(None), "q"),
    ("search-thread", lambda f, s: s.search("x", thread=1.5), "thread"),
    ("search-since", lambda f, s: s.search("x", since=1), "since"),
    ("search-limit", lambda f, s: s.search("x", limit="1"), "limit"),
    ("read-thread", lambda f, s: s.thread(None), "thread"),
    ("read-limit", lambda f, s: s.inbox(limit="5"), "limit"),
    ("read-limit-bool", lambda f, s: s.threads(limit=True), "limit"),
    ("read-state", lambda f, s: s.threads(state=1), "state"),
    ("read-since", lambda f, s: s.events(since=1), "since"),
    ("read-events-thread", lambda f, s: s.events(thread=[1]), "thread"),
    ("read-claim", lambda f, s: s.claim_status(1.0), "claim"),
    ("read-wait", lambda f, s: s.inbox(wait="1"), "wait"),
    ("read-wait-bool", lambda f, s: s.messages(wait=True), "wait"),
    ("read-messages-thread", lambda f, s: s.messages(thread=1.5), "thread"),
    ("feed-kind", lambda f, s: s.feed(1), "kind"),
    ("feed-since", lambda f, s: s.feed("messages", since=1), "since"),
    ("tools-format", lambda f, s: s.tools(1), "format"),
    ("dispatch-name", lambda f, s: s.dispatch(1, {}), "name"),
    ("dispatch-arguments", lambda f, s: s.dispatch("whoami", 5), "arguments"),
    ("aio-forum", lambda f, s: parley.aio.AsyncForum(1), "forum"),
    ("aio-session", lambda f, s: parley.aio.AsyncSession(1), "session"),
    ("aio-retries", lambda f, s: parley.aio.AsyncForum(f).session("t", retries=2.0), "retries"),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_wrong_types_raise_type_error(forum: parley.Forum, tokens: Dict[str, str], case: Case) -> None:
    _, call, pattern = case
    session = forum.session(tokens["alice"])
    with pytest.raises(TypeError, match=pattern):
        call(forum, session)


def test_values_of_the_right_type_reach_the_engine(forum: parley.Forum, tokens: Dict[str, str]) -> None:
    """A well-typed but malformed value is the engine's to refuse, as in every binding."""
    session = forum.session(tokens["alice"])
    with pytest.raises(parley.BadRequest):
        session.note("x", thread="thread one")
    with pytest.raises(parley.BadRequest):
        session.mark("x", state="sideways", thread=1)
    with pytest.raises(ValueError, match="timezone"):
        session.claim("x", valid_until=datetime.datetime(2030, 1, 1))
    with pytest.raises(ValueError, match="timezone"):
        parley.Forum(clock=datetime.datetime(2026, 1, 1))
    with pytest.raises(ValueError, match="finite"):
        forum.call(None, "get_manifest", {"x": float("nan")})
    with pytest.raises(ValueError, match="64-bit"):
        forum.call(None, "get_manifest", {"x": 2**70})
    deep: List[Any] = []
    deep.append(deep)
    with pytest.raises(ValueError, match="nested"):
        forum.call(None, "get_manifest", {"x": deep})


def test_json_values_round_trip(forum: parley.Forum, tokens: Dict[str, str]) -> None:
    """Tuples, nested dicts, unicode and big ints cross the boundary intact."""
    session = forum.session(tokens["alice"])
    body = "Unicode: ✓ — 東京 — \U0001f600"
    posted = forum.call(
        tokens["alice"],
        "post",
        {"kind": "ask", "body": body, "provenance": {"model": "m"}, "from": {"extension": "e"}},
    )
    assert posted["message"]["body"] == body
    assert session.thread(posted["thread"]["id"])["messages"][0]["body"] == body
    aware = datetime.datetime(2026, 11, 30, 13, 0, tzinfo=datetime.timezone(datetime.timedelta(hours=1)))
    with parley.Forum(clock=aware) as fixed:
        token = fixed.create_token("zed")
        made = fixed.session(token).ask("When?")
        assert made["message"]["created_at"] == "2026-11-30T12:00:00.000Z"
    assert forum.limits["body_max_chars"] == 500
    assert forum.realm == "ainotes"


def test_text_that_is_not_unicode_scalar_values_is_refused(forum: parley.Forum, tokens: Dict[str, str]) -> None:
    """A lone surrogate has no UTF-8 form: a UnicodeEncodeError (a ValueError), no crash."""
    with pytest.raises(UnicodeEncodeError):
        forum.session(tokens["alice"]).ask("half a pair: \ud800")
    with pytest.raises(UnicodeEncodeError):
        forum.call("\udfff", "whoami")
    with pytest.raises(UnicodeEncodeError):
        forum.mcp(None, '{"jsonrpc": "2.0", "id": 1, "method": "\ud800"}')


def test_fuzzed_arguments_never_crash(forum: parley.Forum, tokens: Dict[str, str]) -> None:
    """Arbitrary JSON shapes for every operation end in a result or a refusal."""
    import random

    rng = random.Random(7)
    leaves: List[Any] = [None, True, 0, -1, 2**63 - 1, 1.5, "", "th_1", "msg_1", "cl_1", "x" * 600, "1"]
    keys = ["kind", "body", "thread", "parent", "to", "state", "claim", "evidence", "from", "limit", "since", "zzz"]
    keys += ["idempotency_key", "q"]

    def value(depth: int) -> Any:
        roll = rng.random()
        if depth > 3 or roll < 0.5:
            return rng.choice(leaves)
        if roll < 0.75:
            return [value(depth + 1) for _ in range(rng.randrange(3))]
        return {rng.choice(keys): value(depth + 1) for _ in range(rng.randrange(4))}

    outcomes = {"ok": 0, "refused": 0, "not a mapping": 0}
    for _ in range(400):
        operation = rng.choice(parley.OPERATIONS)
        args = value(0) if rng.random() < 0.2 else {rng.choice(keys): value(1) for _ in range(rng.randrange(4))}
        if operation == "post" and isinstance(args, dict) and rng.random() < 0.5:
            args.update(kind=rng.choice(["ask", "note", "answer", "assert"]), body="fuzz")
        try:
            forum.call(rng.choice([tokens["alice"], tokens["ann"], None]), operation, args)
            outcomes["ok"] += 1
        except parley.Refusal:
            outcomes["refused"] += 1
        except TypeError:
            # Arguments that are a list or a scalar never reach the engine.
            assert args is not None and not isinstance(args, dict), args
            outcomes["not a mapping"] += 1
    assert all(count > 0 for count in outcomes.values()), outcomes
