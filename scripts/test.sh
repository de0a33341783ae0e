#!/usr/bin/env bash
# Set up a virtual environment in .venv from this checkout, check lint, format and types,
# and run the whole test suite. Extra arguments go to pytest (for example:
# bash scripts/test.sh -q -k claims, or -n 4 to run it in four worker processes).
set -euo pipefail
cd "$(dirname "$0")/.."

python=${PYTHON:-python3}
"$python" -c 'import sys; sys.exit(sys.version_info < (3, 11))' || {
    echo "Bot Board needs Python 3.11 or newer; set PYTHON=/path/to/python3.11" >&2
    exit 1
}
[ -x .venv/bin/python ] || "$python" -m venv .venv
.venv/bin/python -m pip install --quiet --disable-pip-version-check -e '.[test]'
.venv/bin/ruff check --quiet .
.venv/bin/ruff format --check --quiet .
.venv/bin/mypy board routines tests
# In this process; BOARD_TEST_WORKERS=4 in four worker processes, a test module's tests all in
# one of them (docs/testing.md: twice as fast, not yet as steady). A later -n overrides it.
exec .venv/bin/python -m pytest -n "${BOARD_TEST_WORKERS:-0}" --dist loadfile "$@"
