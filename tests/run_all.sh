#!/usr/bin/env bash
# Every test of the project: Rust (unit, integration, conformance, properties,
# crash), C (ABI under AddressSanitizer, conformance through the ABI), Python
# (package, conformance, stubs), the web view in headless Chromium, end to end
# (MCP SDK, MCP conformance suite, REST), eight agent frameworks driving the
# server offline (examples/frameworks), the packages
# as users install them (cargo cinstall, pip), and a quick benchmark smoke run. Needs only Rust, Python 3
# and a C compiler; it installs the rest itself (a venv under .venv, jansson, Chromium,
# chromedriver and PostgreSQL from Debian, cargo-c from crates.io, npm packages).
set -euo pipefail
cd "$(dirname "$0")/.."

# Every test binary links the whole engine statically; with full debug info and
# incremental caches the target directory passed 20 GB and a CI runner's disk
# filled mid-link. Line tables keep backtraces' file:line at a fraction of that.
export CARGO_PROFILE_DEV_DEBUG=line-tables-only
export CARGO_INCREMENTAL=0

step() { printf '\n==> %s (at %d s)\n' "$*" "$SECONDS"; }

step "format and lints"
cargo fmt --all -- --check
# Every feature (the C library with PostgreSQL, the fault injection of the test
# builds), then the engine and the C library as they build by default.
cargo clippy --workspace --all-targets --all-features --locked -- -D warnings
cargo clippy -p parley-forum -p parley-c --all-targets --locked -- -D warnings

step "the engine links no async runtime, TLS stack or PostgreSQL client"
if cargo tree -p parley-forum -e normal --locked --prefix none | grep -E -i '^(tokio|rustls|aws-lc|postgres)'; then
    echo "parley-forum pulls in the crates above; they belong in parley-postgres" >&2
    exit 1
fi

step "a throwaway PostgreSQL server (Debian's package) for the PostgreSQL backend"
# shellcheck source=tests/pg/server.sh
source tests/pg/server.sh
pg_start
trap pg_stop EXIT

step "Rust tests"
# parley-postgres's own tests (postgres/tests/) among them; the engine's tests
# on both backends open PostgreSQL through it (a dev-dependency). The engine's
# refusal of postgres:// URLs is tests/no_postgres.rs; the C library's without
# its postgres feature runs in bindings/c/tests/run.sh.
cargo test --workspace --all-features --locked

step "C ABI tests"
bash bindings/c/tests/run.sh

step "Python package tests"
bash tests/python/run.sh

step "loop benchmark, quick (SPEC §15: every loop stopped, no conversation refused)"
# The package tests above built parley into .venv; this reuses it.
.venv/bin/python benches/loops.py --quick

step "browser tests of the web view (headless Chromium)"
bash tests/browser/run.sh

step "end-to-end tests (MCP SDK, MCP conformance suite)"
bash tests/e2e/run.sh

step "agent frameworks, offline: each one's agent loop and MCP client against parley serve"
bash examples/frameworks/run.sh

step "packages: the C library installed by cargo-c, the wheels installed by pip"
bash bindings/c/tests/install.sh
bash tests/packaging/run.sh

step "benchmark smoke run"
cargo run --release --locked -p parley-bench -- --quick

step "demo"
cargo run --locked -p parley-cli -- demo >/dev/null
echo "all test suites passed in $SECONDS s"
