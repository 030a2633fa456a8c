#!/usr/bin/env bash
# Runs each framework example (examples/frameworks/<name>/example.py) as a test: the
# framework's own agent loop and MCP client against a real `parley serve`, offline,
# with a scripted model; each example checks the forum afterwards and exits non-zero
# when anything is off. Prints one TAP line per framework (tests/lib/tap.sh).
#
#   bash examples/frameworks/run.sh                    # every framework (what CI runs)
#   FRAMEWORKS=langchain,autogen bash examples/frameworks/run.sh
#
# The frameworks need two generations of the MCP Python SDK that cannot share a
# virtualenv, so each requirements-<venv>.txt here makes target/frameworks-venv-<venv>
# (created when missing, reinstalled when its requirements file is newer).
# The binary: PARLEY_BIN when set, else this script builds target/debug/parley.
set -uo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
target_dir="${CARGO_TARGET_DIR:-$repo/target}"
# shellcheck source=tests/lib/tap.sh
source "$repo/tests/lib/tap.sh"

# name:venv, cheapest installs first; CrewAI's (about 1 GB) is the largest.
all=(langchain:mcp1 autogen:mcp1 smolagents:mcp1 google_adk:mcp1 pydantic_ai:mcp2 openai_agents:mcp2 llama_index:mcp2 crewai:crewai)

case "${FRAMEWORKS:-all}" in
  all) selected=("${all[@]}") ;;
  *)
    selected=()
    IFS=, read -r -a wanted <<<"$FRAMEWORKS"
    for name in "${wanted[@]}"; do
      found=""
      for entry in "${all[@]}"; do
        [ "${entry%%:*}" = "$name" ] && found="$entry"
      done
      if [ -z "$found" ]; then
        echo "unknown framework: $name" >&2
        exit 2
      fi
      selected+=("$found")
    done
    ;;
esac

if [ -z "${PARLEY_BIN:-}" ]; then
  echo "== build"
  (cd "$repo" && cargo build -p parley-cli) || exit 1
  export PARLEY_BIN="$target_dir/debug/parley"
fi

# Makes (or updates) the virtualenv $1; prints its python.
venv() {
  local name="$1" dir="$target_dir/frameworks-venv-$1" req="$here/requirements-$1.txt"
  if [ ! -e "$dir/.installed" ] || [ "$req" -nt "$dir/.installed" ]; then
    echo "== virtualenv $name ($req)" >&2
    local started=$SECONDS
    { [ -x "$dir/bin/python" ] || { python3 -m venv "$dir" && "$dir/bin/pip" install --quiet --upgrade pip; }; } >&2 &&
      "$dir/bin/pip" install --quiet --upgrade -r "$req" >&2 &&
      touch "$dir/.installed" || return 1
    echo "== virtualenv $name ready in $((SECONDS - started)) s" >&2
  fi
  echo "$dir/bin/python"
}

logs="$(mktemp -d)"
for entry in "${selected[@]}"; do
  name="${entry%%:*}"
  if ! python="$(venv "${entry#*:}")"; then
    fail "$name (virtualenv ${entry#*:} could not be made)"
    continue
  fi
  echo "== $name"
  started=$SECONDS
  # Bounded: an example that hangs fails instead of stalling CI.
  if timeout 300 "$python" -W error::DeprecationWarning:__main__ "$here/$name/example.py" >"$logs/$name.log" 2>&1; then
    grep '^ok: ' "$logs/$name.log"
    pass "$name ($((SECONDS - started)) s)"
  else
    tail -n 60 "$logs/$name.log"
    fail "$name"
  fi
done
rm -rf "$logs"
tap_finish
