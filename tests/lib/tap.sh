# Pass/fail bookkeeping of the shell test scripts, in TAP's words: one
# "ok - NAME" or "not ok - NAME" line per case, then "N passed, M failed".
#
#   source tests/lib/tap.sh
#   pass "name"; fail "name"; check "name" command args...
#   tap_finish          # prints the summary; exits 1 if any case failed, else 0

PASSED=0
FAILED=0
FAILED_NAMES=()

pass() { PASSED=$((PASSED + 1)); echo "ok - $1"; }
fail() { FAILED=$((FAILED + 1)); FAILED_NAMES+=("$1"); echo "not ok - $1"; }

# Records one case: its name, then the command that decides it.
check() { # name command...
    local name="$1"
    shift
    if "$@"; then pass "$name"; else fail "$name"; fi
}

tap_finish() {
    echo "$PASSED passed, $FAILED failed"
    if [ "$FAILED" -ne 0 ]; then
        echo "failed: ${FAILED_NAMES[*]}" >&2
        exit 1
    fi
    exit 0
}
