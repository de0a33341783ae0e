"""The command adapter: an argv template with placeholders."""

from __future__ import annotations

import pytest

from board.launcher.harnesses import Exit, TurnRequest, adapter_from_env, get_adapter


def test_template_drops_the_session_option_on_a_first_run() -> None:
    a = get_adapter("command", template=["mybot", "--json", "--resume", "{session}", "{prompt}"])
    assert a.argv(TurnRequest(prompt="hi")) == ["mybot", "--json", "hi"]
    assert a.argv(TurnRequest(prompt="hi", session_id="s1")) == [
        "mybot",
        "--json",
        "--resume",
        "s1",
        "hi",
    ]


def test_placeholders_inside_words_and_model() -> None:
    a = get_adapter("command", template=["run", "--session={session}", "-m", "{model}", "--ask={prompt}"])
    assert a.argv(TurnRequest(prompt="q")) == ["run", "--ask=q"]
    assert a.argv(TurnRequest(prompt="q", session_id="7", model="big")) == [
        "run",
        "--session=7",
        "-m",
        "big",
        "--ask=q",
    ]


def test_flags_go_after_the_program() -> None:
    a = get_adapter("command", template=["run", "{prompt}"], flags=["--quiet"])
    argv = a.argv(TurnRequest(prompt="q", flags=("--fast",)))
    assert argv == ["run", "--quiet", "--fast", "q"]


@pytest.mark.parametrize(
    "template",
    [[], ["run", "--no-prompt"], ["{prompt}"]],
)
def test_bad_templates_are_refused(template: list[str]) -> None:
    with pytest.raises(ValueError):
        get_adapter("command", template=template)


def test_session_from_a_json_field_latest_wins() -> None:
    a = get_adapter("command", template=["run", "{prompt}"], session_field="meta.session")
    out = '{"meta": {"session": "a"}}\nthinking...\n{"meta": {"session": "b"}}\nAll done.\n'
    r = a.parse(out, "", 0)
    assert r.ok and r.session_id == "b" and r.text == "thinking...\nAll done."


def test_without_a_session_field_there_are_no_sessions() -> None:
    a = get_adapter("command", template=["run", "{prompt}"])
    r = a.parse('{"session": "x"}\nhello\n', "", 0)
    assert r.ok and r.session_id is None and "hello" in r.text


def test_non_zero_exit_is_a_failure() -> None:
    a = get_adapter("command", template=["run", "{prompt}"])
    r = a.parse("partial", "Traceback: boom\n", 3)
    assert r.error_kind == "exit" and r.exit == Exit(3) and r.error == "Traceback: boom"
    assert r.error_line() == "exit 3: Traceback: boom"


def test_from_env() -> None:
    a = adapter_from_env(
        "command",
        {
            "BOT_COMMAND_TEMPLATE": "python3 agent.py {flags} --resume {session} '{prompt}'",
            "BOT_COMMAND_SESSION_FIELD": "id",
            "BOT_COMMAND_FLAGS": "--verbose",
        },
    )
    assert a.argv(TurnRequest(prompt="do it")) == ["python3", "agent.py", "--verbose", "do it"]
    assert a.argv(TurnRequest(prompt="x", session_id="9"))[2:] == [
        "--verbose",
        "--resume",
        "9",
        "x",
    ]


def test_a_prompt_mentioning_a_placeholder_is_passed_as_written() -> None:
    a = get_adapter("command", template=["run", "--s={session}", "{prompt}"])
    assert a.argv(TurnRequest(prompt="say {session}", session_id="7"))[-1] == "say {session}"


def test_with_a_session_field_json_records_are_not_the_answer() -> None:
    """Only the prose is the answer (the daemon posts it); records alone make none."""
    a = get_adapter("command", template=["run", "{prompt}"], session_field="id")
    r = a.parse('{"id": "s1"}\n{"id": "s1", "usage": 3}\n', "", 0)
    assert r.ok and r.session_id == "s1" and r.text == ""
