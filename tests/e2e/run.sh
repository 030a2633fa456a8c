#!/usr/bin/env bash
# End-to-end tests of the `parley` binary, from any working directory:
#   1. builds it (cargo build -p parley-cli);
#   2. runs tests/e2e/test_mcp_sdk.py: the official MCP Python SDK as a client over
#      stdio and Streamable HTTP, with the repository's .venv (created from
#      tests/requirements.txt when absent);
#   3. lists the tools of `parley serve --stdio` with the MCP Inspector's CLI in
#      `--strict` mode (pinned in tests/e2e/package.json), which reports every
#      portability problem of their input and output schemas; any finding, warning
#      or error, fails the run;
#   4. runs the official MCP conformance suite (pinned there too) against
#      `parley serve --http`, once per spec revision the server speaks, with
#      conformance-expected-failures.txt as the baseline of known failures; with
#      PARLEY_TEST_PG set, again against each of two servers on one PostgreSQL forum.
# Exits non-zero when any of them fails.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
target_dir="${CARGO_TARGET_DIR:-$repo/target}"
bin="$target_dir/debug/parley"
revisions=(2025-11-25 2026-07-28)

echo "== build"
(cd "$repo" && cargo build -p parley-cli)

echo "== MCP Python SDK"
if [ ! -x "$repo/.venv/bin/python" ]; then
  python3 -m venv "$repo/.venv"
  "$repo/.venv/bin/pip" install -q -r "$repo/tests/requirements.txt"
fi
PARLEY_BIN="$bin" "$repo/.venv/bin/python" -m pytest -q -W error -p no:cacheprovider "$here/test_mcp_sdk.py"

cd "$here"
if [ ! -x node_modules/.bin/conformance ] || [ ! -x node_modules/.bin/mcp-inspector ] \
  || [ ! -x node_modules/.bin/node ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  npm ci --no-audit --no-fund
fi
# The suite and the Inspector need a newer Node.js than the system's; the pinned
# `node` package brings it.
export PATH="$here/node_modules/.bin:$PATH"

work="$(mktemp -d)"
cleanup() {
  local pid
  for pid in $(cat "$work/pids" 2>/dev/null); do
    if kill -0 "$pid" 2>/dev/null; then
      kill -TERM "$pid" 2>/dev/null || true
      wait "$pid" 2>/dev/null || true
    fi
  done
  rm -rf "$work"
}
trap cleanup EXIT

echo "== MCP Inspector, tools/list --strict"
# `--strict` prints each finding on stderr as "Warning: tool ..." or "Error: tool ...",
# followed by its path, issue and suggestion, and exits non-zero only for errors; a
# warning fails this run as well.
if ! env -u PARLEY_TOKEN -u PARLEY_SETTINGS mcp-inspector --cli --strict --method tools/list \
  "$bin" --db "$work/inspector.redb" serve --stdio >"$work/inspector-tools.json" 2>"$work/inspector.log"; then
  cat "$work/inspector.log" >&2
  echo "the MCP Inspector failed to list the tools" >&2
  exit 1
fi
if grep -qE '^(Warning|Error): tool ' "$work/inspector.log"; then
  grep -E -A3 '^(Warning|Error): tool ' "$work/inspector.log" >&2
  grep -E 'errors?, [0-9]+ warnings? across' "$work/inspector.log" >&2 || true
  echo "the MCP Inspector (--strict) found tool schema portability problems" >&2
  exit 1
fi
# No finding also means no tools: the listing must hold every tool with both schemas.
tools_listed="$(grep -c '"outputSchema"' "$work/inspector-tools.json" || true)"
if [ "$tools_listed" -ne 20 ]; then
  echo "the MCP Inspector listed $tools_listed tools with an outputSchema, expected 20" >&2
  exit 1
fi
echo "20 tools, no findings"

echo "== MCP conformance suite"
# Starts `parley --db DB serve --http` and prints its MCP URL; its pid is appended
# to $work/pids.
start_server() {
  local db="$1" log="$2" url=""
  # stdout to /dev/null: a server holding the pipe of $(start_server …) open would
  # keep the substitution waiting for it to exit.
  env -u PARLEY_TOKEN -u PARLEY_SETTINGS "$bin" --db "$db" serve --http 127.0.0.1:0 >/dev/null 2>"$log" &
  echo $! >>"$work/pids"
  for _ in $(seq 1 300); do
    url="$(sed -n 's|.*listening on \(http://[^ ]*\).*|\1|p' "$log" | head -n 1)"
    [ -n "$url" ] && break
    kill -0 "$!" 2>/dev/null || { cat "$log" >&2; return 1; }
    sleep 0.1
  done
  [ -n "$url" ] || { echo "the server did not start" >&2; cat "$log" >&2; return 1; }
  echo "$url/mcp"
}

status=0
# Runs every spec revision's requirements against the server at $1.
suite() {
  local url="$1" rev baseline
  for rev in "${revisions[@]}"; do
    baseline="$work/expected-failures-$rev.yml"
    {
      echo "server:"
      awk -v rev="$rev" '!/^#/ && NF >= 2 { n = split($2, r, ","); for (i = 1; i <= n; i++) if (r[i] == rev) print "  - " $1 }' \
        "$here/conformance-expected-failures.txt"
    } >"$baseline"
    echo "-- requirements $rev against $url"
    # The suite's own total counts the expected failures; reword it so no reader takes
    # it for this run's verdict, which is the baseline check's (and the exit status).
    if ! conformance server --url "$url" --requirements "$rev" --expected-failures "$baseline" -o "$work/results-$rev" \
      | sed -u 's/^Total: /suite total, expected failures included: /'; then
      echo "conformance ($rev): unexpected result (see the summary above)" >&2
      status=1
    fi
  done
}

suite "$(start_server "$work/forum.redb" "$work/server.log")"

if [ -n "${PARLEY_TEST_PG:-}" ]; then
  # The same suite against two servers sharing one forum in PostgreSQL, each in turn.
  pg_forum="$PARLEY_TEST_PG&forum=e2e_$$_$(date +%s)"
  a="$(start_server "$pg_forum" "$work/server-a.log")"
  b="$(start_server "$pg_forum" "$work/server-b.log")"
  echo "-- two servers on one PostgreSQL forum: $a and $b"
  suite "$a"
  suite "$b"
elif [ -n "${PARLEY_TEST_PG_REQUIRED:-}" ]; then
  echo "PARLEY_TEST_PG_REQUIRED is set but PARLEY_TEST_PG is not" >&2
  exit 1
fi
exit "$status"
