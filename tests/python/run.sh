#!/usr/bin/env bash
# Builds the Python package into the repository's .venv and runs its checks:
# stub consistency (mypy.stubtest), strict typing of the package, the example and a
# script using the typed results, and the pytest suite (warnings are errors, see pyproject.toml).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"

if [[ ! -x .venv/bin/python ]]; then
    python3 -m venv .venv
    .venv/bin/python -m pip install --quiet --upgrade pip
fi
.venv/bin/python -m pip install --quiet -r tests/requirements.txt

export VIRTUAL_ENV="$root/.venv"
export PATH="$VIRTUAL_ENV/bin:$PATH"
# Reuse the workspace's target directory, so the engine is not compiled twice.
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$root/target}"

# A debug build installed in editable mode: quick on small machines. `pip install .`
# builds the same package in release mode.
maturin develop --quiet

# The allowlist holds stubtest's known false positives, each explained there.
python -m mypy.stubtest parley --allowlist tests/python/stubtest-allowlist.txt
python -m mypy --strict python/parley examples/python/agents.py
# An agent's script written against the typed results (parley.types).
python -m mypy --strict tests/python/typing/user_script.py
python -m pytest tests/python "$@"
