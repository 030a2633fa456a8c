#!/usr/bin/env bash
# Builds the Python package into the repository's .venv and runs its checks:
# stub consistency (mypy.stubtest), strict typing of the package, the example and a
# script using the typed results, and the pytest suite (warnings are errors, see pyproject.toml).
#
# The suite runs once on redb, then, when PARLEY_TEST_PG names a PostgreSQL server
# (source tests/pg/server.sh && pg_start), again with PARLEY_TEST_BACKEND=postgres:
# every forum a test opens in memory or in a temporary file is then a fresh forum on
# that server (tests/python/conftest.py). PARLEY_TEST_PG_REQUIRED without
# PARLEY_TEST_PG is a failure, not a skipped pass.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"

if [[ -n "${PARLEY_TEST_PG_REQUIRED:-}" && -z "${PARLEY_TEST_PG:-}" ]]; then
    echo "PARLEY_TEST_PG_REQUIRED is set but PARLEY_TEST_PG is not (source tests/pg/server.sh && pg_start)" >&2
    exit 1
fi

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
# builds the same package in release mode. `fault-injection` lets a test make the
# engine panic (test_errors.py); no wheel carries it.
maturin develop --quiet --features fault-injection

# The allowlist holds stubtest's known false positives, each explained there.
python -m mypy.stubtest parley --allowlist tests/python/stubtest-allowlist.txt
python -m mypy --strict python/parley examples/python/agents.py
# An agent's script written against the typed results (parley.types).
python -m mypy --strict tests/python/typing/user_script.py
# The loop benchmark (run by test_loops.py) is typed too.
python -m mypy --strict benches/loops.py benches/loop_scripts.py
# The independent bundle checks: docs/provenance.md's verification and the tamper cases.
python -m pytest tests/provenance
echo "# pytest on redb"
PARLEY_TEST_BACKEND=redb python -m pytest tests/python "$@"
if [[ -n "${PARLEY_TEST_PG:-}" ]]; then
    echo "# pytest on PostgreSQL"
    PARLEY_TEST_BACKEND=postgres python -m pytest tests/python "$@"
else
    echo "# pytest on PostgreSQL: skipped, no PARLEY_TEST_PG (source tests/pg/server.sh && pg_start)"
fi
