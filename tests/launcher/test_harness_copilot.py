"""Copilot adapter: --resume=ID, and its JSONL ending in a result line."""

from __future__ import annotations

import json
from typing import Any

import pytest

from board.launcher.harnesses import FlagError, TurnRequest, get_adapter

SID = "916524aa-24ae-406d-899a-698d2c19dd57"
NEW_SID = "f35d8fc1-f713-4ecd-bad6-ca09a07cb1f6"


def lines(*objs: dict[str, Any]) -> str:
    return "".join(json.dumps(o) + "\n" for o in objs)


def result(sid: str = SID, code: int = 0) -> dict[str, Any]:
    return {
        "type": "result",
        "sessionId": sid,
        "exitCode": code,
        "usage": {"premiumRequests": 2, "totalApiDurationMs": 900, "sessionDurationMs": 1500},
    }


def message(text: str) -> dict[str, Any]:
    return {"type": "assistant.message", "data": {"messageId": "m", "content": text}}


adapter = get_adapter("copilot")


def test_start_argv() -> None:
    argv = adapter.argv(TurnRequest(prompt="hello"))
    assert argv[:3] == ["copilot", "-p", "hello"]
    for flag in ("-s", "--allow-all-tools", "--no-ask-user"):
        assert flag in argv
    assert argv[argv.index("--output-format") + 1] == "json"
    assert not any(a.startswith("--resume") for a in argv)


def test_resume_uses_the_equals_form() -> None:
    argv = adapter.argv(TurnRequest(prompt="again", session_id=SID, model="gpt-5"))
    assert f"--resume={SID}" in argv
    assert argv[argv.index("--model") + 1] == "gpt-5"


def test_a_new_session_takes_the_pre_assigned_id_and_a_resume_never_does() -> None:
    fresh = "0b4c7d9e-1111-4222-8333-444455556666"
    argv = adapter.argv(TurnRequest(prompt="hello", fresh_session_id=fresh))
    assert f"--session-id={fresh}" in argv and not any(a.startswith("--resume") for a in argv)
    resumed = adapter.argv(TurnRequest(prompt="again", session_id=SID, fresh_session_id=fresh))
    assert f"--resume={SID}" in resumed and not any(a.startswith("--session-id") for a in resumed)
    assert adapter.assigns_session_ids


def test_not_logged_in_is_a_readable_failure() -> None:
    stderr = "Error: No authentication information found.\n\nCopilot can be authenticated with GitHub.\n"
    r = adapter.parse("", stderr, 1)
    assert r.error_kind == "exit" and "No authentication information found." in (r.error or "")


def test_override_flags() -> None:
    argv = get_adapter("copilot", flags=["--yolo"]).argv(TurnRequest(prompt="x"))
    assert "--yolo" in argv


def test_prompt_flag_is_locked() -> None:
    with pytest.raises(FlagError):
        get_adapter("copilot", flags=["--output-format", "text"])


def test_success_counts_premium_requests_not_dollars() -> None:
    r = adapter.parse(lines(message("Working on it"), message("Done."), result()), "", 0)
    assert r.ok and r.session_id == SID and r.text == "Done."
    assert r.premium_requests == 2 and r.cost_usd is None


def test_result_exit_code_inside_zero_exit_is_a_failure() -> None:
    out = lines(
        {"type": "session.error", "data": {"errorType": "model", "message": "model overloaded"}},
        result(code=1),
    )
    r = adapter.parse(out, "", 0)
    assert r.error_kind == "error_result"
    assert "exitCode 1" in (r.error or "") and "model overloaded" in (r.error or "")


def test_latest_session_id_wins() -> None:
    out = lines({"type": "session.start", "data": {"sessionId": SID}}, result(sid=NEW_SID))
    assert adapter.parse(out, "", 0).session_id == NEW_SID


def test_session_gone() -> None:
    r = adapter.parse("", f"Error: No session, task, or name matched '{SID}'.\n", 1)
    assert r.error_kind == "session_gone"


def test_non_zero_exit() -> None:
    r = adapter.parse("", "error: unknown option '--bogus'\n", 1)
    assert r.error_kind == "exit" and "--bogus" in (r.error or "")


def test_noise_is_skipped_and_missing_result_is_unparsed() -> None:
    out = "Loading...\n" + lines(message("half way"))
    r = adapter.parse(out, "", 0)
    assert r.error_kind == "unparsed" and "result line" in (r.error or "")
    assert adapter.parse("Loading...\n" + lines(message("x"), result()), "", 0).ok


def test_truncated_result_line_is_unparsed() -> None:
    out = lines(message("x")) + json.dumps(result())[:30]
    assert adapter.parse(out, "", 0).error_kind == "unparsed"
