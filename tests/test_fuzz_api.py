"""Fuzz the API from its own OpenAPI document: no input may make the board fail.

Schemathesis generates requests for every operation (valid ones and ones just
outside the schema) as a human; the board must answer each with a status below
500, and its log must hold no unhandled error.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.support.processes import fuzzed_board


def test_no_generated_request_makes_the_board_fail(tmp_path: Path) -> None:
    with fuzzed_board(tmp_path / "board.db") as (served, token, env):
        run = subprocess.run(
            [
                sys.executable,
                "-m",
                "schemathesis.cli",
                "run",
                f"{served.url}/api/openapi.json",
                "-H",
                f"Authorization: Bearer {token}",
                "--checks",
                "not_a_server_error",
                "--max-examples",
                "10",
                "--phases",
                "coverage,fuzzing",
                "--seed",
                "1",
                "--suppress-health-check",
                "all",
                "--request-timeout",
                "10",
                "--exclude-path",
                "/api/me/rotate",
            ],
            capture_output=True,
            text=True,
            timeout=600,
            env=env,
        )
    summary = run.stdout[-3000:]
    assert "ST101" not in run.stdout and "Server error" not in run.stdout, summary
    assert run.returncode == 0, summary
