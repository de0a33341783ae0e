"""Shared adapter machinery: flag merging, JSON scanning, prompt checks, registry, finding the program."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from board.launcher.harnesses import ADAPTERS, TurnRequest, adapter_from_env, get_adapter
from board.launcher.harnesses.base import (
    MAX_PROMPT_BYTES,
    FlagError,
    FlagSpec,
    cap_text,
    describe_exit,
    iter_json_objects,
    merge_flags,
    option_values,
    plain,
    safe_prompt,
    trim,
)
from tests.launcher.fakeharness import FAKES_BIN

SPEC = FlagSpec(
    aliases={"-m": "--model", "-c": "--config"},
    keyed=frozenset({"--config"}),
    displaces={"--yolo": frozenset({"--approval"})},
)


def test_override_replaces_same_option_in_any_spelling() -> None:
    merged = merge_flags(["--model", "a", "--verbose"], [["-m", "b"]], SPEC)
    assert merged == ["--verbose", "-m", "b"]


def test_equals_form_and_later_layers_win() -> None:
    merged = merge_flags(["--model", "a"], [["--model=b"], ["--model", "c"]], SPEC)
    assert merged == ["--model", "c"]


def test_keyed_options_replace_only_the_same_key() -> None:
    merged = merge_flags(["-c", "x=1", "-c", "y=2"], [["--config", "x=3"]], SPEC)
    assert merged == ["-c", "y=2", "--config", "x=3"]


def test_displacing_option_removes_the_conflicting_default() -> None:
    assert merge_flags(["--approval", "yolo"], [["--yolo"]], SPEC) == ["--yolo"]


def test_stray_positional_in_flags_is_refused() -> None:
    with pytest.raises(FlagError, match="unexpected argument 'oops'"):
        merge_flags([], [["oops"]], SPEC)


def test_safe_prompt() -> None:
    assert safe_prompt("hello") == "hello"
    assert safe_prompt("-x") == " -x"
    assert safe_prompt("-") == " -"
    for bad in ("", "   \n", "a\x00b", "é" * (MAX_PROMPT_BYTES // 2 + 1)):
        with pytest.raises(ValueError):
            safe_prompt(bad)


def test_iter_json_objects_skips_noise_and_arrays_and_broken_lines() -> None:
    text = 'noise\n{"a": 1}\n[1, 2]\n{"b": \n  {"c": 2}  \n{not json}\n"str"\n'
    assert list(iter_json_objects(text)) == [{"a": 1}, {"c": 2}]


def test_iter_json_objects_reads_an_indented_object() -> None:
    text = 'Loaded.\n{\n  "response": "x",\n  "stats": {\n    "n": 1\n  }\n}\n{"after": true}\n'
    assert list(iter_json_objects(text)) == [{"response": "x", "stats": {"n": 1}}, {"after": True}]


def test_iter_json_objects_survives_a_cut_indented_object() -> None:
    assert list(iter_json_objects('{\n  "response": "x",\n  "st')) == []


def test_describe_exit() -> None:
    assert describe_exit(0) == "exit 0"
    assert describe_exit(2) == "exit 2"
    assert describe_exit(-9) == "killed by SIGKILL"
    assert describe_exit(-11) == "killed by SIGSEGV"
    assert describe_exit(None) == "exit status unknown"


def test_trim_keeps_the_last_lines_within_bounds() -> None:
    text = "\n".join(f"line {i}" for i in range(100))
    assert trim(text, max_lines=3) == "line 97\nline 98\nline 99"
    assert len(trim("x" * 5000, max_chars=100)) == 100


def test_error_text_loses_terminal_escapes_and_control_characters() -> None:
    coloured = "\x1b[91m\x1b[1mError: \x1b[0mSession not found\r\n\x1b]0;title\x07\tdone\x00\x7f"
    assert plain(coloured) == "Error: Session not found\n\tdone"
    assert trim("\x1b[31mred\x1b[0m\n\x1b[2Kgone") == "red\ngone"


def test_option_values_reads_every_spelling() -> None:
    flags = ["-m", "a", "--model=b", "--verbose", "-c", "k=v"]
    assert option_values(flags, SPEC, "--model") == ["a", "b"]
    assert option_values(flags, SPEC, "--verbose") == [""]
    assert option_values(flags, SPEC, "--absent") == []


def test_cap_text() -> None:
    assert cap_text("  short  ") == "short"
    assert cap_text("y" * 50, limit=30).endswith("...[truncated]")


def test_registry() -> None:
    assert set(ADAPTERS) == {"claude", "codex", "opencode", "copilot", "gemini", "command"}
    for name in ADAPTERS:
        if name != "command":
            adapter = get_adapter(name)
            assert adapter.name == name
            assert adapter.argv(TurnRequest(prompt="p"))[0] == name


def test_unknown_harness_and_misplaced_template() -> None:
    with pytest.raises(ValueError, match="unknown harness 'aider'"):
        get_adapter("aider")
    with pytest.raises(ValueError, match="command harness"):
        get_adapter("claude", template=["x", "{prompt}"])


def test_adapter_from_env_reads_flags_and_binary() -> None:
    environ = {
        "BOT_CLAUDE_FLAGS": "--model 'claude opus' --max-turns 5",
        "BOT_CLAUDE_BIN": "/opt/claude/bin/claude",
    }
    argv = adapter_from_env("claude", environ).argv(TurnRequest(prompt="p"))
    assert argv[0] == "/opt/claude/bin/claude"
    assert argv[argv.index("--model") + 1] == "claude opus"
    assert argv[argv.index("--max-turns") + 1] == "5"


def test_bad_env_flags_are_reported_at_configuration() -> None:
    with pytest.raises(FlagError, match="BOT_CODEX_FLAGS"):
        adapter_from_env("codex", {"BOT_CODEX_FLAGS": "--json"})


def test_request_flags_are_checked_too() -> None:
    with pytest.raises(FlagError, match=r"TurnRequest\.flags"):
        get_adapter("claude").argv(TurnRequest(prompt="p", flags=("--resume", "x")))


@pytest.mark.parametrize("name", [n for n in ADAPTERS if n != "command"])
def test_a_harness_on_path_or_named_by_its_bin_variable_is_found(name: str, tmp_path: Path) -> None:
    adapter_from_env(name, {"PATH": str(FAKES_BIN)}).check_program({"PATH": str(FAKES_BIN)})
    named = {f"BOT_{name.upper()}_BIN": str(FAKES_BIN / name), "PATH": str(tmp_path)}
    adapter_from_env(name, named).check_program(named)


@pytest.mark.parametrize("name", [n for n in ADAPTERS if n != "command"])
def test_a_harness_not_on_path_is_refused_naming_the_program_the_variable_and_path(
    name: str, tmp_path: Path
) -> None:
    environ = {"PATH": f"{tmp_path}{os.pathsep}{tmp_path / 'also'}"}
    with pytest.raises(ValueError) as info:
        adapter_from_env(name, environ).check_program(environ)
    var = f"BOT_{name.upper()}_BIN"
    assert str(info.value) == (
        f"cannot run {name}: no {name!r} on PATH; install {name}, or set {var} to its full path "
        f"(PATH is {environ['PATH']})"
    )


def test_a_bin_variable_naming_no_program_is_refused_naming_the_variable(tmp_path: Path) -> None:
    not_run = tmp_path / "codex"
    not_run.write_text("#!/bin/sh\n")  # there, but not executable
    for given, problem in [
        (str(tmp_path / "gone" / "codex"), f"{tmp_path / 'gone' / 'codex'} is not an executable file"),
        (str(not_run), f"{not_run} is not an executable file"),
        ("codex-nightly", "no 'codex-nightly' on PATH"),
    ]:
        environ = {"BOT_CODEX_BIN": given, "PATH": str(tmp_path)}
        with pytest.raises(ValueError) as info:
            adapter_from_env("codex", environ).check_program(environ)
        assert str(info.value).startswith(
            f"cannot run codex: {problem}; set BOT_CODEX_BIN to the program's full path"
        ), info.value


def test_the_command_templates_program_is_checked_too(tmp_path: Path) -> None:
    environ = {"PATH": os.environ["PATH"], "BOT_COMMAND_TEMPLATE": "sh -c 'echo hi' {prompt}"}
    adapter_from_env("command", environ).check_program(environ)
    environ = {"PATH": str(tmp_path), "BOT_COMMAND_TEMPLATE": "no-such-agent --json {prompt}"}
    with pytest.raises(ValueError) as info:
        adapter_from_env("command", environ).check_program(environ)
    assert str(info.value) == (
        "cannot run command: no 'no-such-agent' on PATH; start BOT_COMMAND_TEMPLATE (or the profile's "
        "command template) with a program on PATH or its full path, or set BOT_COMMAND_BIN "
        f"(PATH is {tmp_path})"
    )


def test_a_program_found_only_from_the_turns_folder_is_not_refused(tmp_path: Path) -> None:
    """A relative program, or a relative folder on PATH, is looked up from the folder each turn
    runs in (the repo, a pool channel's, a worktree), which start cannot know for certain."""
    relative = {"PATH": str(tmp_path), "BOT_COMMAND_TEMPLATE": "./agent.sh {prompt}"}
    adapter_from_env("command", relative).check_program(relative)
    dotted = {"PATH": f"{tmp_path}{os.pathsep}bin"}
    adapter_from_env("codex", dotted).check_program(dotted)
