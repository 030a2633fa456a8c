#!/usr/bin/env bash
# Every test of the project: Rust (unit, integration, conformance, properties,
# crash), C (ABI under AddressSanitizer, conformance through the ABI), Python
# (package, conformance, stubs), the web view in headless Chromium, end to end
# (MCP SDK, MCP conformance suite, REST), the packages as users install them
# (cargo cinstall, pip), and a quick benchmark smoke run. Needs only Rust, Python 3
# and a C compiler; it installs the rest itself (a venv under .venv, jansson, Chromium,
# chromedriver and PostgreSQL from Debian, cargo-c from crates.io, npm packages).
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n==> %s (at %d s)\n' "$*" "$SECONDS"; }

# cargo-c, which the packages step needs, takes minutes to build. It builds from
# the start, at the lowest priority, on the cores that the tests leave idle while
# they wait on servers, browsers and disks. It runs in a session of its own, so
# that a failed step stops the whole build; where the kernel groups sessions for
# the scheduler (autogroup), that group is set to the lowest priority too, or the
# build would take a full core's share from the tests.
CARGO_C_LOG="$(mktemp "${TMPDIR:-/tmp}/parley-cargo-c.XXXXXX")"
setsid bash -c 'echo 19 >/proc/self/autogroup 2>/dev/null || true
    exec nice -n 19 bash bindings/c/tests/cargo_c.sh' >"$CARGO_C_LOG" 2>&1 &
CARGO_C_PID=$!
stop_cargo_c() { kill -- -"$CARGO_C_PID" 2>/dev/null || true; rm -f "$CARGO_C_LOG"; }
trap stop_cargo_c EXIT

step "format and lints"
cargo fmt --all -- --check
cargo clippy --workspace --all-targets --locked -- -D warnings

step "a throwaway PostgreSQL server (Debian's package) for the PostgreSQL backend"
# shellcheck source=tests/pg/server.sh
source tests/pg/server.sh
pg_start
trap 'pg_stop; stop_cargo_c' EXIT

step "Rust tests"
cargo test --workspace --locked

step "C ABI tests"
bash bindings/c/tests/run.sh

step "Python package tests"
bash tests/python/run.sh

step "browser tests of the web view (headless Chromium)"
bash tests/browser/run.sh

step "end-to-end tests (MCP SDK, MCP conformance suite)"
bash tests/e2e/run.sh

step "packages: the C library installed by cargo-c, the wheels installed by pip"
if ! wait "$CARGO_C_PID"; then
    cat "$CARGO_C_LOG"
    echo "cargo-c could not be installed" >&2
    exit 1
fi
cat "$CARGO_C_LOG"
bash bindings/c/tests/install.sh
bash tests/packaging/run.sh

step "benchmark smoke run"
cargo run --release --locked -p parley-bench -- --quick

step "demo"
cargo run --locked -p parley-cli -- demo >/dev/null
echo "all test suites passed in $SECONDS s"
