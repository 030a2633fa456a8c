"""Runs the language-neutral conformance transcripts (``tests/conformance/*.json``)
through ``parley.Forum.call`` (:func:`run`), or through ``parley.connect`` against a
running server (:func:`run_remote`), with the rules the Rust and C harnesses follow."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable, ContextManager, Dict, List, Optional, Protocol

import parley

CONFORMANCE = Path(__file__).resolve().parent.parent / "conformance"

_TOP_KEYS = {"name", "description", "settings", "tokens", "steps"}
_CALL_KEYS = {"actor", "token", "op", "args", "expect", "save"}
_MISSING = object()


def transcript_paths() -> List[Path]:
    return sorted(CONFORMANCE.glob("*.json"))


def substitute(value: Any, saved: Dict[str, Any]) -> Any:
    """Replaces every string ``"$name"`` (the whole string) by the saved value."""
    if isinstance(value, str) and value.startswith("$"):
        name = value[1:]
        if name not in saved:
            raise KeyError(f"nothing saved under {name!r}")
        return saved[name]
    if isinstance(value, list):
        return [substitute(item, saved) for item in value]
    if isinstance(value, dict):
        return {key: substitute(item, saved) for key, item in value.items()}
    return value


def lookup(value: Any, path: str) -> Any:
    """Follows a dotted path; numeric segments index arrays."""
    for segment in path.split("."):
        if isinstance(value, dict) and segment in value:
            value = value[segment]
        elif isinstance(value, list) and segment.isdigit() and int(segment) < len(value):
            value = value[int(segment)]
        else:
            return _MISSING
    return value


def match(pattern: Any, actual: Any, path: str, problems: List[str]) -> None:
    """Objects match as subsets, arrays element-wise with equal length, scalars by
    equality, where a bool never equals a number (as in JSON)."""
    where = path or "the result"
    if isinstance(pattern, dict):
        if not isinstance(actual, dict):
            problems.append(f"{where}: expected an object, got {json.dumps(actual)}")
            return
        for key, sub in pattern.items():
            sub_path = f"{path}.{key}" if path else key
            if key not in actual:
                problems.append(f"{sub_path}: missing")
            else:
                match(sub, actual[key], sub_path, problems)
    elif isinstance(pattern, list):
        if not isinstance(actual, list):
            problems.append(f"{where}: expected an array, got {json.dumps(actual)}")
        elif len(pattern) != len(actual):
            problems.append(f"{where}: expected {len(pattern)} items, got {len(actual)}")
        else:
            for i, (want, got) in enumerate(zip(pattern, actual)):
                match(want, got, f"{path}.{i}" if path else str(i), problems)
    elif isinstance(pattern, bool) or isinstance(actual, bool):
        if type(pattern) is not type(actual) or pattern != actual:
            problems.append(f"{where}: expected {json.dumps(pattern)}, got {json.dumps(actual)}")
    elif isinstance(pattern, (int, float)) and isinstance(actual, (int, float)):
        if pattern != actual:
            problems.append(f"{where}: expected {pattern}, got {actual}")
    elif type(pattern) is not type(actual) or pattern != actual:
        problems.append(f"{where}: expected {json.dumps(pattern)}, got {json.dumps(actual)}")


def _check_keys(obj: Dict[str, Any], allowed: set, what: str) -> None:
    unknown = sorted(set(obj) - allowed)
    if unknown:
        raise ValueError(f"{what} has an unknown key {unknown[0]!r}")


def run(path: Path) -> List[str]:
    """Runs one transcript in a fresh in-memory forum; returns every mismatch."""
    doc = json.loads(path.read_text(encoding="utf-8"))
    _check_keys(doc, _TOP_KEYS, "the transcript")
    if doc.get("name") != path.stem:
        return [f"{path.name}: name {doc.get('name')!r} differs from the file name"]
    settings = doc.get("settings", {})
    _check_keys(settings, {"realm", "limits", "profiles", "guards", "coordination", "provenance", "durable", "clock"}, "settings")
    # Settings left out keep the engine's defaults, which the Python defaults follow
    # (`profiles` among them: dialectic, listen and guards).
    options = {
        key: settings[key]
        for key in ("realm", "limits", "profiles", "guards", "coordination", "provenance", "durable", "clock")
        if key in settings
    }
    forum = parley.Forum(None, **options)
    secrets: Dict[str, str] = {}
    for entry in doc["tokens"]:
        spec = dict(entry)
        actor = spec.pop("actor")
        _check_keys(spec, {"handle", "kind", "rights", "label"}, f"token {actor!r}")
        assert actor not in secrets, f"actor {actor!r} defined twice"
        secrets[actor] = forum.create_token(
            spec["handle"],
            kind=spec.get("kind", "llm"),
            rights=spec.get("rights", ["read", "write"]),
            label=spec.get("label"),
        )
    if not doc["steps"]:
        return [f"{path.name}: the transcript has no steps"]

    failures: List[str] = []
    saved: Dict[str, Any] = {}
    with forum:
        for index, step in enumerate(doc["steps"]):
            if "revoke" in step:
                _check_keys(step, {"revoke"}, f"step {index}")
                if not forum.revoke_token(secrets[step["revoke"]]):
                    failures.append(f"{path.name}: step {index}: revoke {step['revoke']}: not active")
                continue
            _check_keys(step, _CALL_KEYS, f"step {index}")
            token: Optional[str]
            if "token" in step:
                token, who = step["token"], f"token {step['token']!r}"
            else:
                actor = step["actor"]
                token, who = (None, "no token") if actor is None else (secrets[actor], actor)
            head = f"{path.name}: step {index} ({step['op']} as {who})"
            expect = step["expect"]
            if len(expect) != 1 or not ({"ok", "refused"} & set(expect)):
                raise ValueError(f"{head}: expect must hold exactly one of ok and refused")
            try:
                args = substitute(step["args"], saved)
                expect = substitute(expect, saved)
            except KeyError as exc:
                failures.append(f"{head}: {exc}")
                continue
            if args is not None and not isinstance(args, dict):
                problem = _not_a_mapping(forum, token, step["op"], args, expect)
                if problem is not None:
                    failures.append(f"{head}: {problem}")
                continue
            outcome: Dict[str, Any]
            try:
                outcome = {"ok": forum.call(token, step["op"], args)}
            except parley.Refusal as refusal:
                outcome = {"refused": refusal.data}
                _check_exception(refusal, head, failures)
            problems: List[str] = []
            if "ok" in expect and "ok" in outcome:
                match(expect["ok"], outcome["ok"], "", problems)
            elif "refused" in expect and "refused" in outcome:
                match(expect["refused"], outcome["refused"], "", problems)
            elif "ok" in expect:
                problems.append("expected success, got a refusal")
            else:
                problems.append("expected a refusal, got success")
            if "ok" in outcome:
                for name, dotted in step.get("save", {}).items():
                    value = lookup(outcome["ok"], dotted)
                    if value is _MISSING:
                        problems.append(f"save {name}: no value at {dotted!r}")
                    else:
                        saved[name] = value
            if problems:
                failures.append(
                    f"{head}: {'; '.join(problems)}\n    args:     {json.dumps(args)[:2000]}"
                    f"\n    expected: {json.dumps(expect)[:2000]}\n    actual:   {json.dumps(outcome)[:2000]}"
                )
    return failures


def _not_a_mapping(forum: parley.Forum, token: Optional[str], op: str, args: Any, expect: Any) -> Optional[str]:
    """A step whose arguments are JSON but not an object (a list, a string): the other
    bindings hand them to the engine, which refuses them with a 400, while Python's
    ``Forum.call`` takes a mapping and raises ``TypeError`` before the engine runs."""
    refused = expect.get("refused")
    if not isinstance(refused, dict) or refused.get("status") != 400:
        return "arguments that are not an object must expect a refusal with status 400"
    try:
        forum.call(token, op, args)
    except TypeError:
        return None
    return "Forum.call accepted arguments that are not a mapping (expected a TypeError)"


def _check_exception(refusal: parley.Refusal, head: str, failures: List[str]) -> None:
    """The exception's attributes must agree with its data and its status class."""
    expected_class = {
        400: parley.BadRequest,
        401: parley.Unauthorized,
        403: parley.Forbidden,
        404: parley.NotFound,
        409: parley.Conflict,
        413: parley.PayloadTooLarge,
        429: parley.RateLimited,
    }.get(refusal.status)
    # A reason with a class of its own, a subclass of its status's.
    expected_class = {
        "state_changed": parley.StateChanged,
        "lease_conflict": parley.LeaseConflict,
        "echoed_body": parley.EchoedBody,
        "no_progress": parley.NoProgress,
        "already_imported": parley.AlreadyImported,
    }.get(refusal.reason, expected_class)
    if expected_class is None or type(refusal) is not expected_class:
        failures.append(f"{head}: status {refusal.status} raised {type(refusal).__name__}")
    if (refusal.reason, refusal.status, refusal.message) != (
        refusal.data["reason"],
        refusal.data["status"],
        refusal.data["message"],
    ) or refusal.state != refusal.data.get("state"):
        failures.append(f"{head}: exception attributes disagree with {refusal.data}")


# --------------------------------------------------------------------- over a server


class Host(Protocol):
    """A forum served over HTTP for one transcript: tokens are issued on the host's
    side, the steps go through ``parley.connect``."""

    def create_token(self, handle: str, kind: str, rights: List[str], label: Optional[str]) -> str: ...

    def serve(self) -> str:
        """Starts serving; returns the server's URL."""
        ...

    def revoke_token(self, token: str) -> bool: ...


def run_remote(path: Path, open_host: Callable[[Dict[str, Any]], ContextManager[Host]]) -> List[str]:
    """Runs one transcript against a server that ``open_host(settings)`` provides, every
    call step through a session of ``parley.connect`` (the steps without a token, or
    with a literal one, through its forum's ``call``); returns every mismatch, judged as
    :func:`run` judges them."""
    doc = json.loads(path.read_text(encoding="utf-8"))
    _check_keys(doc, _TOP_KEYS, "the transcript")
    if doc.get("name") != path.stem:
        return [f"{path.name}: name {doc.get('name')!r} differs from the file name"]
    settings = doc.get("settings", {})
    _check_keys(settings, {"realm", "limits", "profiles", "guards", "coordination", "provenance", "durable", "clock"}, "settings")
    if not doc["steps"]:
        return [f"{path.name}: the transcript has no steps"]
    failures: List[str] = []
    saved: Dict[str, Any] = {}
    with open_host(settings) as host:
        secrets: Dict[str, str] = {}
        for entry in doc["tokens"]:
            spec = dict(entry)
            actor = spec.pop("actor")
            _check_keys(spec, {"handle", "kind", "rights", "label"}, f"token {actor!r}")
            assert actor not in secrets, f"actor {actor!r} defined twice"
            secrets[actor] = host.create_token(
                spec["handle"], spec.get("kind", "llm"), spec.get("rights", ["read", "write"]), spec.get("label")
            )
        url = host.serve()
        sessions: Dict[str, parley.Session] = {}

        def session_of(token: str) -> parley.Session:
            if token not in sessions:
                sessions[token] = parley.connect(url, token)
            return sessions[token]

        # Steps without a token go through the forum of a session, as `Forum.call` would.
        anonymous = session_of("")
        try:
            for index, step in enumerate(doc["steps"]):
                if "revoke" in step:
                    _check_keys(step, {"revoke"}, f"step {index}")
                    if not host.revoke_token(secrets[step["revoke"]]):
                        failures.append(f"{path.name}: step {index}: revoke {step['revoke']}: not active")
                    continue
                _check_keys(step, _CALL_KEYS, f"step {index}")
                if "token" in step:
                    token, who = step["token"], f"token {step['token']!r}"
                else:
                    actor = step["actor"]
                    token, who = (None, "no token") if actor is None else (secrets[actor], actor)
                head = f"{path.name}: step {index} ({step['op']} as {who}, remote)"
                expect = step["expect"]
                if len(expect) != 1 or not ({"ok", "refused"} & set(expect)):
                    raise ValueError(f"{head}: expect must hold exactly one of ok and refused")
                try:
                    args = substitute(step["args"], saved)
                    expect = substitute(expect, saved)
                except KeyError as exc:
                    failures.append(f"{head}: {exc}")
                    continue
                outcome: Dict[str, Any]
                try:
                    if not isinstance(args, dict):
                        # Arguments that are no object on purpose: Python's call takes a
                        # mapping, so they go as any MCP client sends them.
                        outcome = _mcp_outcome(anonymous.forum, token, step["op"], args)
                    elif token is None:
                        outcome = {"ok": anonymous.forum.call(None, step["op"], args)}
                    else:
                        outcome = {"ok": session_of(token).call(step["op"], args)}
                except parley.Refusal as refusal:
                    outcome = {"refused": refusal.data}
                    _check_exception(refusal, head, failures)
                problems: List[str] = []
                if "ok" in expect and "ok" in outcome:
                    match(expect["ok"], outcome["ok"], "", problems)
                elif "refused" in expect and "refused" in outcome:
                    match(expect["refused"], outcome["refused"], "", problems)
                elif "ok" in expect:
                    problems.append("expected success, got a refusal")
                else:
                    problems.append("expected a refusal, got success")
                if "ok" in outcome:
                    for name, dotted in step.get("save", {}).items():
                        value = lookup(outcome["ok"], dotted)
                        if value is _MISSING:
                            problems.append(f"save {name}: no value at {dotted!r}")
                        else:
                            saved[name] = value
                if problems:
                    failures.append(
                        f"{head}: {'; '.join(problems)}\n    args:     {json.dumps(args)[:2000]}"
                        f"\n    expected: {json.dumps(expect)[:2000]}\n    actual:   {json.dumps(outcome)[:2000]}"
                    )
        finally:
            for session in sessions.values():
                session.forum.close()
    return failures


def _mcp_outcome(forum: Any, token: Optional[str], op: str, args: Any) -> Dict[str, Any]:
    """A ``tools/call`` through ``forum.mcp``, as the harness's outcome."""
    request = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": op, "arguments": args}}
    reply = forum.mcp(token, request)
    result = reply["result"]
    if result["isError"]:
        return {"refused": result["structuredContent"]["error"]}
    return {"ok": result["structuredContent"]}
