#!/usr/bin/env bash
# Every test of the project: Rust (unit, integration, conformance, properties,
# crash), C (ABI under AddressSanitizer, conformance through the ABI), Python
# (package, conformance, stubs), the web view in headless Chromium, end to end
# (MCP SDK, MCP conformance suite, REST), seven agent frameworks driving the
# server offline (examples/frameworks; CrewAI with FRAMEWORKS=all), the packages
# as users install them (cargo cinstall, pip), and a quick benchmark smoke run. Needs only Rust, Python 3
# and a C compiler; it installs the rest itself (a venv under .venv, jansson, Chromium,
# chromedriver and PostgreSQL from Debian, cargo-c from crates.io, npm packages).
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n==> %s (at %d s)\n' "$*" "$SECONDS"; }

step "format and lints"
cargo fmt --all -- --check
cargo clippy --workspace --all-targets --locked -- -D warnings

step "a throwaway PostgreSQL server (Debian's package) for the PostgreSQL backend"
# shellcheck source=tests/pg/server.sh
source tests/pg/server.sh
pg_start
trap pg_stop EXIT

step "Rust tests"
cargo test --workspace --locked

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
