#!/usr/bin/env python3
"""What an MCP client spends on Parley's output schemas.

For each generation of the official MCP Python SDK, mcp 2.x (the test venv ``.venv``,
see ``tests/requirements.txt``) and mcp 1.30 (a venv of its own, made on first use
under ``target/mcp1-venv`` from PyPI), a client process connects to ``parley serve
--stdio`` and makes N ``post`` calls, N ``get_inbox`` calls returning 20 items and N
``get_thread`` calls of a 20-message thread. It does so against the output schemas as
the server serves them (``--schemas``: the server's default, compact, unless told
``exact``) and against the same server with no output schema
(``mcp_output_schemas: none``), the same binary on the same forum, in alternating
rounds of one run. Each figure is the client's CPU time per call
(``time.process_time()`` of the client process: JSON-RPC parsing, the SDK's models,
its output-schema validation; the server is another process), the lower of the
rounds' means, and the ratio of the two; the target is at most 1.5x on both
generations.

The client also times, on the last result of each tool, the output-schema
validation alone, done as its SDK does it (mcp 2.x: a validator compiled once per
schema; mcp 1.x: ``jsonschema.validate``, which checks the schema against the
meta-schema on every call).

Usage: python3 benches/mcp_client_cost.py [--calls N] [--warmup N] [--rounds N]
                                          [--bin PATH] [--sdk 2|1|both]
                                          [--schemas served|compact|exact] [--json]
       python3 benches/mcp_client_cost.py --shapes

``--shapes`` measures instead what each way of writing a key costs python-jsonschema
(the validator of both SDKs): checking the schema against the meta-schema, and
validating a result, each as a ratio to ``{"type": "string"}`` in the same rounds.

The server binary: ``--bin``, else ``$PARLEY_BIN``, else ``target/release/parley``,
else ``target/debug/parley`` (build it with ``cargo build --release -p parley-cli``).
The forum is non-durable, so the server's time is its work rather than a disk's flush.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, List, Optional

ROOT = Path(__file__).resolve().parent.parent
TARGET = 1.5
INBOX_ITEMS = 20
THREAD_MESSAGES = 20
MCP1 = "mcp==1.30.0"
SETTINGS = {"durable": False, "limits": {"writes_per_minute": 0, "thread_max_messages": 1_000_000, "progress_max_messages": 0}}


def find_bin(given: Optional[str]) -> Path:
    for candidate in (given, os.environ.get("PARLEY_BIN"), ROOT / "target/release/parley", ROOT / "target/debug/parley"):
        if candidate and Path(candidate).is_file():
            return Path(candidate)
    sys.exit("no parley binary: build it with `cargo build --release -p parley-cli` or pass --bin")


def venv_python(sdk: str) -> Path:
    """The Python of the venv holding SDK generation ``sdk``, made when missing."""
    if sdk == "2":
        python = ROOT / ".venv/bin/python"
        if not python.exists():
            subprocess.run([sys.executable, "-m", "venv", str(ROOT / ".venv")], check=True)
            subprocess.run([str(python), "-m", "pip", "install", "-q", "-r", str(ROOT / "tests/requirements.txt")], check=True)
        return python
    venv = ROOT / "target/mcp1-venv"
    python = venv / "bin/python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", MCP1], check=True)
    return python


def cli(bin_path: Path, db: Path, *args: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PARLEY_")}
    done = subprocess.run([str(bin_path), "--db", str(db), *args], capture_output=True, text=True, env=env, timeout=60)
    if done.returncode != 0:
        sys.exit(f"parley {' '.join(args)} failed: {done.stderr}")
    return done.stdout.strip()


def measure(sdk: str, bin_path: Path, calls: int, warmup: int, rounds: int, schemas: str) -> List[Dict[str, Any]]:
    """One SDK generation: a fresh forum, a seeding client, then the measuring client,
    which alternates sessions with the output schemas served and with none."""
    python = venv_python(sdk)
    with tempfile.TemporaryDirectory(prefix="parley-mcp-cost-") as tmp:
        work = Path(tmp)
        db = work / "forum.redb"
        alice = cli(bin_path, db, "token", "create", "alice")
        bob = cli(bin_path, db, "token", "create", "bob")
        child = [str(python), str(Path(__file__).resolve()), "--client", "--bin", str(bin_path), "--db", str(db),
                 "--calls", str(calls), "--warmup", str(warmup), "--rounds", str(rounds), "--schemas", schemas]
        env = {k: v for k, v in os.environ.items() if not k.startswith("PARLEY_")}
        env.update({"ALICE": alice, "BOB": bob})
        done = subprocess.run(child, capture_output=True, text=True, env=env, timeout=1800)
        if done.returncode != 0:
            sys.exit(f"the mcp {sdk}.x client failed:\n{done.stdout}\n{done.stderr}")
        report = json.loads(done.stdout.strip().splitlines()[-1])
        rows = []
        for tool, label in CALLS:
            served, bare = report["served"][tool], report["none"][tool]
            ratio = served["client_ms"] / bare["client_ms"]
            rows.append({
                "sdk": f"mcp {report['version']}",
                "call": label,
                "schemas": schemas,
                "client_ms": round(served["client_ms"], 4),
                "client_ms_no_schema": round(bare["client_ms"], 4),
                "ratio": round(ratio, 2),
                "validation_ms": round(served["validation_ms"], 4),
                "schema_bytes": served["schema_bytes"],
                "target": f"<= {TARGET:g}x",
                "pass": ratio <= TARGET,
                "calls": calls,
                "rounds": rounds,
            })
        return rows


CALLS = (("post", "post"), ("get_inbox", f"get_inbox ({INBOX_ITEMS} items)"),
         ("get_thread", f"get_thread ({THREAD_MESSAGES} messages)"))


# ---- the client, run with the venv's Python ------------------------------------------


def stdio_params(args: argparse.Namespace, token: str, settings: Dict[str, Any]) -> Any:
    from mcp.client.stdio import StdioServerParameters

    # stdout is the transport; the request log is not read.
    script = 'exec "$0" --db "$1" --settings "$2" serve --stdio 2>/dev/null'
    return StdioServerParameters(
        command="/bin/sh",
        args=["-c", script, args.bin, args.db, json.dumps(settings)],
        env={"PARLEY_TOKEN": token, "RUST_LOG": "warn", "PATH": os.environ.get("PATH", "")},
    )


async def session(args: argparse.Namespace, token: str, generation: int, body: Any, settings: Dict[str, Any]) -> Any:
    """Runs ``body(call, schemas)`` in a session of the installed SDK, the way its
    documentation opens one: mcp 2.x's ``Client`` (which picks the revision itself),
    mcp 1.x's ``ClientSession`` over ``stdio_client``."""
    params = stdio_params(args, token, settings)
    if generation >= 2:
        from mcp import Client

        async with Client(params) as client:
            listed = await client.list_tools()
            schemas = {t.name: t.output_schema for t in listed.tools}

            async def call2(name: str, arguments: Dict[str, Any]) -> Dict[str, Any]:
                result = await client.call_tool(name, arguments)
                if result.is_error or result.structured_content is None:
                    raise RuntimeError(f"{name} {arguments}: {result.content}")
                return result.structured_content

            return await body(call2, schemas)

    from mcp import ClientSession
    from mcp.client.stdio import stdio_client

    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as s:
            await s.initialize()
            listed = await s.list_tools()
            schemas = {t.name: t.outputSchema for t in listed.tools}

            async def call1(name: str, arguments: Dict[str, Any]) -> Dict[str, Any]:
                result = await s.call_tool(name, arguments)
                if result.isError or result.structuredContent is None:
                    raise RuntimeError(f"{name} {arguments}: {result.content}")
                return result.structuredContent

            return await body(call1, schemas)


def validation_ms(schema: Dict[str, Any], instance: Dict[str, Any], generation: int, n: int) -> float:
    """The SDK's own output-schema check of ``instance``, alone, in ms per call."""
    import jsonschema
    from jsonschema import exceptions
    from jsonschema.validators import validator_for
    from referencing import Registry

    if generation >= 2:
        validator = validator_for(schema)(schema, registry=Registry())

        def check() -> None:
            assert exceptions.best_match(validator.iter_errors(instance)) is None
    else:

        def check() -> None:
            jsonschema.validate(instance, schema, registry=Registry())

    check()
    started = time.process_time()
    for _ in range(n):
        check()
    return (time.process_time() - started) / n * 1000


def settings_for(schemas: str) -> Dict[str, Any]:
    """The server's settings: its default output schemas for ``served``."""
    return SETTINGS if schemas == "served" else {**SETTINGS, "mcp_output_schemas": schemas}


async def client_main(args: argparse.Namespace) -> None:
    from importlib.metadata import version

    sdk_version = version("mcp")
    generation = int(sdk_version.split(".")[0])
    inbox_thread = f"th_{INBOX_ITEMS + 6}"
    read_thread = f"th_{INBOX_ITEMS + 7}"

    async def seed(call: Any, _schemas: Any) -> None:
        # Questions that wait for anyone: the first 20 are the measured inbox page.
        # The threads the measured posts go to and the one read come after them, so
        # the page stays.
        for i in range(INBOX_ITEMS + 5):
            await call("post", {"kind": "ask", "body": f"Question {i}: why does the build cache miss after an upgrade?"})
        await call("post", {"kind": "ask", "body": "Where should notes about the benchmark go?"})
        await call("post", {"kind": "ask", "body": "What did the last release change in the cache?"})

    await session(args, os.environ["ALICE"], generation, seed, SETTINGS)

    async def replies(call: Any, _schemas: Any) -> None:
        for i in range(THREAD_MESSAGES - 1):
            await call("post", {"kind": "note", "thread": read_thread, "body": f"Change {i}: the key of cache entry {i} now includes the toolchain."})

    await session(args, os.environ["BOB"], generation, replies, SETTINGS)
    counter = 0

    async def run(call: Any, schemas: Dict[str, Any]) -> Dict[str, Any]:
        out: Dict[str, Any] = {}

        async def post() -> Dict[str, Any]:
            nonlocal counter
            counter += 1
            return await call("post", {"kind": "note", "thread": inbox_thread, "body": f"Note {counter}: the cache key now includes the toolchain version."})

        async def inbox() -> Dict[str, Any]:
            page = await call("get_inbox", {"limit": INBOX_ITEMS})
            if len(page["items"]) != INBOX_ITEMS:
                raise RuntimeError(f"the inbox page holds {len(page['items'])} items")
            return page

        async def thread() -> Dict[str, Any]:
            view = await call("get_thread", {"thread": read_thread})
            if len(view["messages"][0]["replies"]) != THREAD_MESSAGES - 1:
                raise RuntimeError(f"the thread holds {len(view['messages'][0]['replies'])} replies")
            return view

        for name, fn in (("post", post), ("get_inbox", inbox), ("get_thread", thread)):
            for _ in range(args.warmup):
                await fn()
            started = time.process_time()
            for _ in range(args.calls):
                last = await fn()
            spent = time.process_time() - started
            schema = schemas[name]
            out[name] = {
                "client_ms": spent / args.calls * 1000,
                "validation_ms": validation_ms(schema, last, generation, max(10, args.calls // 4)) if schema else 0.0,
                "schema_bytes": len(json.dumps(schema, separators=(",", ":"))) if schema else 0,
            }
        return out

    # Alternating rounds, so that a drift of the machine's load falls on both sides;
    # each side keeps, per call, the round with the lowest mean.
    report: Dict[str, Any] = {"served": {}, "none": {}}
    for _ in range(args.rounds):
        for side, schemas in (("served", args.schemas), ("none", "none")):
            got = await session(args, os.environ["BOB"], generation, run, settings_for(schemas))
            for tool, figures in got.items():
                best = report[side].get(tool)
                if best is None or figures["client_ms"] < best["client_ms"]:
                    report[side][tool] = figures
    report["version"] = sdk_version
    print(json.dumps(report))


# ---- what each schema construct costs, run with the venv's Python (--shapes) ---------

NULL_FIRST = {"anyOf": [{"type": "null"}, {"type": "string"}]}
SHAPES: Dict[str, Any] = {
    "type string (baseline)": ({"type": "string"}, "x"),
    "enum of strings, no type": ({"enum": ["x", "y", "z"]}, "x"),
    "type and enum": ({"type": "string", "enum": ["x", "y", "z"]}, "x"),
    "$ref to type string": ("ref", {"type": "string"}, "x"),
    "type list [string, null], null": ({"type": ["string", "null"]}, None),
    "anyOf [null, string], null": (NULL_FIRST, None),
    "anyOf [null, string], string": (NULL_FIRST, "x"),
    "$ref to anyOf [null, string], null": ("ref", NULL_FIRST, None),
}


def shapes_main(reps: int) -> None:
    """Each construct as the 100 properties of one schema: the cost of checking the
    schema against the meta-schema (what mcp 1.x does on every call) per subschema,
    and of validating an instance with a compiled validator (mcp 2.x) per key, each
    as a ratio to ``{"type": "string"}`` measured in the same rounds."""
    from jsonschema import exceptions
    from jsonschema.validators import Draft202012Validator
    from referencing import Registry

    n = 100
    cases = {}
    for name, spec in SHAPES.items():
        if spec[0] == "ref":
            _, target, value = spec
            schema = {"type": "object", "properties": {f"k{i}": {"$ref": "#/$defs/t"} for i in range(n)}, "$defs": {"t": target}}
        else:
            node, value = spec
            schema = {"type": "object", "properties": {f"k{i}": node for i in range(n)}}
        instance = {f"k{i}": value for i in range(n)}
        validator = Draft202012Validator(schema, registry=Registry())
        assert exceptions.best_match(validator.iter_errors(instance)) is None, name
        cases[name] = (schema, instance, validator)
    check: Dict[str, List[float]] = {k: [] for k in cases}
    valid: Dict[str, List[float]] = {k: [] for k in cases}
    for _ in range(reps):
        for name, (schema, instance, validator) in cases.items():
            started = time.process_time()
            Draft202012Validator.check_schema(schema)
            check[name].append((time.process_time() - started) / n * 1e6)
            started = time.process_time()
            for _ in range(20):
                exceptions.best_match(validator.iter_errors(instance))
            valid[name].append((time.process_time() - started) / 20 / n * 1e6)
    median = lambda xs: sorted(xs)[len(xs) // 2]  # noqa: E731
    base_c, base_v = median(check["type string (baseline)"]), median(valid["type string (baseline)"])
    print(f"{'construct':<38} {'schema check us':>16} {'ratio':>6} {'validate us/key':>16} {'ratio':>6}")
    for name in cases:
        c, v = median(check[name]), median(valid[name])
        print(f"{name:<38} {c:>16.1f} {c / base_c:>5.2f}x {v:>16.2f} {v / base_v:>5.2f}x")

    # The root: success keys or `error`, written four ways, validating a success.
    keys = [f"k{i}" for i in range(5)]
    base = {"type": "object", "properties": {**{k: {"type": "string"} for k in keys}, "error": {"type": "object"}}}
    roots = {
        "anyOf [success, error] (baseline)": {**base, "anyOf": [{"required": keys}, {"required": ["error"]}]},
        "anyOf [error, success]": {**base, "anyOf": [{"required": ["error"]}, {"required": keys}]},
        "oneOf [success, error]": {**base, "oneOf": [{"required": keys}, {"required": ["error"]}]},
        "if error then - else success": {**base, "if": {"required": ["error"]}, "else": {"required": keys}},
    }
    success = {k: "x" for k in keys}
    compiled = {name: Draft202012Validator(schema, registry=Registry()) for name, schema in roots.items()}
    times: Dict[str, List[float]] = {k: [] for k in roots}
    for _ in range(reps):
        for name, validator in compiled.items():
            started = time.process_time()
            for _ in range(2000):
                exceptions.best_match(validator.iter_errors(success))
            times[name].append((time.process_time() - started) / 2000 * 1e6)
    base_r = median(times["anyOf [success, error] (baseline)"])
    print(f"\n{'root form, validating a success':<38} {'us':>16} {'ratio':>6}")
    for name in roots:
        r = median(times[name])
        print(f"{name:<38} {r:>16.1f} {r / base_r:>5.2f}x")


def show(rows: List[Dict[str, Any]]) -> None:
    print(f"{'SDK':<11} {'call':<26} {'schemas':<8} {'client ms':>10} {'no schema':>10} {'ratio':>7} {'of which schema':>16} {'schema B':>9}  target")
    for r in rows:
        verdict = "pass" if r["pass"] else "miss"
        print(
            f"{r['sdk']:<11} {r['call']:<26} {r['schemas']:<8} {r['client_ms']:>10.3f} {r['client_ms_no_schema']:>10.3f} {r['ratio']:>6.2f}x "
            f"{r['validation_ms']:>13.3f} ms {r['schema_bytes']:>9}  {r['target']} {verdict}"
        )


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--calls", type=int, default=200, help="measured calls per tool (default 200)")
    p.add_argument("--warmup", type=int, default=20, help="calls before the clock starts (default 20)")
    p.add_argument("--rounds", type=int, default=2, help="alternating rounds with and without schemas (default 2)")
    p.add_argument("--schemas", choices=["served", "compact", "exact"], default="served",
                   help="the output schemas set against none: the server's default (served), compact or exact")
    p.add_argument("--bin", help="the parley binary")
    p.add_argument("--sdk", choices=["2", "1", "both"], default="both", help="which SDK generation (default both)")
    p.add_argument("--json", action="store_true", help="one JSON array of rows")
    p.add_argument("--shapes", action="store_true", help="instead: what each schema construct costs python-jsonschema")
    p.add_argument("--client", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--db", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.calls < 1 or args.warmup < 0 or args.rounds < 1:
        p.error("--calls and --rounds must be at least 1 and --warmup at least 0")
    if args.client:
        asyncio.run(client_main(args))
        return
    if args.shapes:
        try:
            import jsonschema  # noqa: F401
        except ImportError:
            # The system's Python may lack it; the test venv has it (the SDK needs it).
            python = str(venv_python("2"))
            os.execv(python, [python, str(Path(__file__).resolve()), *sys.argv[1:]])
        shapes_main(reps=7)
        return
    bin_path = find_bin(args.bin)
    rows: List[Dict[str, Any]] = []
    for sdk in (["2", "1"] if args.sdk == "both" else [args.sdk]):
        rows.extend(measure(sdk, bin_path, args.calls, args.warmup, args.rounds, args.schemas))
    if args.json:
        print(json.dumps(rows))
    else:
        print(f"server: {bin_path}")
        show(rows)


if __name__ == "__main__":
    main()
