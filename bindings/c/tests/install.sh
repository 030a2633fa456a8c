#!/usr/bin/env bash
# Installs libparley the way a user or a packager does, with cargo-c
# (`cargo cinstall -p parley-c --profile dist`), into a scratch prefix
# (target/c-install/prefix), and checks:
#   - the layout: lib/libparley.so.0.1.0 with the links libparley.so.0 and
#     libparley.so, lib/libparley.a, include/parley.h (the committed header, byte for
#     byte) and lib/pkgconfig/parley.pc; nothing lands outside the prefix;
#   - readelf -d: the SONAME libparley.so.0, and no debug info or symbol table left
#     (the dist profile);
#   - `pkg-config --cflags --libs parley` through PKG_CONFIG_PATH, pointing into the
#     prefix;
#   - examples/c/chat.c compiled with exactly those flags and run against the
#     installed shared library (LD_LIBRARY_PATH to the prefix);
#   - an install of the static library alone (--library-type staticlib, a second
#     scratch prefix), and chat.c linked with its `pkg-config --static` flags.
# cargo-c is installed from crates.io (`cargo install`) when `cargo cinstall` is
# missing or older than the version below. Prints one line per case and ends with
# "N passed, M failed"; exits non-zero on any failure. Runs from any directory.
#
# Environment: CC (default gcc), CARGO_TARGET_DIR (default the workspace's target/).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)"
cd "$ROOT"

CC="${CC:-gcc}"
# The newest cargo-c that builds with Rust 1.95: each release embeds a cargo and
# needs that cargo's rustc (0.10.26 needs 1.97). Debian's cargo-c (0.9.14) is too
# old to read Cargo.lock version 4.
CARGO_C_VERSION="0.10.24"
CARGO_C_MIN="0.10"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$ROOT/target}"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/parley-c-install.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT

# shellcheck source=tests/lib/tap.sh
source "$ROOT/tests/lib/tap.sh"

# --- cargo-c --------------------------------------------------------------------
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
    CARGO_PROFILE_DEV_DEBUG=0 cargo install cargo-c --version "$CARGO_C_VERSION" --locked --debug --quiet
    have="$(cargo_c_version)"
    if [ -z "$have" ]; then
        echo "cargo cinstall is still not on PATH after cargo install (is \$CARGO_HOME/bin on PATH?)" >&2
        exit 2
    fi
fi
echo "# cargo-c $have"

# --- install --------------------------------------------------------------------
# A fixed prefix under the target directory, emptied first: cargo-c rebuilds the
# whole dependency graph whenever the install paths differ from its last run, so a
# fresh mktemp prefix each time would cost a full dist build.
PREFIX="$CARGO_TARGET_DIR/c-install/prefix"
rm -rf "$PREFIX"
LIB="$PREFIX/lib"
echo "# cargo cinstall -p parley-c --profile dist --prefix $PREFIX"
if ! cargo cinstall -p parley-c --profile dist --locked --prefix "$PREFIX" --libdir lib \
    >"$WORK/cinstall.log" 2>&1; then
    cat "$WORK/cinstall.log"
    fail "cargo cinstall -p parley-c --profile dist"
    echo "$PASSED passed, $FAILED failed"
    exit 1
fi
pass "cargo cinstall -p parley-c --profile dist"

VERSION="$(sed -n 's/^version = "\(.*\)"/\1/p' "$ROOT/Cargo.toml" | head -n 1)"
MAJOR="${VERSION%%.*}"
REAL="libparley.so.$VERSION"
SONAME="libparley.so.$MAJOR"

check "lib/$REAL is the shared library" test -f "$LIB/$REAL" -a ! -L "$LIB/$REAL"
check "lib/$SONAME links to $REAL" test "$(readlink "$LIB/$SONAME" 2>/dev/null)" = "$REAL"
check "lib/libparley.so links to $SONAME or $REAL" \
    test -e "$LIB/libparley.so" -a "$(readlink -f "$LIB/libparley.so" 2>/dev/null)" = "$LIB/$REAL"
check "lib/libparley.a is installed" test -f "$LIB/libparley.a"
check "include/parley.h is the committed header" cmp -s "$PREFIX/include/parley.h" "$ROOT/include/parley.h"
check "lib/pkgconfig/parley.pc is installed" test -f "$LIB/pkgconfig/parley.pc"
# Every installed file is one of those (the header's directory is not doubled up
# as include/parley/parley.h, no stray build output).
installed="$(cd "$PREFIX" && find . \( -type f -o -type l \) | sort | tr '\n' ' ')"
expected="./include/parley.h ./lib/libparley.a ./lib/libparley.so ./lib/$REAL ./lib/$SONAME ./lib/pkgconfig/parley.pc "
expected="$(tr ' ' '\n' <<<"$expected" | sed '/^$/d' | sort | tr '\n' ' ')"
if [ "$installed" = "$expected" ]; then
    pass "the prefix holds exactly the library, the header and the .pc file"
else
    echo "# installed: $installed"
    echo "# expected:  $expected"
    fail "the prefix holds exactly the library, the header and the .pc file"
fi

dynamic="$(readelf -d "$LIB/$REAL" 2>&1 || true)"
check "readelf -d shows SONAME $SONAME" grep -q "(SONAME) *Library soname: \[$SONAME\]" <<<"$dynamic"
sections="$(readelf -S -W "$LIB/$REAL" 2>&1 || true)"
if grep -q -e '\.debug_' -e ' \.symtab ' <<<"$sections"; then
    fail "the shared library is stripped (dist profile)"
else
    pass "the shared library is stripped (dist profile)"
fi

# --- pkg-config -----------------------------------------------------------------
export PKG_CONFIG_PATH="$LIB/pkgconfig"
if flags="$(pkg-config --cflags --libs parley 2>"$WORK/pkg-config.log")"; then
    echo "# pkg-config --cflags --libs parley: $flags"
    pass "pkg-config --cflags --libs parley"
else
    cat "$WORK/pkg-config.log"
    fail "pkg-config --cflags --libs parley"
    flags=""
fi
check "the flags point into the prefix" \
    grep -q -e "-I$PREFIX/include\( \|$\)" <<<"$flags"
check "the flags link -L$LIB -lparley" grep -q -e "-L$LIB -lparley" <<<"$flags"
check "pkg-config --modversion parley is $VERSION" test "$(pkg-config --modversion parley 2>/dev/null)" = "$VERSION"
# --static adds Libs.private: what libparley.a needs from the system (the list is
# rustc's --print native-static-libs, recorded by cargo-c).
if private="$(pkg-config --static --libs parley 2>"$WORK/pkg-config.log")"; then
    echo "# pkg-config --static --libs parley: $private"
    check "pkg-config --static adds the system libraries of libparley.a" \
        grep -q -e "-lparley .*-lpthread" <<<"$private"
else
    cat "$WORK/pkg-config.log"
    fail "pkg-config --static adds the system libraries of libparley.a"
fi

# --- the example, shared and static ----------------------------------------------
# The run of examples/c/chat.c that bindings/c/tests/run.sh checks too.
chat_ran() { # output file
    grep -q 'thread_closed' "$1" && grep -q '"state": "closed"' "$1" &&
        grep -q '"body": "Confirmed: 7878 works here."' "$1"
}
CFLAGS=(-std=c99 -Wall -Wextra -Werror -pedantic)

# The flags are word-split on purpose: they are what `$(pkg-config ...)` gives a
# user's command line.
# shellcheck disable=SC2086
if "$CC" "${CFLAGS[@]}" "$ROOT/examples/c/chat.c" $flags -o "$WORK/chat_shared" 2>"$WORK/build.log"; then
    pass "examples/c/chat.c builds with the pkg-config flags"
    needed="$(readelf -d "$WORK/chat_shared" 2>&1 || true)"
    check "the program needs $SONAME" grep -q "(NEEDED) *Shared library: \[$SONAME\]" <<<"$needed"
    resolved="$(LD_LIBRARY_PATH="$LIB" ldd "$WORK/chat_shared" 2>&1 || true)"
    check "the loader finds $SONAME in the prefix" grep -q "$SONAME => $LIB/$SONAME" <<<"$resolved"
    if LD_LIBRARY_PATH="$LIB" "$WORK/chat_shared" >"$WORK/chat_shared.out" 2>&1 && chat_ran "$WORK/chat_shared.out"; then
        pass "examples/c/chat.c runs against the installed shared library"
    else
        cat "$WORK/chat_shared.out"
        fail "examples/c/chat.c runs against the installed shared library"
    fi
else
    cat "$WORK/build.log"
    fail "examples/c/chat.c builds with the pkg-config flags"
fi

# Static linking. With libparley.so and libparley.a side by side, -lparley takes the
# shared library, and a fully static program (-static) cannot be linked: the Rust
# runtime needs libgcc_s, which has no static archive. So the static case is an
# install of the static library alone (--library-type staticlib, as a -dev package
# may split it), whose .pc file then carries the libraries libparley.a needs.
STATIC_PREFIX="$CARGO_TARGET_DIR/c-install/static"
rm -rf "$STATIC_PREFIX"
echo "# cargo cinstall -p parley-c --profile dist --library-type staticlib --prefix $STATIC_PREFIX"
if cargo cinstall -p parley-c --profile dist --locked --library-type staticlib \
    --prefix "$STATIC_PREFIX" --libdir lib >"$WORK/cinstall-static.log" 2>&1; then
    pass "cargo cinstall --library-type staticlib"
else
    cat "$WORK/cinstall-static.log"
    fail "cargo cinstall --library-type staticlib"
fi
static_flags=""
if static_flags="$(PKG_CONFIG_PATH="$STATIC_PREFIX/lib/pkgconfig" pkg-config --static --cflags --libs parley \
    2>"$WORK/pkg-config.log")"; then
    echo "# pkg-config --static --cflags --libs parley (static install): $static_flags"
    pass "pkg-config --static --cflags --libs parley on the static install"
else
    cat "$WORK/pkg-config.log"
    fail "pkg-config --static --cflags --libs parley on the static install"
fi
# shellcheck disable=SC2086
if [ -n "$static_flags" ] && "$CC" "${CFLAGS[@]}" "$ROOT/examples/c/chat.c" $static_flags \
    -o "$WORK/chat_static" 2>"$WORK/build.log"; then
    pass "examples/c/chat.c builds with the pkg-config --static flags"
    needed="$(readelf -d "$WORK/chat_static" 2>&1 || true)"
    if grep -q 'libparley' <<<"$needed"; then
        fail "the static program does not need libparley.so"
    else
        pass "the static program does not need libparley.so"
    fi
    # No LD_LIBRARY_PATH: the library is inside the program.
    if "$WORK/chat_static" >"$WORK/chat_static.out" 2>&1 && chat_ran "$WORK/chat_static.out"; then
        pass "examples/c/chat.c runs linked statically"
    else
        cat "$WORK/chat_static.out"
        fail "examples/c/chat.c runs linked statically"
    fi
else
    cat "$WORK/build.log" 2>/dev/null || true
    fail "examples/c/chat.c builds with the pkg-config --static flags"
fi

tap_finish
