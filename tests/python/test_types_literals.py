"""``parley.types`` against the engine: each Literal equals the engine's own list, and
every result of a scenario that produces each shape fits its TypedDict exactly (no
key missing, none left undescribed, every value of the declared type).

Also here: ``Forum.call`` takes its ``args`` as a mapping or ``None``, nothing else.
"""

from __future__ import annotations

import ast
import asyncio
import collections.abc
import glob
import os
import shutil
import subprocess
from typing import Any, Dict, Iterator, List, Literal, Tuple, Union, get_args, get_origin, get_type_hints

import pytest

import parley
import parley.aio
from parley import types


def members(alias: Any) -> List[str]:
    return list(get_args(alias))


# -- The closed sets against the engine ------------------------------------------------


def test_kind_is_every_act_of_the_core_and_the_dialectic_profile(forum: parley.Forum) -> None:
    manifest = forum.manifest()
    acts = [act["kind"] for act in manifest["acts"]]
    acts += [act["kind"] for act in manifest["profiles"]["dialectic"]["acts"]]
    assert members(types.Kind) == acts
    assert len(acts) == 13


def test_state_is_the_forward_line_then_the_side_states(forum: parley.Forum) -> None:
    states = forum.manifest()["states"]
    assert members(types.State) == states["forward"] + states["side"]


def test_claim_status_and_evidence_kind_are_the_dialectic_lists(forum: parley.Forum) -> None:
    dialectic = forum.manifest()["profiles"]["dialectic"]
    assert members(types.ClaimStatus) == dialectic["claim_states"]
    assert members(types.EvidenceKind) == dialectic["evidence_kinds"]


def test_reason_is_every_refusal_reason(forum: parley.Forum) -> None:
    reasons = [entry["reason"] for entry in parley.REASONS]
    assert members(types.Reason) == reasons
    assert [entry["reason"] for entry in forum.manifest()["reasons"]] == reasons


def test_operation_is_every_operation(forum: parley.Forum) -> None:
    assert members(types.Operation) == list(parley.OPERATIONS)
    assert forum.manifest()["operations"] == list(parley.OPERATIONS)


def test_an_act_needs_one_of_the_declared_requirements(forum: parley.Forum) -> None:
    manifest = forum.manifest()
    needs = {act["needs"] for act in manifest["acts"] + manifest["profiles"]["dialectic"]["acts"]}
    assert needs == set(get_args(get_type_hints(types.ActInfo)["needs"]))


def test_the_listen_profile_lists_operations(forum: parley.Forum) -> None:
    listen = forum.manifest()["profiles"]["listen"]["operations"]
    assert set(listen) <= set(members(types.Operation))


def test_limits_name_every_limit(forum: parley.Forum) -> None:
    assert set(get_type_hints(types.Limits)) == set(forum.limits) == set(forum.manifest()["limits"])


def test_feed_kind_is_what_a_feed_accepts(forum: parley.Forum, tokens: Dict[str, str]) -> None:
    session = forum.session(tokens["alice"])
    for kind in members(types.FeedKind):
        assert session.feed(kind).kind == kind
    with pytest.raises(ValueError, match="unknown feed kind"):
        session.feed("threads")  # type: ignore[call-overload]


def test_right_is_every_right_a_token_may_hold(forum: parley.Forum) -> None:
    # A human holds every right, in the engine's order.
    human = forum.session(forum.create_token("hana", kind="human"))
    assert human.whoami()["rights"] == members(types.Right)
    for right in members(types.Right):
        holder = forum.session(forum.create_token(f"r-{right}", rights=[right]))
        assert holder.whoami()["rights"] == [right]
    with pytest.raises(ValueError):
        forum.create_token("admin", rights=["admin"])  # type: ignore[list-item]


def test_author_kind_is_every_token_kind(forum: parley.Forum) -> None:
    for kind in members(types.AuthorKind):
        session = forum.session(forum.create_token(f"k-{kind}", kind=kind))
        assert session.whoami()["kind"] == kind
        assert session.ask(f"Who am I, {kind}?")["message"]["author_kind"] == kind
    with pytest.raises(ValueError):
        forum.create_token("robot", kind="robot")  # type: ignore[arg-type]


def test_origin_is_who_set_a_state(forum: parley.Forum, tokens: Dict[str, str]) -> None:
    by_llm = forum.session(tokens["alice"]).ask("Set by an agent?")["thread"]["state_origin"]
    by_human = forum.session(tokens["ann"]).ask("Set by a human?")["thread"]["state_origin"]
    assert [by_human, by_llm] == members(types.Origin)


# -- Every shape against what the engine returns ---------------------------------------


def _is_typeddict(tp: Any) -> bool:
    return isinstance(tp, type) and issubclass(tp, dict) and hasattr(tp, "__required_keys__")


def fit(value: Any, tp: Any, path: str = "result") -> List[str]:
    """What keeps ``value`` from being a ``tp``: TypedDicts exactly (required keys there,
    no key undescribed), lists item by item, unions by any arm, literals by value."""
    if _is_typeddict(tp):
        if not isinstance(value, dict):
            return [f"{path}: {value!r} is not a {tp.__name__}"]
        hints = get_type_hints(tp)
        problems = [f"{path}.{key}: missing from {tp.__name__}" for key in sorted(tp.__required_keys__ - set(value))]
        problems += [f"{path}.{key}: not in {tp.__name__}" for key in sorted(set(value) - set(hints))]
        for key in sorted(set(value) & set(hints)):
            problems += fit(value[key], hints[key], f"{path}.{key}")
        return problems
    origin = get_origin(tp)
    if origin is Union:
        arms = [fit(value, arm, path) for arm in get_args(tp)]
        if any(not arm for arm in arms):
            return []
        return [f"{path}: {value!r} fits no arm of {tp}: " + " / ".join("; ".join(arm) for arm in arms)]
    if origin is Literal:
        return [] if value in get_args(tp) else [f"{path}: {value!r} is not one of {get_args(tp)}"]
    if origin is list:
        if not isinstance(value, list):
            return [f"{path}: {value!r} is not a list"]
        (item,) = get_args(tp)
        return [problem for i, v in enumerate(value) for problem in fit(v, item, f"{path}[{i}]")]
    if tp is type(None):
        return [] if value is None else [f"{path}: {value!r} is not None"]
    if tp in (str, int, bool):
        # Exact types: a bool is not an int here, as in JSON.
        return [] if type(value) is tp else [f"{path}: {value!r} is not a {tp.__name__}"]
    raise AssertionError(f"{path}: no check for {tp!r}")


def results(forum: parley.Forum, tokens: Dict[str, str]) -> Iterator[Tuple[str, Any, Any]]:
    """A scenario that produces every shape, optional keys and every event type included."""
    alice = forum.session(tokens["alice"], "w1", provenance={"model": "m", "client": "c"})
    bob = forum.session(tokens["bob"])
    mod = forum.session(tokens["mod"])
    judge = forum.session(tokens["judge"])
    ann = forum.session(tokens["ann"])

    asked = alice.ask("Which port?", to="ainotes:bob")
    thread = asked["thread"]["id"]
    yield "ask", asked, types.PostResult
    yield "answer (a transition)", bob.answer("7878.", thread=thread), types.PostResult
    yield "mark (a confirmation)", mod.mark("Confirmed.", state="answered", thread=thread), types.PostResult
    yield "handoff", bob.handoff("Carol?", to="ainotes:carol", thread=thread), types.PostResult
    yield "note, replayed", bob.note("FYI.", thread=thread, idempotency_key="k-1"), types.PostResult
    replay = bob.note("FYI.", thread=thread, idempotency_key="k-1")
    assert replay["replayed"] is True
    yield "note, a replay", replay, types.PostResult

    claimed = bob.claim(
        "7878 is free.",
        thread=thread,
        evidence=[{"kind": "log", "ref": "ci.txt", "note": "all runners"}],
        valid_until="2030-01-01T00:00:00Z",
    )
    claim = claimed["claim"]["id"]
    yield "assert", claimed, types.PostResult
    attested = alice.attest("Seen.", claim=claim, evidence=[{"kind": "url", "ref": "https://ci/1"}])
    yield "attest", attested, types.PostResult
    yield "verify", judge.verify("Sealed.", claim=claim), types.PostResult
    refuted = ann.refute("Not on runner 3.", claim=claim, evidence=[{"kind": "note", "ref": "runner 3"}])
    yield "refute (a claim event)", refuted, types.PostResult
    counter = refuted["message"]["counter_claim"]
    # Refuting the counter-claim restores the claim: two status changes, so `events`.
    twice = bob.refute("Runner 3 was retired.", claim=counter, evidence=[{"kind": "commit", "ref": "abc1234"}])
    assert "events" in twice and len(twice["events"]) == 2
    yield "refute (two events)", twice, types.PostResult
    superseding = bob.claim("7878 and 7879 are free.", thread=thread, supersedes=[claim])
    yield "assert (supersedes)", superseding, types.PostResult
    yield "get_claim", bob.claim_status(claim), types.ClaimView
    yield "get_claim (a counter-claim)", bob.claim_status(counter), types.ClaimView
    stored = alice.call("put_artifact", {"content_base64": "bG9n", "media_type": "text/plain"})
    yield "put_artifact", stored, types.ArtifactResult
    yield "get_artifact", alice.call("get_artifact", {"ref": stored["artifact"]["ref"]}), types.ArtifactContent
    exported = bob.call("export_claim", {"claim": claim})
    yield "export_claim", exported, types.BundleResult
    # A forum trusts its own realm: the claim comes back as ann's, with its origin.
    imported = ann.import_claim(exported["bundle"])
    yield "import_claim", imported, types.PostResult
    origin = bob.claim_status(imported["claim"]["id"])
    assert origin["imported"] is not None and origin["imported"]["claim"] == claim
    yield "get_claim (an imported claim)", origin, types.ClaimView
    yield "decide", alice.decide("Decided: 7878.", thread=thread), types.PostResult

    yield "get_thread", bob.thread(thread), types.ThreadView
    yield "list_threads", bob.threads(), types.ThreadsPage
    yield "list_threads by state", bob.threads(state="decided"), types.ThreadsPage
    opened = ann.ask("A human asks bob.", to="ainotes:bob")
    yield "ask (a human)", opened, types.PostResult
    inbox = bob.inbox()
    assert inbox["items"]
    yield "get_inbox", inbox, types.InboxPage
    events = bob.events()
    assert {event["type"] for event in events["items"]} == {"transition", "confirmation", "claim"}
    yield "get_events", events, types.EventsPage
    yield "get_messages", bob.messages(), types.MessagesPage
    yield "search", bob.search("7878"), types.SearchPage
    yield "whoami", alice.whoami(), types.Whoami
    yield "whoami (a human)", ann.whoami(), types.Whoami
    yield "get_manifest", alice.manifest(), types.Manifest
    yield "Forum.manifest", forum.manifest(), types.Manifest
    yield "Forum.identities", forum.identities(), List[types.IdentityInfo]
    with parley.Forum(profiles=()) as bare:
        yield "a manifest without profiles", bare.manifest(), types.Manifest


def test_every_result_fits_its_shape(forum: parley.Forum, tokens: Dict[str, str]) -> None:
    seen = set()
    for name, value, shape in results(forum, tokens):
        assert fit(value, shape) == [], name
        seen.add(shape)
    assert len(seen) == 14


def test_optional_keys_are_the_ones_set_only_sometimes() -> None:
    assert types.Message.__optional_keys__ == {
        "to",
        "state",
        "provenance",
        "claim",
        "counter_claim",
        "evidence",
        "supersedes",
        "valid_until",
    }
    assert types.MessageNode.__required_keys__ == types.Message.__required_keys__ | {"replies"}
    assert types.PostResult.__optional_keys__ == {"event", "events", "claim"}
    assert types.EvidenceItem.__optional_keys__ == {"note"}


def test_a_result_that_does_not_fit_is_caught() -> None:
    # The checker itself: a key too many, a key missing, a value of the wrong type.
    author: Dict[str, Any] = {"identity": "ainotes:a", "extension": None}
    assert fit(author, types.Author) == []
    assert fit(dict(author, mood="calm"), types.Author) == ["result.mood: not in Author"]
    assert fit({"identity": "ainotes:a"}, types.Author) == ["result.extension: missing from Author"]
    assert fit(dict(author, extension=1), types.Author) != []
    assert fit({"kind": "lgo", "ref": "x"}, types.EvidenceItem) != []
    assert fit({"kind": "log", "ref": "x"}, types.EvidenceItem) == []


def test_the_async_session_returns_the_same_shapes(forum: parley.Forum, tokens: Dict[str, str]) -> None:
    async def scenario() -> None:
        session = parley.aio.AsyncForum(forum).session(tokens["alice"])
        asked = await session.ask("Async?")
        assert fit(asked, types.PostResult) == []
        assert fit(await session.thread(asked["thread"]["id"]), types.ThreadView) == []
        assert fit(await session.threads(state="open"), types.ThreadsPage) == []
        assert fit(await session.whoami(), types.Whoami) == []

    asyncio.run(scenario())


def test_the_names_are_exported_from_parley() -> None:
    for name in types.__all__:
        assert getattr(parley, name) is getattr(types, name), name
        assert name in parley.__all__


# -- The generic call takes a mapping ----------------------------------------------------


class Args(collections.abc.Mapping):  # type: ignore[type-arg]
    """A mapping that is not a dict."""

    def __init__(self, **items: Any) -> None:
        self._items = items

    def __getitem__(self, key: str) -> Any:
        return self._items[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)


@pytest.mark.parametrize(
    "args, shown",
    [
        (["ask", "Not an object."], "list"),
        (("th_1",), "tuple"),
        ("kind=ask", "str"),
        (b"{}", "bytes"),
        (3, "int"),
        (True, "bool"),
        ({"ask", "body"}, "set"),
    ],
)
@pytest.mark.parametrize("operation", ["post", "get_thread", "whoami", "get_manifest"])
def test_args_that_are_not_a_mapping_are_a_type_error(
    forum: parley.Forum, tokens: Dict[str, str], operation: str, args: Any, shown: str
) -> None:
    with pytest.raises(TypeError, match=rf"^args must be a mapping \(dict\) or None, not '{shown}'$"):
        forum.call(tokens["alice"], operation, args)
    # Nothing reached the engine: no thread was opened.
    assert forum.call(tokens["alice"], "list_threads", {})["items"] == []


def test_a_mapping_or_none_is_accepted(forum: parley.Forum, tokens: Dict[str, str]) -> None:
    posted = forum.call(tokens["alice"], "post", Args(kind="ask", body="From a Mapping?"))
    assert posted["message"]["body"] == "From a Mapping?"
    assert forum.call(tokens["alice"], "whoami", None)["identity"] == "ainotes:alice"
    assert forum.call(tokens["alice"], "whoami")["identity"] == "ainotes:alice"
    assert forum.call(None, "get_manifest", {})["parley"] == "1"


def test_the_async_call_passes_the_check_on(forum: parley.Forum, tokens: Dict[str, str]) -> None:
    async def call() -> None:
        await parley.aio.AsyncForum(forum).call(tokens["alice"], "whoami", ["x"])  # type: ignore[arg-type]

    with pytest.raises(TypeError, match="args must be a mapping"):
        asyncio.run(call())


def test_the_types_module_loads_on_the_oldest_python() -> None:
    # The package supports Python 3.9: parley.types must load there with the standard
    # library alone (no typing_extensions, no NotRequired), its shapes intact.
    candidates = [shutil.which("python3.9")] + sorted(glob.glob(os.path.expanduser("~/.pyenv/versions/3.9*/bin/python3.9")))
    working = [c for c in candidates if c and subprocess.run([c, "-c", ""], capture_output=True).returncode == 0]
    if not working:
        # No 3.9 interpreter: at least the module's syntax must be 3.9's.
        source = open(types.__file__, encoding="utf-8").read()
        ast.parse(source, feature_version=(3, 9))
        assert "NotRequired" not in source and "typing_extensions" not in source
        return
    python39 = working[0]
    program = (
        "import importlib.util, os, sys, types\n"
        # A bare package around the file, so that its relative imports of the
        # package's other shape modules resolve without parley/__init__.py.
        "package = types.ModuleType('t')\n"
        "package.__path__ = [os.path.dirname(sys.argv[1])]\n"
        "sys.modules['t'] = package\n"
        "spec = importlib.util.spec_from_file_location('t.types', sys.argv[1])\n"
        "module = importlib.util.module_from_spec(spec)\n"
        "spec.loader.exec_module(module)\n"
        "assert 'typing_extensions' not in sys.modules\n"
        "print(sorted(module.Message.__optional_keys__), sorted(module.PostResult.__required_keys__))\n"
    )
    done = subprocess.run([python39, "-c", program, types.__file__], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [
        "['claim',", "'counter_claim',", "'evidence',", "'provenance',", "'state',",
        "'supersedes',", "'to',", "'valid_until']", "['message',", "'replayed',", "'thread']",
    ]
