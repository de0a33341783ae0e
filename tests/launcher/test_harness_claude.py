"""Claude adapter: argv for start and resume, and parsing its result object."""

from __future__ import annotations

import json
from typing import Any

import pytest

from board.launcher.harnesses import Exit, FlagError, TurnRequest, get_adapter
from board.launcher.harnesses.base import TRUNCATION_NOTE

SID = "5f0c1b7e-2d55-4a57-9d1c-0a4c1f3e8b21"
NEW_SID = "0b8f7c9a-1111-4222-8333-944455556666"


def result(**fields: Any) -> str:
    obj: dict[str, Any] = {
        "type": "result",
        "subtype": "success",
        "is_error": False,
        "duration_ms": 1000,
        "num_turns": 2,
        "result": "Done: replied in thread 12.",
        "session_id": SID,
        "total_cost_usd": 0.0421,
        "usage": {
            "input_tokens": 10,
            "cache_creation_input_tokens": 200,
            "cache_read_input_tokens": 3000,
            "output_tokens": 150,
        },
        "permission_denials": [],
    }
    obj.update(fields)
    return json.dumps(obj) + "\n"


adapter = get_adapter("claude")


def test_start_argv_has_unattended_flag_and_json_and_prompt_last() -> None:
    argv = adapter.argv(TurnRequest(prompt="hello"))
    assert argv[0] == "claude"
    assert argv[-2:] == ["-p", "hello"]
    assert argv[argv.index("--output-format") + 1] == "json"
    assert argv[argv.index("--permission-mode") + 1] == "bypassPermissions"
    assert "--resume" not in argv and "--session-id" not in argv


def test_first_run_may_name_its_session() -> None:
    argv = adapter.argv(TurnRequest(prompt="hi", fresh_session_id=SID))
    assert argv[argv.index("--session-id") + 1] == SID


def test_resume_keeps_bypass_and_never_sends_session_id() -> None:
    argv = adapter.argv(TurnRequest(prompt="again", session_id=SID, fresh_session_id=NEW_SID))
    assert argv[-4:] == ["-p", "--resume", SID, "again"]
    assert "--session-id" not in argv
    assert argv[argv.index("--permission-mode") + 1] == "bypassPermissions"


def test_model_and_override_flags() -> None:
    configured = get_adapter("claude", flags=["--permission-mode", "acceptEdits", "--max-turns=40"])
    argv = configured.argv(TurnRequest(prompt="x", model="opus", flags=("--model", "sonnet")))
    assert argv.count("--permission-mode") == 1
    assert argv[argv.index("--permission-mode") + 1] == "acceptEdits"
    assert "--max-turns=40" in argv
    # request flags override the request's model default
    assert argv.count("--model") == 1 and argv[argv.index("--model") + 1] == "sonnet"


@pytest.mark.parametrize("flag", ["--output-format=text", "--resume", "-r", "--session-id", "-p"])
def test_flags_the_parser_depends_on_are_refused(flag: str) -> None:
    with pytest.raises(FlagError):
        get_adapter("claude", flags=[flag, "x"])


def test_prompt_starting_with_a_dash_is_not_an_option() -> None:
    assert adapter.argv(TurnRequest(prompt="- item"))[-1] == " - item"


def test_success() -> None:
    r = adapter.parse(result(), "", 0)
    assert r.ok and r.error_kind is None and r.error is None
    assert r.session_id == SID
    assert r.text == "Done: replied in thread 12."
    assert r.cost_usd == pytest.approx(0.0421)
    assert r.input_tokens == 3210  # fresh + cache creation + cache read
    assert r.cache_read_tokens == 3000 and r.cache_write_tokens == 200
    assert r.output_tokens == 150


def test_is_error_inside_zero_exit_is_a_failure() -> None:
    r = adapter.parse(result(is_error=True, result="API Error: 529 overloaded"), "", 0)
    assert not r.ok and r.error_kind == "error_result"
    assert "529 overloaded" in (r.error or "")
    assert r.session_id == SID  # still resumable


@pytest.mark.parametrize("subtype", ["error_during_execution", "error_max_turns"])
def test_error_subtype_without_is_error_is_a_failure(subtype: str) -> None:
    out = result(subtype=subtype, is_error=False, errors=["tool crashed"])
    r = adapter.parse(out.replace('"result": "Done: replied in thread 12.", ', ""), "", 0)
    assert r.error_kind == "error_result"
    assert subtype in (r.error or "") and "tool crashed" in (r.error or "")


def test_permission_denials_are_a_failure() -> None:
    denied = [{"tool_name": "Bash", "tool_use_id": "t1", "tool_input": {"command": "curl"}}]
    r = adapter.parse(result(permission_denials=denied), "", 0)
    assert r.error_kind == "error_result"
    assert "Bash" in (r.error or "") and "bypassPermissions" in (r.error or "")


def test_non_zero_exit_uses_stderr() -> None:
    r = adapter.parse("", "Error: Invalid API key · Please run /login\n", 1)
    assert r.error_kind == "exit" and r.exit == Exit(1)
    assert r.error == "Error: Invalid API key · Please run /login"


def test_not_logged_in_says_so_though_its_subtype_says_success() -> None:
    # 2.1.332 without credentials: exit 1, "subtype": "success", "is_error": true
    out = result(
        is_error=True, subtype="success", result="Not logged in · Please run /login", total_cost_usd=0
    )
    r = adapter.parse(out, "", 1)
    assert r.error_kind == "exit" and r.session_id == SID
    assert r.exit == Exit(1) and r.error == "claude reported an error: Not logged in · Please run /login"
    assert "success" not in (r.error or "")


@pytest.mark.parametrize(
    ("environ", "euid", "flags", "refused"),
    [
        ({}, 0, [], True),
        ({"IS_SANDBOX": "1"}, 0, [], False),
        ({"IS_SANDBOX": "0"}, 0, [], True),
        ({}, 1000, [], False),
        ({}, 0, ["--permission-mode", "acceptEdits"], False),
        ({}, 0, ["--permission-mode=acceptEdits"], False),
        ({}, 0, ["--permission-mode", "acceptEdits", "--dangerously-skip-permissions"], True),
    ],
)
def test_root_without_a_sandbox_is_refused_before_any_turn(
    environ: dict[str, str], euid: int, flags: list[str], refused: bool
) -> None:
    check = get_adapter("claude", flags=flags).check_environment
    if not refused:
        check(environ, euid)
        return
    with pytest.raises(ValueError, match=r"as root.*IS_SANDBOX=1"):
        check(environ, euid)


def test_non_zero_exit_with_error_result_keeps_the_result_message() -> None:
    r = adapter.parse(result(is_error=True, result="API Error: 500"), "", 1)
    assert r.error_kind == "exit" and "API Error: 500" in (r.error or "")


def test_killed_by_signal() -> None:
    r = adapter.parse('{"type": "res', "", -9, 2.5)
    assert r.error_kind == "exit" and r.exit == Exit(-9, 2.5) and str(r.exit) == "killed by SIGKILL"
    assert r.error is None and r.error_line() == "killed by SIGKILL"  # not the cut-off record


def test_new_session_id_on_resume_wins() -> None:
    out = (
        json.dumps({"type": "system", "subtype": "init", "session_id": SID})
        + "\n"
        + result(session_id=NEW_SID)
    )
    assert adapter.parse(out, "", 0).session_id == NEW_SID


def test_session_gone() -> None:
    r = adapter.parse("", f"No conversation found with session ID: {SID}\n", 1)
    assert r.error_kind == "session_gone"
    assert SID in (r.error or "")


def test_answer_text_mentioning_a_missing_session_is_not_session_gone() -> None:
    out = result(result="The log said: No conversation found with session ID: x")
    assert adapter.parse(out, "", 0).ok


def test_noise_lines_around_the_result_are_skipped() -> None:
    out = "Warning: update available\n" + result() + "[debug] bye\n"
    assert adapter.parse(out, "some stderr chatter\n", 0).ok


def test_truncated_json_is_unparsed() -> None:
    r = adapter.parse(result()[:80], "", 0)
    assert r.error_kind == "unparsed" and r.ok is False
    assert "no result object" in (r.error or "")


def test_output_cut_by_the_launcher_says_so() -> None:
    out = "x" * 100 + f"\n[... 999 {TRUNCATION_NOTE} ...]\n" + result()[40:]
    r = adapter.parse(out, "", 0)
    assert r.error_kind == "unparsed" and "truncated" in (r.error or "")


def test_empty_output_with_zero_exit_is_unparsed() -> None:
    assert adapter.parse("", "", 0).error_kind == "unparsed"


def test_missing_cost_and_usage_are_none() -> None:
    out = json.dumps({"type": "result", "subtype": "success", "result": "ok", "session_id": SID})
    r = adapter.parse(out, "", 0)
    assert r.ok and r.cost_usd is None and r.input_tokens is None and r.output_tokens is None
