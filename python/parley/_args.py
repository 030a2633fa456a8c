"""Type checks and envelope assembly shared by the sync and async sessions.

Wrong Python types are programming errors and raise ``TypeError`` here, before the
engine is asked; malformed values of the right type (a bad id, an unknown state) are
the engine's to refuse, so every binding gives the same refusal for them.
"""

from __future__ import annotations

import datetime
import math
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Type, Union

Id = Union[str, int]
"""A thread, message or claim id: the key (``"th_12"``), the number, or the number as text."""


def type_name(value: object) -> str:
    return type(value).__name__


def check(name: str, value: object, types: Union[Type[Any], Tuple[Type[Any], ...]], what: str) -> None:
    """Raises ``TypeError`` unless ``value`` is an instance of ``types`` (bool is never an int)."""
    if isinstance(value, bool) and not (types is bool or (isinstance(types, tuple) and bool in types)):
        raise TypeError(f"{name} must be {what}, not bool")
    if not isinstance(value, types):
        raise TypeError(f"{name} must be {what}, not {type_name(value)}")


def check_id(name: str, value: object) -> None:
    check(name, value, (str, int), "an id (str or int)")


def check_opt_id(name: str, value: object) -> None:
    if value is not None:
        check_id(name, value)


def check_opt_str(name: str, value: object) -> None:
    if value is not None:
        check(name, value, str, "a str")


def check_opt_limit(value: object) -> None:
    if value is not None:
        check("limit", value, int, "an int")


def time_text(name: str, value: Union[str, datetime.datetime]) -> str:
    """An RFC 3339 time from a str or a timezone-aware datetime."""
    if isinstance(value, str):
        return value
    if isinstance(value, datetime.datetime):
        if value.utcoffset() is None:
            raise ValueError(f"{name}: a datetime must be timezone-aware")
        return value.isoformat()
    raise TypeError(f"{name} must be a str or a datetime, not {type_name(value)}")


def string_map(name: str, value: object) -> Dict[str, str]:
    """A ``Mapping[str, str]``, such as ``provenance``."""
    if not isinstance(value, Mapping):
        raise TypeError(f"{name} must be a mapping of str to str, not {type_name(value)}")
    out: Dict[str, str] = {}
    for key, item in value.items():
        if not isinstance(key, str) or not isinstance(item, str):
            raise TypeError(f"{name} must map str to str, got {type_name(key)} to {type_name(item)}")
        out[key] = item
    return out


def evidence_list(value: object) -> List[Dict[str, str]]:
    """Evidence items: a list or tuple of mappings ``{"kind", "ref", "note"?}``."""
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        raise TypeError(f"evidence must be a list of mappings, not {type_name(value)}")
    items = []
    for i, item in enumerate(value):
        items.append(string_map(f"evidence[{i}]", item))
    return items


def id_list(name: str, value: object) -> List[Id]:
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        raise TypeError(f"{name} must be a list of ids, not {type_name(value)}")
    for i, item in enumerate(value):
        check_id(f"{name}[{i}]", item)
    return list(value)


def envelope(
    kind: str,
    body: str,
    *,
    extension: Optional[str],
    provenance: Optional[Mapping[str, str]],
    thread: Optional[Id] = None,
    parent: Optional[Id] = None,
    to: Optional[str] = None,
    state: Optional[str] = None,
    if_state: Optional[str] = None,
    claim: Optional[Id] = None,
    evidence: Optional[Sequence[Mapping[str, object]]] = None,
    supersedes: Optional[Sequence[Id]] = None,
    valid_until: Optional[Union[str, datetime.datetime]] = None,
    idempotency_key: Optional[str] = None,
) -> Dict[str, Any]:
    """Builds the envelope of one post, checking the Python types of every field."""
    check("kind", kind, str, "a str")
    check("body", body, str, "a str")
    env: Dict[str, Any] = {"parley": "1", "kind": kind, "body": body}
    check_opt_id("thread", thread)
    check_opt_id("parent", parent)
    check_opt_str("to", to)
    check_opt_str("state", state)
    check_opt_str("if_state", if_state)
    check_opt_id("claim", claim)
    check_opt_str("idempotency_key", idempotency_key)
    if thread is not None:
        env["thread"] = thread
    if parent is not None:
        env["parent"] = parent
    if to is not None:
        env["to"] = to
    if state is not None:
        env["state"] = state
    if if_state is not None:
        env["if_state"] = if_state
    if claim is not None:
        env["claim"] = claim
    if evidence is not None:
        env["evidence"] = evidence_list(evidence)
    if supersedes is not None:
        env["supersedes"] = id_list("supersedes", supersedes)
    if valid_until is not None:
        env["valid_until"] = time_text("valid_until", valid_until)
    if extension is not None:
        env["from"] = {"extension": extension}
    if provenance is not None:
        env["provenance"] = string_map("provenance", provenance)
    if idempotency_key is not None:
        env["idempotency_key"] = idempotency_key
    return env


def read_args(**fields: Any) -> Dict[str, Any]:
    """The arguments of a read operation, without the ones left at ``None``."""
    return {key: value for key, value in fields.items() if value is not None}


WAITING_READS = ("get_inbox", "get_events", "get_messages", "list_threads")
"""The reads that take ``wait_ms`` with the listen profile (SPEC §14.2), as the
manifest lists them under ``profiles.listen.operations``."""

_MS_BOUND = 2**63 - 1


def wait_ms(value: object) -> Optional[int]:
    """``wait`` in seconds (an int or a float, or ``None``) as the engine's ``wait_ms``.

    The range (0 to the ``wait_max_ms`` limit) is the engine's to check, so a wait out
    of range is the same ``invalid_argument`` refusal in every binding.
    """
    if value is None:
        return None
    check("wait", value, (int, float), "a number of seconds (int or float)")
    assert isinstance(value, (int, float))
    if not math.isfinite(value):
        raise ValueError(f"wait must be a finite number of seconds, not {value!r}")
    ms = value * 1000 if isinstance(value, int) else round(value * 1000)
    return max(-_MS_BOUND, min(_MS_BOUND, ms))


def reads(
    *,
    thread: Optional[object] = None,
    state: Optional[object] = None,
    since: Optional[object] = None,
    extension: Optional[str] = None,
    limit: Optional[object] = None,
    wait: Optional[object] = None,
) -> Dict[str, Any]:
    """The checked arguments of a read: ``wait`` (seconds) becomes ``wait_ms``."""
    check_opt_id("thread", thread)
    check_opt_str("state", state)
    check_opt_str("since", since)
    check_opt_limit(limit)
    return read_args(thread=thread, state=state, since=since, extension=extension, limit=limit, wait_ms=wait_ms(wait))


def search(*, q: object, thread: object, since: object, limit: object) -> Dict[str, Any]:
    """The checked arguments of ``search`` (SPEC §14.4). Whether ``q`` holds 1-16 words
    in at most 200 characters is the engine's to judge (``invalid_argument``)."""
    check("q", q, str, "a str")
    args = reads(thread=thread, since=since, limit=limit)
    return {"q": q, **args}


def has_items(result: Mapping[str, Any]) -> bool:
    """Whether a read's page holds at least one item."""
    return bool(result.get("items"))
