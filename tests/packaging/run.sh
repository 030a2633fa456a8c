#!/usr/bin/env bash
# The Python packages as a user installs them, checked in a fresh virtualenv:
#   - parley-cli (bindings/cli/pyproject.toml, maturin's "bin" bindings): the wheel
#     puts `parley` into the venv's bin/, and `parley --version` and `parley demo`
#     run from there;
#   - parley-forum (the root pyproject.toml): the wheel's `import parley` runs a
#     question and an answer.
# Both wheels are built once with `maturin build`, which reads the same
# [tool.maturin] tables as `pip install`; the binaries in them must come from the
# dist profile (stripped: no symbol table, no debug info). Installing needs no
# index (`pip install --no-index`). Prints one line per case and ends with
# "N passed, M failed"; exits non-zero on any failure. Runs from any directory.
#
# Environment: PARLEY_PACKAGING_SKIP_FORUM_WHEEL=1 skips the parley-forum wheel.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"

# Reuse the workspace's target directory: the dist builds are the costly part.
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$ROOT/target}"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/parley-packaging.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT

# shellcheck source=tests/lib/tap.sh
source "$ROOT/tests/lib/tap.sh"

# maturin comes from the repository's venv, as for tests/python/run.sh.
if [[ ! -x .venv/bin/python ]]; then
    python3 -m venv .venv
    .venv/bin/python -m pip install --quiet --upgrade pip
fi
if ! .venv/bin/maturin --version >/dev/null 2>&1; then
    .venv/bin/python -m pip install --quiet "$(grep '^maturin' tests/requirements.txt)"
fi

VERSION="$(sed -n 's/^version = "\(.*\)"/\1/p' "$ROOT/Cargo.toml" | head -n 1)"

# Succeeds when the ELF file has neither a symbol table nor debug sections.
stripped() { # file
    local sections
    sections="$(readelf -S -W "$1" 2>&1)" || return 1
    ! grep -q -e '\.debug_' -e ' \.symtab ' <<<"$sections"
}

# Prints the first of its arguments that exists (a glob that matched), or nothing.
first() { # paths...
    local path
    for path in "$@"; do
        if [ -e "$path" ]; then
            echo "$path"
            return
        fi
    done
}

# Builds one wheel into $WORK/wheels/NAME; prints the log on failure.
build_wheel() { # name pyproject-dir
    local name="$1" dir="$2"
    echo "# maturin build $dir (dist profile; minutes on a small machine)"
    if (cd "$dir" && "$ROOT/.venv/bin/maturin" build --quiet --out "$WORK/wheels/$name") \
        >"$WORK/$name.build.log" 2>&1; then
        pass "the $name wheel builds"
    else
        cat "$WORK/$name.build.log"
        fail "the $name wheel builds"
        return 1
    fi
}

# Installs the wheel NAME built by build_wheel (file prefix PREFIX) into $VENV.
install_wheel() { # name prefix where
    local name="$1" prefix="$2" where="$3" wheel
    wheel="$(first "$WORK"/wheels/"$name"/"$prefix"-"$VERSION"-*.whl)"
    if [ -n "$wheel" ] && "$VENV/bin/python" -m pip install --quiet --no-index "$wheel" \
        >"$WORK/pip-$name.log" 2>&1; then
        pass "pip installs $(basename "$wheel") into $where"
    else
        cat "$WORK/pip-$name.log" 2>/dev/null || ls -R "$WORK/wheels"
        fail "pip installs the $name wheel into $where"
    fi
}

python3 -m venv "$WORK/venv"
VENV="$WORK/venv"

# --- parley-cli ----------------------------------------------------------------
if build_wheel parley-cli bindings/cli; then
    install_wheel parley-cli parley_cli "a fresh venv"
    if [ -x "$VENV/bin/parley" ]; then
        pass "the venv's bin/ holds parley"
        if stripped "$VENV/bin/parley"; then
            pass "the installed parley is stripped (dist profile)"
        else
            fail "the installed parley is stripped (dist profile)"
        fi
        out="$("$VENV/bin/parley" --version 2>&1 || true)"
        if [ "$out" = "parley $VERSION" ]; then
            pass "parley --version prints parley $VERSION"
        else
            echo "# parley --version: $out"
            fail "parley --version prints parley $VERSION"
        fi
        # The demo works on a temporary forum of its own; run it away from the
        # repository so that nothing is written there.
        if (cd "$WORK" && "$VENV/bin/parley" demo >"$WORK/demo.out" 2>&1) &&
            grep -q 'transition: decided → closed (confirmed)' "$WORK/demo.out" &&
            grep -q '── event log' "$WORK/demo.out"; then
            pass "parley demo runs from the venv"
        else
            tail -n 20 "$WORK/demo.out"
            fail "parley demo runs from the venv"
        fi
    else
        fail "the venv's bin/ holds parley"
    fi
fi

# --- parley-forum ----------------------------------------------------------------
if [ "${PARLEY_PACKAGING_SKIP_FORUM_WHEEL:-0}" = 1 ]; then
    echo "# parley-forum wheel skipped (PARLEY_PACKAGING_SKIP_FORUM_WHEEL=1)"
    tap_finish
fi
if build_wheel parley-forum .; then
    install_wheel parley-forum parley_forum "the same venv"
    module="$(first "$VENV"/lib/python3*/site-packages/parley/_parley*.so)"
    if [ -n "$module" ] && stripped "$module"; then
        pass "the installed extension module is stripped (dist profile)"
    else
        fail "the installed extension module is stripped (dist profile)"
    fi
    # Run outside the repository, so that `import parley` finds the installed
    # package and not python/parley.
    if (cd "$WORK" && "$VENV/bin/python" - >"$WORK/import.out" 2>&1) <<'EOF'
import parley

assert parley.__file__.startswith(__import__("sys").prefix), parley.__file__
with parley.Forum(None) as forum:
    alice = forum.create_token("alice")
    bob = forum.create_token("bob")
    asked = forum.session(alice).ask("Which port does the dev server use?")
    answered = forum.session(bob).answer("7878.", thread=asked["thread"]["id"])
    assert answered["thread"]["state"] == "answered", answered
print("ok")
EOF
    then
        pass "import parley runs a question and an answer from the wheel"
    else
        cat "$WORK/import.out"
        fail "import parley runs a question and an answer from the wheel"
    fi
fi

tap_finish
