"""Gemini adapter: yolo and workspace trust, and its indented JSON result."""

from __future__ import annotations

import json
from typing import Any

import pytest

from board.launcher.harnesses import Exit, FlagError, TurnRequest, get_adapter

SID = "196c7382-f24e-4945-9b99-7e511fe6bc35"
NEW_SID = "93edc14b-cbef-4e90-b671-b9e7a4d2a5bb"


def output(**fields: Any) -> str:
    obj: dict[str, Any] = {
        "session_id": SID,
        "response": "Posted the summary.",
        "stats": {
            "models": {
                "gemini-2.5-pro": {
                    "api": {"totalRequests": 2, "totalErrors": 0, "totalLatencyMs": 5053},
                    "tokens": {
                        "prompt": 24939,
                        "candidates": 20,
                        "total": 25113,
                        "cached": 21263,
                        "thoughts": 154,
                        "tool": 0,
                    },
                },
                "gemini-2.5-flash": {"tokens": {"prompt": 61, "candidates": 5, "thoughts": 0}},
            },
            "tools": {"totalCalls": 1},
        },
    }
    obj.update(fields)
    return json.dumps({k: v for k, v in obj.items() if v is not None}, indent=2) + "\n"


adapter = get_adapter("gemini")


def test_start_argv_and_environment() -> None:
    req = TurnRequest(prompt="hello")
    argv = adapter.argv(req)
    assert argv[:3] == ["gemini", "-p", "hello"]
    assert argv[argv.index("-o") + 1] == "json"
    assert argv[argv.index("--approval-mode") + 1] == "yolo"
    assert "-r" not in argv
    assert adapter.env(req) == {"GEMINI_CLI_TRUST_WORKSPACE": "true"}


def test_resume_and_model() -> None:
    argv = adapter.argv(TurnRequest(prompt="again", session_id=SID, model="gemini-2.5-flash"))
    assert argv[:3] == ["gemini", "-r", SID]
    assert argv[argv.index("--model") + 1] == "gemini-2.5-flash"


def test_yolo_override_replaces_approval_mode() -> None:
    # gemini refuses -y together with --approval-mode
    argv = get_adapter("gemini", flags=["-y"]).argv(TurnRequest(prompt="x"))
    assert "-y" in argv and "--approval-mode" not in argv


def test_output_format_is_locked() -> None:
    with pytest.raises(FlagError):
        get_adapter("gemini", flags=["-o", "text"])


def test_success_with_tokens_over_models() -> None:
    r = adapter.parse(output(), "", 0)
    assert r.ok and r.session_id == SID and r.text == "Posted the summary."
    assert r.input_tokens == 24939 + 61
    assert r.cache_read_tokens == 21263 and r.cache_write_tokens is None  # a part of prompt
    assert r.output_tokens == 20 + 154 + 5
    assert r.cost_usd is None


def test_error_object_inside_zero_exit_is_a_failure() -> None:
    out = output(response=None, stats=None, error={"type": "ApiError", "message": "quota", "code": 429})
    r = adapter.parse(out, "", 0)
    assert r.error_kind == "error_result"
    assert r.error == "gemini error: ApiError: quota (code 429)"
    assert r.session_id == SID


def test_non_zero_exit_with_error_object() -> None:
    out = output(response=None, stats=None, error={"type": "Error", "message": "bad", "code": 1})
    r = adapter.parse(out, "", 1)
    assert r.error_kind == "exit" and "bad" in (r.error or "")


def test_new_session_id_after_resume_wins() -> None:
    assert adapter.parse(output(session_id=NEW_SID), "", 0).session_id == NEW_SID


@pytest.mark.parametrize(
    "stderr",
    [
        f'Error resuming session: Invalid session identifier "{SID}".\n'
        "  Use --list-sessions to see available sessions.\n",
        "Error resuming session: No previous sessions found for this project.\n",
    ],
)
def test_session_gone(stderr: str) -> None:
    assert adapter.parse("", stderr, 1).error_kind == "session_gone"


def test_untrusted_folder_exit() -> None:
    stderr = "Gemini CLI is not running in a trusted directory. To proceed, either use ...\n"
    r = adapter.parse("", stderr, 55)
    assert r.error_kind == "exit" and r.exit == Exit(55) and (r.error or "").startswith("Gemini CLI")


def test_noise_lines_before_the_indented_object() -> None:
    out = "Loaded cached credentials.\nYOLO mode is enabled.\n" + output()
    assert adapter.parse(out, "", 0).ok


def test_truncated_object_is_unparsed() -> None:
    text = output()
    r = adapter.parse(text[: len(text) // 2], "", 0)
    assert r.error_kind == "unparsed" and "JSON result object" in (r.error or "")


def test_single_line_json_is_accepted_too() -> None:
    out = json.dumps({"session_id": SID, "response": "ok"}) + "\n"
    assert adapter.parse(out, "", 0).ok


def test_a_new_session_takes_the_pre_assigned_id_and_a_resume_never_does() -> None:
    argv = adapter.argv(TurnRequest(prompt="hello", fresh_session_id=SID))
    assert argv[:3] == ["gemini", "--session-id", SID] and "-r" not in argv
    resumed = adapter.argv(TurnRequest(prompt="again", session_id=NEW_SID, fresh_session_id=SID))
    assert resumed[:3] == ["gemini", "-r", NEW_SID] and "--session-id" not in resumed
    assert adapter.assigns_session_ids
    with pytest.raises(FlagError):
        get_adapter("gemini", flags=["--session-id", SID])


def error_object(code: int, message: str) -> str:
    return json.dumps(
        {"session_id": SID, "error": {"type": "Error", "message": message, "code": code}}, indent=2
    )


def test_not_logged_in_is_a_bare_error_object_on_stderr_with_exit_41() -> None:
    stderr = "YOLO mode is enabled. All tool calls will be automatically approved.\n" + error_object(
        41, "Please set an Auth method in your /home/u/.gemini/settings.json"
    )
    r = adapter.parse("", stderr, 41)
    assert r.error_kind == "exit" and r.session_id == SID
    assert (
        r.error_line() == "exit 41: gemini error: Error: Please set an Auth method in your "
        "/home/u/.gemini/settings.json (code 41)"
    )


def test_an_error_during_the_run_follows_an_error_tag_on_stderr() -> None:
    stderr = "Ripgrep is not available.\n[ERROR] " + error_object(500, "quota exceeded") + "\n"
    r = adapter.parse("", stderr, 1)
    assert r.error_kind == "exit" and "quota exceeded (code 500)" in (r.error or "") and r.session_id == SID


def test_resume_failure_exit_42_is_session_gone() -> None:
    r = adapter.parse("", "Error resuming session: No previous sessions found for this project.\n", 42)
    assert r.error_kind == "session_gone"


def test_untrusted_folder_in_colour_reads_plainly() -> None:
    stderr = "\x1b[31mGemini CLI is not running in a trusted directory.\x1b[0m\n"
    r = adapter.parse("", stderr, 55)
    assert r.error == "Gemini CLI is not running in a trusted directory."
