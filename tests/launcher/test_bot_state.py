"""state.json: what survives a restart, and that a crash mid-write never tears it."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from board.launcher.state import BotState, StateFile, write_atomic


def test_state_round_trips_and_ignores_fields_it_does_not_know(tmp_path: Path) -> None:
    store = StateFile(tmp_path)
    assert store.load() == BotState()
    state = BotState(cursor=7, sessions={"": "abc"}, failures={"": 2}, last_wake={"outcome": "ok"})
    store.save(state)
    assert store.load() == state
    data = json.loads(store.path.read_text())
    data["from_a_newer_daemon"] = True
    store.path.write_text(json.dumps(data))
    assert store.load() == state
    assert store.path.stat().st_mode & 0o777 == 0o600


def test_a_crash_while_writing_leaves_the_old_state_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = StateFile(tmp_path)
    store.save(BotState(cursor=5))

    def crash(*args: object) -> None:
        raise KeyboardInterrupt  # as if killed between writing and renaming

    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(KeyboardInterrupt):
        store.save(BotState(cursor=9))
    monkeypatch.undo()
    assert store.load().cursor == 5
    assert [p.name for p in tmp_path.iterdir()] == ["state.json"]  # no temporary file left


def test_write_atomic_replaces_in_one_step(tmp_path: Path) -> None:
    path = tmp_path / "f"
    write_atomic(path, "one")
    inode = path.stat().st_ino
    write_atomic(path, "two")
    assert path.read_text() == "two" and path.stat().st_ino != inode


def test_the_cursor_waits_for_the_oldest_pending_message() -> None:
    state = BotState(cursor=10)
    # 11 and 14 dispatched to two lanes; 14's lane finishes first.
    state.mark_handled([14], read_position=15, pending={11})
    assert state.cursor == 10 and state.handled == [14]
    state.mark_handled([11], read_position=15, pending=set())
    assert state.cursor == 15 and state.handled == []
    state.mark_handled([], read_position=12, pending=set())
    assert state.cursor == 15  # never backwards


def test_thread_failures_count_in_a_row_and_stay_bounded() -> None:
    state = BotState()
    assert [state.note_thread_failure(5) for _ in range(3)] == [1, 2, 3]
    for thread in range(1000):
        state.note_thread_failure(thread + 100)
    assert len(state.thread_failures) == 200 and "5" not in state.thread_failures
