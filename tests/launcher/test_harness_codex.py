"""Codex adapter: flags before `resume`, and parsing its JSONL events."""

from __future__ import annotations

import json
from typing import Any

import pytest

from board.launcher.harnesses import FlagError, TurnRequest, get_adapter

TID = "019c538b-8d9d-78d1-891c-a9b09f3f47b6"
NEW_TID = "019c538b-0000-7000-8000-000000000001"


def events(*objs: dict[str, Any]) -> str:
    return "".join(json.dumps(o) + "\n" for o in objs)


def turn(thread_id: str = TID, text: str = "Replied to 12.") -> list[dict[str, Any]]:
    return [
        {"type": "thread.started", "thread_id": thread_id},
        {"type": "turn.started"},
        {"type": "item.completed", "item": {"id": "item_0", "type": "reasoning", "text": "hm"}},
        {
            "type": "item.completed",
            "item": {
                "id": "item_1",
                "type": "command_execution",
                "command": "curl ...",
                "aggregated_output": "{}",
                "exit_code": 0,
                "status": "completed",
            },
        },
        {"type": "item.completed", "item": {"id": "item_2", "type": "agent_message", "text": text}},
        {
            "type": "turn.completed",
            "usage": {"input_tokens": 5200, "cached_input_tokens": 4100, "output_tokens": 310},
        },
    ]


adapter = get_adapter("codex")


def test_start_argv() -> None:
    argv = adapter.argv(TurnRequest(prompt="hello"))
    assert argv[:2] == ["codex", "exec"]
    assert argv[-1] == "hello"
    assert "--json" in argv and "--skip-git-repo-check" in argv
    assert argv[argv.index("--sandbox") + 1] == "workspace-write"
    assert "sandbox_workspace_write.network_access=true" in argv
    assert "resume" not in argv


def test_resume_puts_every_flag_before_the_subcommand() -> None:
    configured = get_adapter("codex", flags=["-C", "/elsewhere", "-s", "danger-full-access"])
    argv = configured.argv(TurnRequest(prompt="again", session_id=TID, model="gpt-5-codex"))
    i = argv.index("resume")
    assert argv[i:] == ["resume", TID, "again"]
    before = argv[:i]
    for flag in ("-s", "-C", "--json", "--skip-git-repo-check", "--model"):
        assert flag in before
    assert "--sandbox" not in before  # replaced by the override's -s
    assert before[before.index("-s") + 1] == "danger-full-access"


def test_config_overrides_are_keyed() -> None:
    configured = get_adapter("codex", flags=["-c", "model_reasoning_effort=high"])
    argv = configured.argv(TurnRequest(prompt="x"))
    assert "model_reasoning_effort=high" in argv
    assert "sandbox_workspace_write.network_access=true" in argv  # a different key: kept


def test_sandbox_mode_through_config_replaces_the_default_sandbox() -> None:
    argv = get_adapter("codex", flags=["-c", "sandbox_mode=read-only"]).argv(TurnRequest("x"))
    assert "--sandbox" not in argv and "sandbox_mode=read-only" in argv


def test_bypass_replaces_the_sandbox_defaults() -> None:
    argv = get_adapter("codex", flags=["--yolo"]).argv(TurnRequest(prompt="x"))
    assert "--sandbox" not in argv and "sandbox_workspace_write.network_access=true" not in argv
    assert "--yolo" in argv


def test_json_is_locked() -> None:
    with pytest.raises(FlagError):
        get_adapter("codex", flags=["--experimental-json"])


def test_success_with_tokens_and_no_cost() -> None:
    r = adapter.parse(events(*turn()), "", 0)
    assert r.ok and r.session_id == TID and r.text == "Replied to 12."
    assert r.input_tokens == 5200 and r.output_tokens == 310
    assert r.cache_read_tokens == 4100 and r.cache_write_tokens is None  # a part of input_tokens
    assert r.cost_usd is None


def test_turn_failed_inside_zero_exit_is_a_failure() -> None:
    out = events(
        {"type": "thread.started", "thread_id": TID},
        {"type": "turn.started"},
        {"type": "error", "message": "stream disconnected before completion"},
        {"type": "turn.failed", "error": {"message": "stream disconnected before completion"}},
    )
    r = adapter.parse(out, "", 0)
    assert r.error_kind == "error_result"
    assert "stream disconnected" in (r.error or "")
    assert r.session_id == TID


def test_error_event_without_a_turn_end_is_a_failure() -> None:
    out = events({"type": "thread.started", "thread_id": TID}, {"type": "error", "message": "boom"})
    r = adapter.parse(out, "", 0)
    assert r.error_kind == "error_result" and "boom" in (r.error or "")


def test_non_zero_exit_after_turn_failed() -> None:
    out = events(
        {"type": "thread.started", "thread_id": TID},
        *[{"type": "turn.failed", "error": {"message": "Quota exceeded."}}],
    )
    r = adapter.parse(out, "", 1)
    assert r.error_kind == "exit" and "Quota exceeded." in (r.error or "")


def test_plain_error_before_any_event() -> None:
    r = adapter.parse("", "Not inside a trusted directory and --skip-git-repo-check was not specified.\n", 1)
    assert r.error_kind == "exit" and "trusted directory" in (r.error or "")


def test_latest_thread_id_wins() -> None:
    out = events({"type": "thread.started", "thread_id": TID}, *turn(thread_id=NEW_TID))
    assert adapter.parse(out, "", 0).session_id == NEW_TID


@pytest.mark.parametrize(
    "stderr",
    [
        f"Error: thread/resume: thread/resume failed: no rollout found for thread id {TID} (code -32600)\n",
        f"ERROR: No saved session found with ID {TID}. Run `codex resume` without an ID.\n",
    ],
)
def test_session_gone(stderr: str) -> None:
    r = adapter.parse("", stderr, 1)
    assert r.error_kind == "session_gone" and TID in (r.error or "")


def test_noise_and_log_lines_are_skipped() -> None:
    out = "2026-02-12T20:29:52Z ERROR codex_core::rollout::list: state db missing\n" + events(*turn())
    assert adapter.parse(out, "", 0).ok


def test_truncated_stream_is_unparsed() -> None:
    text = events(*turn())
    r = adapter.parse(text[: text.index('{"type": "turn.completed"') + 20], "", 0)
    assert r.error_kind == "unparsed" and "turn.completed" in (r.error or "")
    assert r.session_id == TID  # the head still names the thread
