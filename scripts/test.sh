#!/usr/bin/env bash
# Set up a virtual environment in .venv from this checkout, check lint, format and types,
# and run the whole test suite. Extra arguments go to pytest (for example:
# bash scripts/test.sh -q -k claims, or -n 0 to run it in one process).
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
# In four worker processes, a test module's tests all in one of them (docs/testing.md: most
# tests wait on a board, a daemon or a browser); BOARD_TEST_WORKERS=0 runs them in this process.
# A later -n overrides it.
exec .venv/bin/python -m pytest -n "${BOARD_TEST_WORKERS:-4}" --dist loadfile "$@"
