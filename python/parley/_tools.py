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
    from ._parley import Forum
    from ._session import Session

FORMATS = ("mcp", "openai", "anthropic")

# Bounds the tools/list paging loop; the handler lists every tool on one page.
_MAX_PAGES = 16


def list_tools(forum: "Forum", token: Optional[str]) -> List[Dict[str, Any]]:
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


def render(tools: List[Dict[str, Any]], format: str) -> List[Dict[str, Any]]:
    """The tools in one model API's format (a fresh copy each time)."""
    if not isinstance(format, str):
        raise TypeError(f"format must be a str, not {type(format).__name__}")
    if format == "mcp":
        return copy.deepcopy(tools)
    if format == "openai":
        return [
            {
                "type": "function",
                "function": {
                    "name": tool["name"],
                    "description": tool.get("description", ""),
                    "parameters": copy.deepcopy(tool["inputSchema"]),
                },
            }
            for tool in tools
        ]
    if format == "anthropic":
        return [
            {
                "name": tool["name"],
                "description": tool.get("description", ""),
                "input_schema": copy.deepcopy(tool["inputSchema"]),
            }
            for tool in tools
        ]
    raise ValueError(f"unknown tool format {format!r}; formats are {', '.join(FORMATS)}")


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
        return {}, {"error": {"message": f"unknown tool {name!r}; the tools are {', '.join(names)}"}}
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
