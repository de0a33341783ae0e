"""Every benchmark scenario runs end to end at a tiny size, so the benchmark code cannot rot.

Nothing here is timed: the figures of a tiny run mean nothing. What is checked is
that each scenario starts its board, drives it, and writes the record the report
reads, and that the verdicts that are not about speed (one claim winner, no lost
update) hold.
"""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from bench import report
from bench.__main__ import SCENARIOS
from tests.support.pgcluster import wanted_stores
from tests.support.processes import board_env

ROOT = Path(__file__).resolve().parent.parent


def run_tiny(name: str, results: Path, *extra: str) -> dict[str, Any]:
    argv = [*importlib.import_module(SCENARIOS[name]).TINY, *extra]
    done = subprocess.run(
        [sys.executable, "-m", "bench", name, *argv],
        cwd=ROOT,
        env=board_env(BENCH_RESULTS=str(results)),
        capture_output=True,
        text=True,
        timeout=170,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    record = json.loads(done.stdout.strip().splitlines()[-1])
    assert record["scenario"] == name
    assert [json.loads(p.read_text()) for p in results.glob(f"*-{name}.json")] == [record]
    return record


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_scenario_runs_at_a_tiny_size(name: str, tmp_path: Path) -> None:
    if name == "driver" and "postgresql" not in wanted_stores():
        pytest.skip("BOARD_TEST_STORES leaves out postgresql")
    record = run_tiny(name, tmp_path)
    assert record["rows"] and len(record["load"]) == 3
    if name == "claims":
        assert record["exactly_one_winner"] is True
        assert all(r["refused"] == r["rounds"] * (r["racers"] - 1) for r in record["rows"])
    if name == "knowledge":
        assert record["lost_updates"] == 0
        assert all(r["acknowledged"] == r["writers"] * 2 for r in record["rows"])
    if name == "idle":
        # Every tab stayed open through the soak and heard every post of its workspace.
        assert all(r["stream_messages"] == r["posted"] * r["browsers"] for r in record["rows"])
    if name == "economy":
        rotated, never = record["rows"]
        assert (rotated["mode"], rotated["turns"], never["mode"], never["turns"]) == (
            "rotated",
            3,
            "never",
            3,
        )
        # Rotating after 2 turns: the third turn starts a fresh session and re-reads nothing.
        assert (rotated["sessions"], rotated["rotated_turns"], never["sessions"]) == (2, 1, 1)
        reads = record["cache_read_by_turn"]
        assert reads["rotated"][2] == 0 < reads["rotated"][1] < reads["never"][2]
        assert record["rotated_vs_never_cache_read"] < 1
        # The two bots' relay spends exactly loop_hops wakes, then the thread is paused, once.
        loop = record["loop"]
        assert (loop["wakes"], loop["held"], loop["paused"], loop["notices"]) == (
            loop["loop_hops"],
            1,
            True,
            1,
        )
        guard = record["guard"]
        assert guard["posts_each"] == 16 and guard["guarded_p50_ms"] > 0 and guard["open_p50_ms"] > 0
        assert "read_side" not in guard  # what delivery states cost a read is bench delivery's figure
    if name == "driver":  # asyncpg's row only where it is installed
        assert [r["client"] for r in record["rows"]][:2] == ["board", "psycopg"]
        assert all(r["statements"] == 20 and r["elapsed_us"] > 0 for r in record["rows"])
    if name == "catchup":
        assert all(r["channel_bytes"] > 0 and r["bytes_p50_ms"] > 0 for r in record["rows"])


def test_post_runs_on_sqlite_and_on_postgresql_with_one_and_two_processes(tmp_path: Path) -> None:
    if "postgresql" not in wanted_stores():
        pytest.skip("BOARD_TEST_STORES leaves out postgresql")
    record = run_tiny("post", tmp_path, "--store", "postgresql", "--processes", "1", "2")
    assert [(r["store"], r["processes"]) for r in record["rows"]] == [
        ("sqlite", 1),
        ("postgresql", 1),
        ("postgresql", 2),
    ]
    assert all(r["posts"] > 0 for r in record["rows"])
    assert record["cross_process_wake"]["wakes"] == 3


def test_catchup_runs_on_postgresql_moved_over_from_the_loaded_file(tmp_path: Path) -> None:
    if "postgresql" not in wanted_stores():
        pytest.skip("BOARD_TEST_STORES leaves out postgresql")
    record = run_tiny("catchup", tmp_path, "--store", "sqlite", "postgresql")
    sqlite, postgresql = record["rows"]
    assert (sqlite["store"], postgresql["store"]) == ("sqlite", "postgresql")
    # The copy answers the same page: the same messages, so the same bytes.
    assert postgresql["channel_bytes"] == sqlite["channel_bytes"] > 0
    assert "inbox_db_cpu_ms" in postgresql and "inbox_db_cpu_ms" not in sqlite


def test_report_names_every_target_and_marks_a_missing_run(tmp_path: Path) -> None:
    run_tiny("claims", tmp_path)
    text = report.table(report.latest(tmp_path))
    lines = text.splitlines()[2:]
    assert len(lines) == len(report.TARGETS)
    claims = next(line for line in lines if line.startswith("| claim race winners"))
    assert "| True | " in claims and "| yes |" in claims
    assert all("not run" in line for line in lines if "claim race" not in line)


def test_report_draws_a_chart_per_scenario_that_has_one(tmp_path: Path) -> None:
    record = run_tiny("claims", tmp_path)
    path = report.chart(record, tmp_path)
    assert path is not None and path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_report_leaves_out_a_variant_run_newer_than_the_target_s(tmp_path: Path) -> None:
    """A run with options that measure beside the target (``worktrees --back-to-back``) is not
    the target's figure, however new."""
    target: dict[str, Any] = {"scenario": "worktrees", "rows": [{"mode": "plain", "p99_ms": 300.0}]}
    target |= {"added_p99_ms": 99.0, "ratio_p99": 1.2, "load": [1, 1, 1], "at": "T1"}
    variant = target | {"added_p99_ms": 4728.0, "ratio_p99": 16.4, "variant": "back to back", "at": "T2"}
    (tmp_path / "2026-01-01T000000Z-worktrees.json").write_text(json.dumps(target))
    (tmp_path / "2026-01-02T000000Z-worktrees.json").write_text(json.dumps(variant))
    row = next(line for line in report.table(report.latest(tmp_path)).splitlines() if "worktree" in line)
    assert "| 99.0 |" in row and "| yes |" in row and "4728" not in row
