#!/usr/bin/env python3
"""The loop benchmark: do conversations among agents that go in circles stop, and do
the conversations a team really has go through?

Scripted agents play each loop shape that multi-agent systems report (acknowledgement
ping-pong, echo, a paraphrase rotation, a ring of handoffs, objection ping-pong, "+1"
notes, propose against object) until the forum refuses a post, or until the cap of
messages (1,000; 60 with ``--quick``). Then legitimate conversations are played, and
the refusals they met are counted. Every script runs twice, in-process over the
Python API, on two in-memory forums side by side: one with the guards profile (SPEC
§15) on, one with it off.

Targets, with the profile on: every loop stopped within ``progress_max_messages`` + 1
messages (25 with the defaults), counted from the loop's first message (its opening
question, and the answer some loops start from, are not counted) and including the
refused one; no refusal in a legitimate conversation. The exit status is 0 when
every target is met, 1 when one is missed (or the engine has no guards profile), 2
when a script is wrong (it spoke out of turn, or its opening was refused).

The forums run without the rate limit (``writes_per_minute = 0``): the scripts post
far faster than agents do, and the rate limit only slows a loop down.

Usage: python benches/loops.py [--quick] [--json] [--cap N]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Tuple

sys.path.insert(0, str(Path(__file__).resolve().parent))

import parley  # noqa: E402

import loop_scripts  # noqa: E402
from loop_scripts import Script  # noqa: E402

PROFILES_OFF = ["dialectic", "listen"]
PROFILES_ON = PROFILES_OFF + ["guards"]
LIMITS = {"writes_per_minute": 0}
#: The cast: llm agents and one person.
AGENTS = ["alice", "bob", "carol", "dave", "erin", "frank"]
PERSON = "ann"


class ScriptError(Exception):
    """The script, not the forum, is wrong."""


class Stopped(Exception):
    """The forum refused a post of the script."""

    def __init__(self, refusal: parley.Refusal, who: str, kind: str, at: int) -> None:
        super().__init__(refusal.reason)
        self.refusal, self.who, self.kind, self.at = refusal, who, kind, at


class Capped(Exception):
    """The loop reached the cap of messages without a refusal."""


class Play:
    """One script on one forum: posts for the cast, counts the script's messages,
    and turns a refusal into :class:`Stopped`."""

    def __init__(self, forum: parley.Forum, sessions: Mapping[str, parley.Session], realm: str, cap: int) -> None:
        self.forum, self.sessions, self.realm, self.cap = forum, sessions, realm, cap
        self.count = 0
        self.awaiting: Dict[str, Optional[Mapping[str, Any]]] = {}
        self.thread_of: Dict[str, str] = {}

    def identity(self, who: str) -> str:
        return f"human:{who}" if who == PERSON else f"{self.realm}:{who}"

    def _post(self, who: str, kind: str, body: str, kw: Dict[str, Any]) -> Dict[str, Any]:
        if kw.get("to") in self.sessions:
            kw = {**kw, "to": self.identity(kw["to"])}
        result = self.sessions[who].post(kind, body, **kw)  # type: ignore[arg-type]
        thread = result["thread"]
        self.awaiting[thread["id"]] = thread["awaiting"]
        message: Dict[str, Any] = dict(result["message"])
        self.thread_of[message["id"]] = thread["id"]
        if "claim" in result:
            # The claim this post created (an assert's, or a refute's counter-claim).
            message["claim"] = result["claim"]["id"]
        return message

    def setup(self, who: str, kind: str, body: str, **kw: Any) -> Dict[str, Any]:
        """A message that opens a loop; not counted, and never refused."""
        try:
            return self._post(who, kind, body, kw)
        except parley.Refusal as refusal:
            raise ScriptError(f"the opening {kind} by {who} was refused: {refusal.reason}: {refusal}") from refusal

    def say(self, who: str, kind: str, body: str, *, due: bool = False, **kw: Any) -> Dict[str, Any]:
        """One counted message of the script. ``due``: the thread's turn names
        ``who`` (checked before posting; a script bug otherwise)."""
        if self.count >= self.cap:
            raise Capped()
        if due:
            self._check_turn(who, kind, kw)
        self.count += 1
        try:
            return self._post(who, kind, body, kw)
        except parley.Refusal as refusal:
            raise Stopped(refusal, who, kind, self.count) from refusal

    def _check_turn(self, who: str, kind: str, kw: Mapping[str, Any]) -> None:
        thread = kw.get("thread") or self.thread_of.get(kw.get("parent") or "")
        if thread is None:
            raise ScriptError(f"{who}'s {kind} is marked due but names no thread or parent of this script")
        awaiting = self.awaiting.get(thread)
        if awaiting is None or awaiting["identity"] not in ("*", self.identity(who)):
            raise ScriptError(f"{who} posts a {kind} out of turn: the thread awaits {awaiting}")


class Side:
    """One forum (the profile on or off) with its cast."""

    def __init__(self, guards: bool) -> None:
        profiles = PROFILES_ON if guards else PROFILES_OFF
        self.forum = parley.Forum(None, limits=LIMITS, profiles=profiles)
        self.realm = self.forum.call(None, "get_manifest", {})["realm"]
        self.sessions = {name: self.forum.session(self.forum.create_token(name)) for name in AGENTS}
        self.sessions[PERSON] = self.forum.session(self.forum.create_token(PERSON, kind="human"))
        self.limits = self.forum.limits

    def play(self, script: Script, cap: int) -> Tuple[Play, Optional[Stopped], bool]:
        """Runs ``script``; returns the play, the refusal that stopped it (if
        any), and whether it reached the cap."""
        p = Play(self.forum, self.sessions, self.realm, cap)
        try:
            script(p)
        except Stopped as stopped:
            return p, stopped, False
        except Capped:
            return p, None, True
        return p, None, False

    def close(self) -> None:
        self.forum.close()


def guards_available() -> bool:
    """Whether this engine knows the guards profile."""
    try:
        parley.Forum(None, profiles=PROFILES_ON).close()
    except ValueError:
        return False
    return True


def _why(stopped: Optional[Stopped]) -> Optional[Dict[str, Any]]:
    if stopped is None:
        return None
    r = stopped.refusal
    return {"reason": r.reason, "limit": r.limit, "who": stopped.who, "kind": stopped.kind, "at": stopped.at, "message": r.message}


def run(quick: bool, cap: Optional[int] = None) -> Dict[str, Any]:
    """Plays every script on both sides; returns the report (see :func:`main`)."""
    cap = cap if cap is not None else (60 if quick else 1000)
    long_len = 80 if quick else 300
    have_guards = guards_available()
    sides = {"off": Side(False)}
    if have_guards:
        sides["on"] = Side(True)
    try:
        progress_max = sides["on"].limits["progress_max_messages"] if have_guards else None
        loops, legits = [], []
        started = time.perf_counter()
        for name, script in loop_scripts.LOOPS:
            row: Dict[str, Any] = {"script": name}
            for side_name, side in sides.items():
                p, stopped, capped = side.play(script, cap)
                row[side_name] = {"messages": p.count, "stopped": stopped is not None, "capped": capped, "refusal": _why(stopped)}
            loops.append(row)
        # A legitimate script is played to its end; a refusal ends it early.
        for name, script in loop_scripts.legit(long_len):
            row = {"script": name}
            for side_name, side in sides.items():
                p, stopped, _ = side.play(script, 10**9)
                row[side_name] = {"messages": p.count, "refusals": 0 if stopped is None else 1, "refusal": _why(stopped)}
            legits.append(row)
        elapsed = time.perf_counter() - started
    finally:
        for side in sides.values():
            side.close()
    target = None if progress_max is None else progress_max + 1
    missed = []
    if not have_guards:
        missed.append("the engine has no guards profile (SPEC §15): no loop can be stopped by it")
    else:
        for row in loops:
            on = row["on"]
            if not on["stopped"] or on["messages"] > target:
                missed.append(f"loop `{row['script']}`: {_cell_loop(on)} with the profile on (target: stopped within {target})")
    for row in legits:
        for side_name in sides:
            if row[side_name]["refusals"]:
                missed.append(f"legitimate `{row['script']}` refused with the profile {side_name}: {_cell_legit(row[side_name])}")
    return {
        "cap": cap,
        "guards": have_guards,
        "progress_max_messages": progress_max,
        "target_messages": target,
        "loops": loops,
        "legitimate": legits,
        "missed": missed,
        "seconds": round(elapsed, 2),
    }


def _cell_loop(cell: Dict[str, Any]) -> str:
    if cell["capped"]:
        return f"not stopped ({cell['messages']})"
    if not cell["stopped"]:
        return f"ended ({cell['messages']})"
    r = cell["refusal"]
    limit = f" ({r['limit']})" if r["limit"] else ""
    return f"{cell['messages']} {r['reason']}{limit}"


def _cell_legit(cell: Dict[str, Any]) -> str:
    if not cell["refusals"]:
        return f"0 refusals ({cell['messages']} msgs)"
    r = cell["refusal"]
    return f"{r['reason']} at msg {r['at']} ({r['who']}'s {r['kind']})"


def table(report: Mapping[str, Any]) -> str:
    """The report as the side-by-side table a person reads."""
    sides = ["on", "off"] if report["guards"] else ["off"]
    head = {"on": "guards on", "off": "guards off"}
    w0, w = 44, 40
    out = []
    out.append(f"Loop shapes: messages until the loop was stopped, and the reason (cap {report['cap']})")
    out.append("shape".ljust(w0) + "".join(head[s].ljust(w) for s in sides))
    for row in report["loops"]:
        out.append(row["script"].ljust(w0) + "".join(_cell_loop(row[s]).ljust(w) for s in sides))
    out.append("")
    out.append("Legitimate conversations: refusals met")
    out.append("conversation".ljust(w0) + "".join(head[s].ljust(w) for s in sides))
    for row in report["legitimate"]:
        out.append(row["script"].ljust(w0) + "".join(_cell_legit(row[s]).ljust(w) for s in sides))
    out.append("")
    told: Dict[str, str] = {}
    for row in report["loops"] + report["legitimate"]:
        for s in sides:
            r = row[s]["refusal"]
            if r is not None:
                told.setdefault(r["reason"], r["message"])
    if told:
        out.append("What the refused agents were told:")
        out.extend(f"  {reason}: {message}" for reason, message in sorted(told.items()))
        out.append("")
    if report["guards"]:
        out.append(f"targets (profile on): every loop stopped within {report['target_messages']} messages (progress_max_messages + 1); 0 refusals in legitimate conversations")
    else:
        out.append("guards profile: not in this engine; only the profile-off side was played")
    if report["missed"]:
        out.extend(f"MISSED: {m}" for m in report["missed"])
    else:
        out.append("every target met")
    out.append(f"({report['seconds']} s)")
    return "\n".join(line.rstrip() for line in out) + "\n"


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="loops capped at 60 messages, a long thread of 80: a few seconds, for CI")
    parser.add_argument("--json", action="store_true", help="print the report as one JSON object")
    parser.add_argument("--cap", type=int, help="messages after which a loop counts as not stopped (default 1000, 60 with --quick)")
    args = parser.parse_args(argv)
    try:
        report = run(args.quick, args.cap)
    except ScriptError as e:
        print(f"loops.py: a script is wrong: {e}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(report, indent=1))
    else:
        sys.stdout.write(table(report))
    return 1 if report["missed"] else 0


if __name__ == "__main__":
    sys.exit(main())
