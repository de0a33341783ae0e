"""OpenCode adapter: --auto, the prompt passed as words, and its JSON events."""

from __future__ import annotations

import json
from typing import Any

import pytest

from board.launcher.harnesses import FlagError, TurnRequest, get_adapter

SID = "ses_3b11bfdcdffeITCXse4fCuIRnU"
NEW_SID = "ses_4c22cgedeggfJUDYtf5gDvJSoV"


def event(kind: str, sid: str = SID, **data: Any) -> str:
    return json.dumps({"type": kind, "timestamp": 1, "sessionID": sid, **data}) + "\n"


def step_finish(reason: str, cost: float, sid: str = SID) -> str:
    tokens = {"input": 100, "output": 20, "reasoning": 5, "cache": {"read": 1000, "write": 10}}
    part = {"type": "step-finish", "reason": reason, "cost": cost, "tokens": tokens}
    return event("step_finish", sid, part=part)


def run(sid: str = SID, rejected: list[str] | None = None, done: bool = True) -> str:
    out = (
        event("step_start", sid, part={"type": "step-start"})
        + event("tool_use", sid, part={"type": "tool", "tool": "bash", "state": {"status": "completed"}})
        + step_finish("tool-calls", 0.002, sid)
        + event("step_start", sid, part={"type": "step-start"})
        + event("text", sid, part={"type": "text", "text": "Claimed thread 12."})
        + step_finish("stop", 0.003, sid)
    )
    if done:
        out += event("done", sid, reason="idle", rejected=rejected or [])
    return out


adapter = get_adapter("opencode")


def test_start_argv() -> None:
    argv = adapter.argv(TurnRequest(prompt="fix  the\nbug"))
    assert argv[:2] == ["opencode", "run"]
    assert argv[argv.index("--format") + 1] == "json"
    assert "--auto" in argv and "--session" not in argv
    words = argv[argv.index("--") + 1 :]
    assert words == ["fix", "", "the\nbug"]
    assert " ".join(words) == "fix  the\nbug"  # run joins them back verbatim


def test_resume_and_model() -> None:
    argv = adapter.argv(TurnRequest(prompt="-x y", session_id=SID, model="anthropic/claude-sonnet-4"))
    assert argv[argv.index("--session") + 1] == SID
    assert argv[argv.index("--model") + 1] == "anthropic/claude-sonnet-4"
    assert argv.index("--session") < argv.index("--") and argv[-2:] == ["-x", "y"]


def test_override_flags() -> None:
    argv = get_adapter("opencode", flags=["-m", "openai/gpt-5", "--agent", "build"]).argv(
        TurnRequest(prompt="x", model="anthropic/claude")
    )
    assert argv.count("--model") == 0 and argv[argv.index("-m") + 1] == "openai/gpt-5"
    assert "--agent" in argv


def test_format_is_locked() -> None:
    with pytest.raises(FlagError):
        get_adapter("opencode", flags=["--format", "default"])


def test_success_sums_cost_over_step_finish() -> None:
    r = adapter.parse(run(), "", 0)
    assert r.ok and r.session_id == SID and r.text == "Claimed thread 12."
    assert r.cost_usd == pytest.approx(0.005)
    assert r.input_tokens == 2 * (100 + 1000 + 10)
    assert r.output_tokens == 2 * (20 + 5)


def test_rejected_permissions_are_a_failure() -> None:
    r = adapter.parse(run(rejected=["bash"]), "! permission requested: bash (curl *); auto-rejecting\n", 0)
    assert r.error_kind == "error_result" and "--auto" in (r.error or "")


def test_error_event_inside_zero_exit_is_a_failure() -> None:
    out = event("step_start") + event(
        "error", error={"name": "APIError", "data": {"message": "rate limited"}}
    )
    r = adapter.parse(out, "", 0)
    assert r.error_kind == "error_result" and "rate limited" in (r.error or "")


def test_old_versions_without_done_end_on_the_last_step_finish() -> None:
    assert adapter.parse(run(done=False), "", 0).ok


def test_stopping_after_tool_calls_is_unparsed() -> None:
    out = event("step_start") + step_finish("tool-calls", 0.001)
    assert adapter.parse(out, "", 0).error_kind == "unparsed"


def test_latest_session_id_wins() -> None:
    assert adapter.parse(run() + run(sid=NEW_SID), "", 0).session_id == NEW_SID


def test_session_gone() -> None:
    r = adapter.parse("", "Error: Session not found\n", 1)
    assert r.error_kind == "session_gone"


def test_non_zero_exit() -> None:
    r = adapter.parse(event("step_start"), "Error: You must provide a message or a command\n", 1)
    assert r.error_kind == "exit" and "must provide a message" in (r.error or "")


def test_noise_lines_are_skipped() -> None:
    out = "INFO  2026-01-01 service=bus starting\n" + run() + "\n\n"
    assert adapter.parse(out, "", 0).ok


def test_truncated_line_is_unparsed() -> None:
    text = run()
    r = adapter.parse(text[: text.index('{"type": "done"')], "", 0)
    # the stop step_finish came before the cut: that counts as the end
    assert r.ok
    r = adapter.parse(text[:200], "", 0)
    assert r.error_kind == "unparsed" and r.session_id == SID
