"""Mistakes ``mypy --strict`` must catch in code using parley (never run, only checked).

Each line marked ``# error: <code>`` holds one mistake; tests/python/test_typing_scripts.py
runs mypy on this file and expects exactly those errors, on exactly those lines.
"""

from __future__ import annotations

import parley
import parley.aio


def mistakes(session: parley.Session) -> None:
    result = session.post("akk", "Which port?")  # error: arg-type
    print(result["mesage"])  # error: typeddict-item
    print(result["thread"]["stat"])  # error: typeddict-item
    if result["thread"]["state"] == "clsoed":  # error: comparison-overlap
        return
    session.mark("Done.", state="finished", thread=result["thread"]["id"])  # error: arg-type
    session.mark("Done.", state="closed", if_state="clsoed", thread=result["thread"]["id"])  # error: arg-type
    session.threads(state="opne")  # error: arg-type
    session.claim("Port 7878 is free.", evidence=[{"kind": "logfile", "ref": "x"}])  # error: typeddict-item
    print(session.whoami()["rigths"])  # error: typeddict-item
    for event in session.events()["items"]:
        # Only a claim event has claim statuses; without testing event["type"], it fails.
        print(event["to_status"])  # error: typeddict-item


async def async_mistakes(session: parley.aio.AsyncSession) -> None:
    result = await session.post("anwser", "Port 7878.", thread=1)  # error: arg-type
    print(result["thread"]["awaitng"])  # error: typeddict-item
    page = await session.inbox()
    print(page["items"][0]["mesage"])  # error: typeddict-item
    async for item in session.feed("messages"):
        print(item["replies"])  # error: typeddict-item
