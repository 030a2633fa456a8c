#!/usr/bin/env python3
"""Figure 10 of ``parley-bench``: ``parley.Forum.call("post")`` against the Rust
generic call with the same settings and the same workload.

Each repetition posts the same number of envelopes on a fresh non-durable forum,
once from Python and once from Rust (``parley-bench --only 10-rust --reps 1``, which
reports the time of its posting loop only, not its start-up); the two alternate, so
drift of the machine hits both. The figure is the ratio of the medians.

Usage: python benches/python_call.py [--quick] [--json] [--reps N]
                                     [--bench-bin PATH] [--dir PATH]

The native module matters: ``maturin develop`` builds a debug one by default. With
``--native auto`` (the default), when ``target/release/lib_parley.so`` exists (``cargo
build --release -p parley-python``), the script imports a private copy of
``python/parley`` with that library as its native module; ``--native installed``
uses whatever ``import parley`` finds; ``--native PATH`` names a library.

When ``parley`` is not importable, or the ``parley-bench`` binary is missing, the
figure is reported as skipped (exit status 0).
"""

from __future__ import annotations

import argparse
import json
import importlib
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, List, Optional

ROOT = Path(__file__).resolve().parent.parent
TARGET = 1.5
SETTINGS_LIMITS = {"writes_per_minute": 0, "thread_max_messages": 1_000_000, "progress_max_messages": 0}
ROOTS = 64
WARMUP = 50
MASK = (1 << 64) - 1

# The word list and generator of benches/src/workload.rs, so that both sides post
# the same bodies.
WORDS = (
    "the build cache port server test fails after upgrade because config path is resolved "
    "relative to working directory not crate root we should pin version and rerun with "
    "logs enabled token expires while request in flight so retry once then report thread "
    "state answered evidence commit hash reproducer"
).split()


def body(seq: int) -> str:
    x = ((seq * 0x9E3779B97F4A7C15) & MASK) | 1

    def nxt() -> int:
        nonlocal x
        x ^= (x << 13) & MASK
        x ^= x >> 7
        x ^= (x << 17) & MASK
        return x

    length = 300 + nxt() % 200
    out = f"[{seq}] "
    while len(out) < length:
        out += WORDS[nxt() % len(WORDS)]
        out += "." if nxt() % 11 == 0 else " "
    return out[:length].rstrip()


def row(value: Optional[float], baseline: Optional[float], **extra: Any) -> Dict[str, Any]:
    ratio = value / baseline if value is not None and baseline else None
    out: Dict[str, Any] = {
        "id": 10,
        "figure": 'Python Forum.call("post"), non-durable',
        "value": value,
        "baseline": baseline,
        "baseline_of": 'Rust forum.call("post"), same settings',
        "unit": "us/call",
        "ratio": ratio,
        "target": f"<= {TARGET}x",
        "pass": None if ratio is None else ratio <= TARGET,
    }
    out.update(extra)
    return out


def show(rows: List[Dict[str, Any]], as_json: bool) -> None:
    if as_json:
        print(json.dumps(rows))
        return
    for r in rows:
        if "skipped" in r:
            print(f"{r['id']:<7} {r['figure']:<46} SKIP: {r['skipped']}")
            continue
        verdict = "PASS" if r["pass"] else "FAIL"
        print(
            f"{r['id']:<7} {r['figure']:<46} {r['value']:>11.1f} {r['baseline']:>11.1f} "
            f"{r['unit']:<8} {r['ratio']:>7.2f}x {r['target']:>10} {verdict}"
        )
        print(f"{r['id']:<7} baseline: {r['baseline_of']}")


def python_rep(parley: Any, path: Path, posts: int) -> float:
    """Microseconds per ``call("post")`` on a fresh forum, set up as Rust sets up its own."""
    with parley.Forum(str(path), durable=False, limits=SETTINGS_LIMITS) as forum:
        host = forum.create_token("host")
        writer = forum.create_token("w0")
        seq = 1
        roots = []
        for _ in range(ROOTS):
            asked = forum.call(host, "post", {"kind": "ask", "body": body(seq)})
            seq += 1
            roots.append(asked["thread"]["id"])

        def batch(n: int) -> List[Dict[str, Any]]:
            nonlocal seq
            out = []
            for i in range(n):
                if i % 16 == 15:
                    out.append({"kind": "ask", "body": body(seq)})
                else:
                    out.append({"kind": "note", "thread": roots[i % ROOTS], "body": body(seq)})
                seq += 1
            return out

        for env in batch(WARMUP):
            forum.call(writer, "post", env)
        envelopes = batch(posts)
        call = forum.call
        start = time.perf_counter()
        for env in envelopes:
            call(writer, "post", env)
        elapsed = time.perf_counter() - start
    return elapsed * 1e6 / posts


def rust_rep(bench_bin: Path, directory: Path, quick: bool) -> float:
    cmd = [str(bench_bin), "--only", "10-rust", "--json", "--reps", "1", "--dir", str(directory)]
    if quick:
        cmd.append("--quick")
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed: {done.stderr.strip()}")
    rows = json.loads(done.stdout)
    rust = next(r for r in rows if r["id"] == "10-rust")
    return float(rust["value"])


def load_parley(native: str, scratch: Path) -> Any:
    """Imports ``parley``, with the chosen native library (see the module docs)."""
    lib: Optional[Path] = None
    if native == "auto":
        release = ROOT / "target" / "release" / "lib_parley.so"
        lib = release if release.is_file() else None
    elif native != "installed":
        lib = Path(native)
        if not lib.is_file():
            raise ImportError(f"no native library at {lib}")
    if lib is not None:
        pkg = scratch / "pkg" / "parley"
        shutil.copytree(
            ROOT / "python" / "parley",
            pkg,
            ignore=shutil.ignore_patterns("*.so", "__pycache__"),
        )
        shutil.copy(lib, pkg / "_parley.abi3.so")
        sys.path.insert(0, str(scratch / "pkg"))
    return importlib.import_module("parley")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="small sizes, for a smoke run")
    ap.add_argument("--json", action="store_true", help="print a JSON array instead of a table")
    ap.add_argument("--reps", type=int, default=None, help="repetitions (default 5, 3 with --quick)")
    ap.add_argument("--bench-bin", type=Path, default=ROOT / "target" / "release" / "parley-bench")
    ap.add_argument("--dir", type=Path, default=None, help="where the forum files go")
    ap.add_argument(
        "--native",
        default="auto",
        help="native library: auto (release build if present), installed, or a path",
    )
    args = ap.parse_args()
    reps = max(1, args.reps or (3 if args.quick else 5))
    # Must match `call_posts` of parley-bench's sizes.
    posts = 300 if args.quick else 2000

    if not args.bench_bin.is_file():
        reason = f"{args.bench_bin} is missing: run `cargo build --release -p parley-bench`"
        show([row(None, None, skipped=reason)], args.json)
        return 0

    with tempfile.TemporaryDirectory(prefix="parley-bench-py-", dir=args.dir) as tmp:
        base = Path(tmp)
        try:
            parley = load_parley(args.native, base)
        except ImportError as e:
            reason = f"the parley package is not importable ({e})"
            show([row(None, None, skipped=reason)], args.json)
            return 0
        py_series: List[float] = []
        rust_series: List[float] = []
        for rep in range(reps):
            steps = ["rust", "python"] if rep % 2 == 0 else ["python", "rust"]
            for step in steps:
                if step == "python":
                    py_series.append(python_rep(parley, base / f"py-{rep}.redb", posts))
                else:
                    rust_dir = base / f"rust-{rep}"
                    os.makedirs(rust_dir, exist_ok=True)
                    rust_series.append(rust_rep(args.bench_bin, rust_dir, args.quick))
        detail = {
            "posts_per_rep": posts,
            "durable": False,
            "series": [py_series, rust_series],
            "native_module": getattr(parley._parley, "__file__", None),
        }
        show(
            [row(statistics.median(py_series), statistics.median(rust_series), detail=detail)],
            args.json,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
