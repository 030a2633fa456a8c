"""Tool schemas for model APIs, and running a model's tool call.

The schemas are not written here: they come from the MCP handler's ``tools/list``
(the same list an MCP client sees), so the three formats cannot drift from the
engine. A tool call runs through ``Forum.call``; a refusal becomes an error object
the model can read and act on, never an exception.
"""

from __future__ import annotations

import copy
import json
from typing import TYPE_CHECKING, Any, Dict, List, Mapping, Optional, Tuple, Union

from ._errors import ParleyError, Refusal

if TYPE_CHECKING:
    from ._session import ForumLike, Session

FORMATS = ("mcp", "openai", "openai-responses", "anthropic")

# Bounds the tools/list paging loop; the handler lists every tool on one page.
_MAX_PAGES = 16


def list_tools(forum: "ForumLike", token: Optional[str]) -> List[Dict[str, Any]]:
    """The MCP tool definitions, in the handler's fixed order."""
    tools: List[Dict[str, Any]] = []
    cursor: Optional[str] = None
    for page in range(_MAX_PAGES):
        params: Dict[str, Any] = {} if cursor is None else {"cursor": cursor}
        request = {"jsonrpc": "2.0", "id": page + 1, "method": "tools/list", "params": params}
        response = forum.mcp(token, request)
        if response is None or "result" not in response:
            raise ParleyError(f"the MCP handler did not list its tools: {response!r}")
        result = response["result"]
        tools.extend(result.get("tools", []))
        cursor = result.get("nextCursor")
        if not cursor:
            return tools
    raise ParleyError("the MCP handler's tool list did not end")


def render(tools: List[Dict[str, Any]], format: str, strict: bool = False) -> List[Dict[str, Any]]:
    """The tools in one model API's format (a fresh copy each time).

    ``strict`` (``openai`` and ``openai-responses`` only) rewrites each input schema
    by OpenAI's strict rules: see :func:`strict_schema`.
    """
    if not isinstance(format, str):
        raise TypeError(f"format must be a str, not {type(format).__name__}")
    if not isinstance(strict, bool):
        raise TypeError(f"strict must be a bool, not {type(strict).__name__}")
    if format not in FORMATS:
        raise ValueError(f"unknown tool format {format!r}; formats are {', '.join(FORMATS)}")
    if strict and format not in ("openai", "openai-responses"):
        raise ValueError(f"strict applies to the openai formats only, not {format!r}")

    def parameters(tool: Dict[str, Any]) -> Dict[str, Any]:
        schema = copy.deepcopy(tool["inputSchema"])
        return strict_schema(schema) if strict else schema

    if format == "mcp":
        return copy.deepcopy(tools)
    if format == "openai":
        rendered: List[Dict[str, Any]] = []
        for tool in tools:
            function: Dict[str, Any] = {
                "name": tool["name"],
                "description": tool.get("description", ""),
                "parameters": parameters(tool),
            }
            if strict:
                function["strict"] = True
            rendered.append({"type": "function", "function": function})
        return rendered
    if format == "openai-responses":
        # The Responses API's FunctionToolParam: flat, and `strict` is required.
        return [
            {
                "type": "function",
                "name": tool["name"],
                "description": tool.get("description", ""),
                "parameters": parameters(tool),
                "strict": strict,
            }
            for tool in tools
        ]
    return [
        {
            "name": tool["name"],
            "description": tool.get("description", ""),
            "input_schema": copy.deepcopy(tool["inputSchema"]),
        }
        for tool in tools
    ]


# The keywords OpenAI's strict mode accepts; others are dropped (their constraint
# moves into the description, and the engine still enforces it).
_STRICT_KEYWORDS = frozenset(
    {
        "type", "properties", "required", "additionalProperties", "items", "enum",
        "const", "anyOf", "description", "title", "pattern", "format", "minimum",
        "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf", "minItems",
        "maxItems", "$defs", "$ref",
    }
)
# What a dropped keyword means, for the description.
_DROPPED = {"minLength": "at least {} characters", "maxLength": "at most {} characters"}
_STRICT_FORMATS = frozenset(
    {"date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"}
)


def strict_schema(schema: Dict[str, Any]) -> Dict[str, Any]:
    """``schema`` rewritten by OpenAI's strict rules, in place, and returned.

    Every property of every object is required and ``additionalProperties`` is
    false; a property that was optional becomes nullable instead (the engine reads
    ``null`` as absent). Keywords strict mode does not support are dropped, their
    meaning appended to the description.
    """
    notes = []
    for keyword in list(schema):
        if keyword not in _STRICT_KEYWORDS:
            value = schema.pop(keyword)
            if keyword in _DROPPED:
                notes.append(_DROPPED[keyword].format(value))
    if "format" in schema and schema["format"] not in _STRICT_FORMATS:
        del schema["format"]
    if notes:
        text = schema.get("description", "")
        schema["description"] = (text + " " if text else "") + "(" + "; ".join(notes) + ")"
    properties = schema.get("properties")
    if isinstance(properties, dict):
        required = set(schema.get("required", []))
        for name, sub in properties.items():
            strict_schema(sub)
            if name not in required:
                _nullable(sub)
        schema["required"] = list(properties)
        schema["additionalProperties"] = False
    elif schema.get("type") == "object":
        schema["properties"] = {}
        schema["required"] = []
        schema["additionalProperties"] = False
    if isinstance(schema.get("items"), dict):
        strict_schema(schema["items"])
    for key in ("anyOf",):
        for sub in schema.get(key, []):
            strict_schema(sub)
    for sub in schema.get("$defs", {}).values():
        strict_schema(sub)
    return schema


def _nullable(schema: Dict[str, Any]) -> None:
    """Lets ``schema`` also take ``null``."""
    kind = schema.get("type")
    if isinstance(kind, str):
        schema["type"] = [kind, "null"]
    elif isinstance(kind, list) and "null" not in kind:
        kind.append("null")
    elif kind is None:
        schema["anyOf"] = [{k: schema.pop(k) for k in list(schema) if k != "description"}, {"type": "null"}]
    if isinstance(schema.get("enum"), list) and None not in schema["enum"]:
        schema["enum"].append(None)


def _error(reason: str, status: int, message: str) -> Dict[str, Any]:
    return {"error": {"reason": reason, "status": status, "message": message}}


def dispatch(session: "Session", name: str, arguments: Union[Mapping[str, Any], str, None]) -> Dict[str, Any]:
    """Runs one tool call for ``session``; see :meth:`parley.Session.dispatch`."""
    args, error = prepare(session, name, arguments)
    if error is not None:
        return error
    try:
        # The session's call: a session with `retries` retries it, and keys a post.
        return session.call(name, args)
    except Refusal as refusal:
        return refused(refusal)


def refused(refusal: Refusal) -> Dict[str, Any]:
    """A refusal as the result a model reads."""
    return {"error": dict(refusal.data)}


def prepare(
    session: "Session", name: str, arguments: Union[Mapping[str, Any], str, None]
) -> Tuple[Dict[str, Any], Optional[Dict[str, Any]]]:
    """The arguments of one tool call as ``Forum.call`` takes them, or the error a
    model reads instead (then the arguments are empty)."""
    if not isinstance(name, str):
        raise TypeError(f"name must be a str, not {type(name).__name__}")
    bad_args = "invalid_body" if name == "post" else "invalid_argument"
    names = session._tool_names()
    if name not in names:
        # Not a protocol refusal (no engine call was made), but shaped like one, so
        # a model's tool loop reads every error the same way.
        return {}, _error("unknown_tool", 404, f"unknown tool {name!r}; the tools are {', '.join(names)}")
    args: Any
    if arguments is None:
        args = {}
    elif isinstance(arguments, str):
        # Models send their arguments as JSON text; a malformed text is the model's
        # mistake to correct, so it is reported back, not raised.
        try:
            args = json.loads(arguments) if arguments.strip() else {}
        except ValueError as exc:
            return {}, _error(bad_args, 400, f"the arguments are not valid JSON: {exc}")
    elif isinstance(arguments, Mapping):
        args = dict(arguments)
    else:
        raise TypeError(f"arguments must be a dict, a JSON str or None, not {type(arguments).__name__}")
    if not isinstance(args, dict):
        return {}, _error(bad_args, 400, "the arguments must be a JSON object")
    if name == "post":
        _fill_author(session, args)
    elif name == "get_inbox" and session.extension is not None:
        args.setdefault("extension", session.extension)
    return args, None


def _fill_author(session: "Session", args: Dict[str, Any]) -> None:
    """Sets the session's extension, and its provenance unless the post gives one.

    A session bound to an extension speaks as that sub-agent whatever the model
    writes in ``from``; a ``from`` that is not an object is left for the engine to refuse.
    """
    if session.extension is not None:
        sender = args.get("from")
        if sender is None:
            args["from"] = {"extension": session.extension}
        elif isinstance(sender, dict):
            args["from"] = {**sender, "extension": session.extension}
    provenance = session._default_provenance()
    if provenance is not None and "provenance" not in args:
        args["provenance"] = dict(provenance)
