"""Refused posts cost the server no commit (issue 38, failure 10), end to end: posts
with a bogus token, over REST and MCP, to a real ``parley serve --http``, leave its redb
file byte for byte as it was; one accepted post changes it, so the measure can fail.
"""

from __future__ import annotations

import concurrent.futures
import json
import urllib.error
import urllib.request
from typing import Any, Callable, Dict, Tuple

import parley
from served import SERVED_ONLY, Server

BOGUS = "pt_0000000000000000000000000000000000000000000"


def send(url: str, path: str, token: str, payload: Dict[str, Any]) -> Tuple[int, Dict[str, Any]]:
    request = urllib.request.Request(
        f"{url}{path}",
        data=json.dumps(payload).encode(),
        headers={
            "Authorization": f"Bearer {token}",
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
        },
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as refused:
        with refused:
            return refused.code, json.loads(refused.read())


@SERVED_ONLY
def test_bogus_posts_leave_the_served_file_as_it_was(servers: Callable[..., Server]) -> None:  # noqa: F811
    server = servers()
    bob = server.token("bob")
    server.start()
    session = parley.connect(server.url, bob)
    try:
        session.ask("A first post, so the file is as it stays.")
        before = server.db.read_bytes()

        def rest(i: int) -> Tuple[int, Dict[str, Any]]:
            return send(server.url, "/v1/messages", BOGUS, {"kind": "ask", "body": f"Let me in {i}."})

        def mcp(i: int) -> Tuple[int, Dict[str, Any]]:
            call = {"name": "post", "arguments": {"kind": "ask", "body": f"Let me in {i}."}}
            return send(server.url, "/mcp", BOGUS, {"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": call})

        # 40 at once, so that they share batches, as a stranger's flood would.
        with concurrent.futures.ThreadPoolExecutor(8) as pool:
            answers = list(pool.map(rest, range(20))) + list(pool.map(mcp, range(20)))
        for status, body in answers[:20]:
            assert (status, body["error"]["reason"]) == (401, "token_invalid")
        for _, body in answers[20:]:
            assert "token_invalid" in json.dumps(body), body
        assert server.db.read_bytes() == before, "refused posts wrote to the forum file"

        session.ask("An accepted post.")
        assert server.db.read_bytes() != before
    finally:
        session.forum.close()
