"""OpenCode adapter: --auto, the prompt on stdin, and the JSON events of 1.18.33."""

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


def run(sid: str = SID) -> str:
    """A turn as 1.18.33 prints it: a tool step, then the answer; no end-of-run event."""
    return (
        event("step_start", sid, part={"type": "step-start"})
        + event("tool_use", sid, part={"type": "tool", "tool": "bash", "state": {"status": "completed"}})
        + step_finish("tool-calls", 0.002, sid)
        + event("step_start", sid, part={"type": "step-start"})
        + event("reasoning", sid, part={"type": "reasoning", "text": "The claim worked."})
        + event("text", sid, part={"type": "text", "text": "Claimed thread 12."})
        + step_finish("stop", 0.003, sid)
    )


adapter = get_adapter("opencode")
ANSI_ERROR = "\x1b[91m\x1b[1mError: \x1b[0m"


def test_start_argv_has_no_prompt_and_the_prompt_goes_on_stdin() -> None:
    req = TurnRequest(prompt="This turn covers messages: 1, 42.\n  costs 3.50")
    argv = adapter.argv(req)
    assert argv[:2] == ["opencode", "run"]
    assert argv[argv.index("--format") + 1] == "json"
    assert "--auto" in argv and "--session" not in argv
    assert not any("42" in word or "covers" in word for word in argv)
    assert adapter.stdin(req) == req.prompt  # verbatim: no word of it is parsed as an option


def test_stdin_prompt_is_checked_like_an_argv_one() -> None:
    for bad in ("", "  \n", "a\x00b", "x" * 200_000):
        with pytest.raises(ValueError):
            adapter.stdin(TurnRequest(prompt=bad))


def test_resume_and_model() -> None:
    req = TurnRequest(prompt="-x y", session_id=SID, model="anthropic/claude-sonnet-4")
    argv = adapter.argv(req)
    assert argv[argv.index("--session") + 1] == SID
    assert argv[argv.index("--model") + 1] == "anthropic/claude-sonnet-4"
    assert "-x" not in argv and adapter.stdin(req) == "-x y"


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
    assert r.cache_read_tokens == 2 * 1000 and r.cache_write_tokens == 2 * 10
    assert r.output_tokens == 2 * (20 + 5)


def test_rejected_permissions_show_only_on_stderr_and_are_a_failure() -> None:
    stderr = "! permission requested: bash (curl *); auto-rejecting\n"
    r = adapter.parse(run(), stderr, 0)
    assert (
        r.error_kind == "error_result" and "bash (curl *)" in (r.error or "") and "--auto" in (r.error or "")
    )
    # a line that only quotes the words is not a rejection
    assert adapter.parse(run(), "note: ! permission requested: x; auto-rejecting later\n", 0).ok


def test_error_event_is_a_failure_with_exit_1_as_with_exit_0() -> None:
    out = event("error", error={"name": "UnknownError", "data": {"message": "rate limited", "ref": "e"}})
    for code, kind in ((1, "exit"), (0, "error_result")):
        r = adapter.parse(out, "", code)
        assert r.error_kind == kind and "rate limited" in (r.error or "") and r.session_id == SID


def test_stopping_after_tool_calls_is_unparsed() -> None:
    out = event("step_start") + step_finish("tool-calls", 0.001)
    assert adapter.parse(out, "", 0).error_kind == "unparsed"


def test_latest_session_id_wins() -> None:
    assert adapter.parse(run() + run(sid=NEW_SID), "", 0).session_id == NEW_SID


def test_session_gone_through_terminal_colours() -> None:
    r = adapter.parse("", ANSI_ERROR + "Session not found\n", 1)
    assert r.error_kind == "session_gone" and r.error == "Error: Session not found"


def test_non_zero_exit_is_readable_without_escapes() -> None:
    stderr = ANSI_ERROR + "Unexpected error\n\nG.includes is not a function.\n"
    r = adapter.parse("", stderr, 1)
    assert r.error_kind == "exit" and "G.includes" in (r.error or "")
    assert "\x1b" not in (r.error or "") and "Error: Unexpected error" in (r.error or "")


def test_noise_lines_are_skipped() -> None:
    out = "INFO  2026-01-01 service=bus starting\n" + run() + "\n\n"
    assert adapter.parse(out, "", 0).ok


def test_truncated_line_is_unparsed() -> None:
    text = run()
    r = adapter.parse(text[:200], "", 0)
    assert r.error_kind == "unparsed" and r.session_id == SID
