"""Type checks and envelope assembly shared by the sync and async sessions.

Wrong Python types are programming errors and raise ``TypeError`` here, before the
engine is asked; malformed values of the right type (a bad id, an unknown state) are
the engine's to refuse, so every binding gives the same refusal for them.
"""

from __future__ import annotations

import datetime
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
    claim: Optional[Id] = None,
    evidence: Optional[Sequence[Mapping[str, str]]] = None,
    supersedes: Optional[Sequence[Id]] = None,
    valid_until: Optional[Union[str, datetime.datetime]] = None,
) -> Dict[str, Any]:
    """Builds the envelope of one post, checking the Python types of every field."""
    check("kind", kind, str, "a str")
    check("body", body, str, "a str")
    env: Dict[str, Any] = {"parley": "1", "kind": kind, "body": body}
    check_opt_id("thread", thread)
    check_opt_id("parent", parent)
    check_opt_str("to", to)
    check_opt_str("state", state)
    check_opt_id("claim", claim)
    if thread is not None:
        env["thread"] = thread
    if parent is not None:
        env["parent"] = parent
    if to is not None:
        env["to"] = to
    if state is not None:
        env["state"] = state
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
    return env


def read_args(**fields: Any) -> Dict[str, Any]:
    """The arguments of a read operation, without the ones left at ``None``."""
    return {key: value for key, value in fields.items() if value is not None}
