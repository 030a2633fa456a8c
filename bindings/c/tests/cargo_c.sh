#!/usr/bin/env bash
# Makes `cargo cinstall` available: installs cargo-c from crates.io (`cargo install`)
# when it is missing or older than the version below, and prints the version found.
# bindings/c/tests/install.sh runs it first; tests/run_all.sh starts it early, in
# the background, so that its build uses the cores the tests leave idle.
# Exits non-zero when cargo-c cannot be installed. Runs from any directory.
set -euo pipefail

# The newest cargo-c that builds with Rust 1.95: each release embeds a cargo and
# needs that cargo's rustc (0.10.26 needs 1.97). Debian's cargo-c (0.9.14) is too
# old to read Cargo.lock version 4.
CARGO_C_VERSION="0.10.24"
CARGO_C_MIN="0.10"

# Prints the installed cargo-c's version (x.y.z), or nothing when there is none.
cargo_c_version() {
    local out
    out="$(cargo cinstall --version 2>/dev/null)" || return 0
    sed -n 's/^cargo-c \([0-9][0-9.]*\).*/\1/p' <<<"$out" | head -n 1
}

have="$(cargo_c_version)"
if [ -z "$have" ] || [ "$(printf '%s\n%s\n' "$CARGO_C_MIN" "$have" | sort -V | head -n 1)" != "$CARGO_C_MIN" ]; then
    echo "# installing cargo-c $CARGO_C_VERSION from crates.io (cargo install; minutes)"
    # An unoptimised build without debug info: cargo-c only resolves the workspace
    # and copies files, so optimising it buys nothing, while optimising the whole
    # cargo it embeds costs several times the CPU time.
    # It downloads and builds in scratch directories of its own, so that it never
    # holds the locks of the package cache or of the workspace's target directory
    # that the tests' builds wait for, and installs into the usual bin/.
    home="${CARGO_HOME:-$HOME/.cargo}"
    scratch="$(mktemp -d "${TMPDIR:-/tmp}/parley-cargo-c.XXXXXX")"
    trap 'rm -rf "$scratch"' EXIT
    for config in config.toml config; do
        if [ -f "$home/$config" ]; then cp "$home/$config" "$scratch/"; fi
    done
    env -u CARGO_TARGET_DIR CARGO_HOME="$scratch" CARGO_PROFILE_DEV_DEBUG=0 \
        cargo install cargo-c --version "$CARGO_C_VERSION" --locked --debug --quiet --root "$home"
    have="$(cargo_c_version)"
    if [ -z "$have" ]; then
        echo "cargo cinstall is still not on PATH after cargo install (is \$CARGO_HOME/bin on PATH?)" >&2
        exit 2
    fi
fi
echo "# cargo-c $have"
