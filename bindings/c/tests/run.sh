#!/usr/bin/env bash
# Builds libparley and runs every check of the C ABI:
#   - the Rust tests of parley-c: the panic boundary and poisoning, the fuzzer of
#     the entry points (tests/entry_points.rs: random calls checked against the
#     header's contract; PARLEY_FUZZ_CASES and PARLEY_FUZZ_SEED pass through), the
#     header drift check and the inventory of by-value inputs (tests/header.rs);
#   - the C tests (test_api.c, test_profiles.c, test_threads.c, test_listen.c,
#     test_postgres.c, which needs PARLEY_TEST_PG for most of its cases) and the C++
#     header check, compiled with -std=c99 -Wall -Wextra -Werror -pedantic and run
#     under AddressSanitizer, LeakSanitizer and UBSan (PARLEY_SANITIZER=valgrind uses
#     valgrind memcheck);
#   - the conformance runner over every tests/conformance/*.json;
#   - the example host examples/c/chat.c, built with the command of its README and
#     again against the shared library, and the poll loop of examples/c/listen.c.
# The installed library (cargo cinstall, SONAME, pkg-config) is checked by
# bindings/c/tests/install.sh.
# Prints one line per case and ends with "N passed, M failed"; exits non-zero on
# any failure. Runs from any directory.
#
# Environment: PARLEY_PROFILE=release|debug (default release),
#              PARLEY_SANITIZER=asan|valgrind (default asan),
#              CC and CXX (default gcc and g++).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)"
cd "$ROOT"

PROFILE="${PARLEY_PROFILE:-release}"
CC="${CC:-gcc}"
CXX="${CXX:-g++}"
# The header must be checked here, never rewritten.
unset PARLEY_BLESS
SANITIZER="${PARLEY_SANITIZER:-asan}"
case "$PROFILE" in
    release) CARGO_PROFILE=(--release) ;;
    debug) CARGO_PROFILE=() ;;
    *) echo "PARLEY_PROFILE must be release or debug, not $PROFILE" >&2; exit 2 ;;
esac
TARGET="${CARGO_TARGET_DIR:-$ROOT/target}"
LIBDIR="$TARGET/$PROFILE"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/parley-c-tests.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT

# shellcheck source=tests/lib/tap.sh
source "$ROOT/tests/lib/tap.sh"

# --- jansson, for the JSON of the test harness ------------------------------
if ! echo '#include <jansson.h>' | "$CC" -E -x c - >/dev/null 2>&1; then
    if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null; then
        echo "# installing libjansson-dev"
        DEBIAN_FRONTEND=noninteractive apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libjansson-dev >/dev/null
    else
        echo "libjansson-dev is missing; install it (apt-get install libjansson-dev) and run again" >&2
        exit 2
    fi
fi
if [ "$SANITIZER" = valgrind ] && ! command -v valgrind >/dev/null; then
    echo "PARLEY_SANITIZER=valgrind needs valgrind" >&2
    exit 2
fi

# --- build --------------------------------------------------------------------
echo "# building parley-c ($PROFILE, with the postgres feature for test_postgres.c)"
cargo build -p parley-c "${CARGO_PROFILE[@]}" --features postgres --quiet
cargo build -p parley-c "${CARGO_PROFILE[@]}" --features postgres --example fixtures --quiet
"$LIBDIR/examples/fixtures" "$WORK/fixtures"

# --- Rust tests: unit tests (panic boundary, poisoning) and header drift -------
# Without the postgres feature, as the library builds by default: the refusal of
# postgres:// paths (tests/no_postgres.rs) runs too.
echo "# cargo test -p parley-c"
if cargo test -p parley-c --quiet >"$WORK/cargo-test.log" 2>&1; then
    pass "rust tests of parley-c, header drift included"
else
    cat "$WORK/cargo-test.log"
    fail "rust tests of parley-c, header drift included"
fi

# --- C and C++ programs -------------------------------------------------------
CFLAGS=(-std=c99 -Wall -Wextra -Werror -pedantic -g -I"$ROOT/include" -I"$ROOT/bindings/c/tests")
CXXFLAGS=(-std=c++11 -Wall -Wextra -Werror -pedantic -g -I"$ROOT/include")
LIBS=("$LIBDIR/libparley.a" -ljansson -lpthread -ldl -lm)
RUNNER=()
if [ "$SANITIZER" = asan ]; then
    SAN=(-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer)
    export ASAN_OPTIONS="detect_leaks=1:halt_on_error=1:abort_on_error=0"
    export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1"
else
    SAN=()
    RUNNER=(valgrind --quiet --leak-check=full --show-leak-kinds=definite,indirect
            --errors-for-leak-kinds=definite,indirect --error-exitcode=99)
fi

# Compiles one program; on failure counts one failed case.
build() { # name compiler flags...
    local name="$1"
    shift
    if ! "$@" -o "$WORK/$name" 2>"$WORK/$name.build.log"; then
        cat "$WORK/$name.build.log"
        fail "$name builds"
        return 1
    fi
}

# Runs one test program and adds up its "RESULT passed=P failed=F" line. A
# crash, a sanitizer report or a missing RESULT line is one more failure.
run_program() { # name args...
    local name="$1" log="$WORK/$1.log" status=0 line p f
    shift
    echo "# $name"
    "${RUNNER[@]}" "$WORK/$name" "$@" >"$log" 2>&1 || status=$?
    grep -v '^RESULT ' "$log" || true
    line="$(grep '^RESULT ' "$log" | tail -n 1 || true)"
    if [ -z "$line" ]; then
        fail "$name ran to the end (exit status $status)"
        return
    fi
    p="$(sed -n 's/^RESULT passed=\([0-9]*\) failed=\([0-9]*\)$/\1/p' <<<"$line")"
    f="$(sed -n 's/^RESULT passed=\([0-9]*\) failed=\([0-9]*\)$/\2/p' <<<"$line")"
    PASSED=$((PASSED + p))
    FAILED=$((FAILED + f))
    if [ "$f" -gt 0 ]; then
        FAILED_NAMES+=("$name")
    fi
    if [ "$status" -ne 0 ] && [ "$f" -eq 0 ]; then
        fail "$name exited cleanly (exit status $status)"
    fi
}

mkdir -p "$WORK/scratch"
if build test_api "$CC" "${CFLAGS[@]}" "${SAN[@]}" "$ROOT/bindings/c/tests/test_api.c" "${LIBS[@]}"; then
    run_program test_api "$WORK/fixtures" "$WORK/scratch"
fi
if build test_profiles "$CC" "${CFLAGS[@]}" "${SAN[@]}" "$ROOT/bindings/c/tests/test_profiles.c" "${LIBS[@]}"; then
    run_program test_profiles
fi
if build test_threads "$CC" "${CFLAGS[@]}" "${SAN[@]}" "$ROOT/bindings/c/tests/test_threads.c" "${LIBS[@]}"; then
    run_program test_threads
fi
if build test_listen "$CC" "${CFLAGS[@]}" "${SAN[@]}" "$ROOT/bindings/c/tests/test_listen.c" "${LIBS[@]}"; then
    run_program test_listen
fi
# On a PostgreSQL forum when PARLEY_TEST_PG names a server (tests/pg/server.sh);
# prints a skip line without one, and fails without one under PARLEY_TEST_PG_REQUIRED.
if build test_provenance "$CC" "${CFLAGS[@]}" "${SAN[@]}" "$ROOT/bindings/c/tests/test_provenance.c" "${LIBS[@]}"; then
    run_program test_provenance
fi
if build test_postgres "$CC" "${CFLAGS[@]}" "${SAN[@]}" "$ROOT/bindings/c/tests/test_postgres.c" "${LIBS[@]}"; then
    run_program test_postgres
fi
if build cpp_header "$CXX" "${CXXFLAGS[@]}" "${SAN[@]}" "$ROOT/bindings/c/tests/cpp_header.cpp" "${LIBS[@]}"; then
    run_program cpp_header
fi
if build conformance "$CC" "${CFLAGS[@]}" "${SAN[@]}" "$ROOT/bindings/c/tests/conformance.c" "${LIBS[@]}"; then
    run_program conformance "$ROOT/tests/conformance"
fi

# --- the example host -----------------------------------------------------------
# Built as examples/c/README.md says, then run under the sanitizer of the tests.
check_chat() { # name command...
    local name="$1" out="$WORK/$1.out"
    shift
    if "$@" >"$out" 2>&1 && grep -q 'thread_closed' "$out" && grep -q '"state": "closed"' "$out" &&
        grep -q '"body": "Confirmed: 7878 works here."' "$out"; then
        pass "$name"
    else
        cat "$out"
        fail "$name"
    fi
}
if build chat "$CC" -std=c99 -Wall -Wextra -Werror -pedantic "${SAN[@]}" -I"$ROOT/include" \
    "$ROOT/examples/c/chat.c" "$LIBDIR/libparley.a" -lpthread -ldl -lm; then
    check_chat "example chat.c (static library)" "${RUNNER[@]}" "$WORK/chat"
    check_chat "example chat.c on a forum file" "${RUNNER[@]}" "$WORK/chat" "$WORK/scratch/chat.parley"
fi
# The poll loop of examples/c/listen.c: Bob answers the three questions Alice
# asks from another thread, woken through the commit descriptor.
check_listen() { # name command...
    local name="$1" out="$WORK/$1.out"
    shift
    if "$@" >"$out" 2>&1 && grep -q '^bob answered 3 questions$' "$out" && grep -q '^bob    wakes' "$out"; then
        pass "$name"
    else
        cat "$out"
        fail "$name"
    fi
}
if build listen "$CC" -std=c99 -Wall -Wextra -Werror -pedantic "${SAN[@]}" -I"$ROOT/include" \
    "$ROOT/examples/c/listen.c" "$LIBDIR/libparley.a" -lpthread -ldl -lm; then
    check_listen "example listen.c (static library)" "${RUNNER[@]}" "$WORK/listen"
    check_listen "example listen.c on a forum file" "${RUNNER[@]}" "$WORK/listen" "$WORK/scratch/listen.parley"
fi
# The shared library of the build tree.
if build chat_shared "$CC" -std=c99 -Wall -Wextra -Werror -pedantic -I"$ROOT/include" \
    "$ROOT/examples/c/chat.c" -L"$LIBDIR" -lparley; then
    check_chat "example chat.c (shared library)" env LD_LIBRARY_PATH="$LIBDIR" "$WORK/chat_shared"
fi

tap_finish
