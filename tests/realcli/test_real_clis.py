"""Each adapter against its real CLI, at the pinned version (clis.py).

No model can be reached from here, so every turn fails: what is checked is that the CLI
accepts the argv the adapter builds, for a first turn and for a resume, and that the adapter
reads the real failures right: no credentials is a failure that says so, an unknown session
is ``session_gone`` (the loop's cue for its one fresh start), and a prompt full of numbers
gets through to opencode. Run with ``-s`` to see each argv and what the adapter made of it.
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import pytest

from board.launcher.harnesses import TurnRequest, TurnResult, get_adapter
from board.launcher.process import ProcessOutcome, run_process, run_turn
from tests.realcli.clis import INSTALL_TIMEOUT, PINNED
from tests.realcli.sandbox import Sandbox

pytestmark = [pytest.mark.realcli, pytest.mark.timeout(INSTALL_TIMEOUT + 300)]

# What the board's prompts look like: message ids and other numbers.
PROMPT = "This turn covers messages: 1, 42 and 3.50. Reply in thread 7."
# How each CLI says it did not understand its argv.
USAGE_ERRORS = (
    "unknown option",
    "Unknown argument",
    "unexpected argument",
    "Invalid values",
    "mutually exclusive",
    "cannot be used with",
    "Usage:",
    "Options:",
)
# How long a turn may run here: codex retries without a network until stopped.
TURN_TIMEOUT = 25.0
# opencode prints nothing at all while it retries; this is what ends it.
SILENT_TIMEOUT = 15.0


async def turn(
    name: str,
    binary: Path,
    box: Sandbox,
    req: TurnRequest,
    flags: tuple[str, ...] = (),
    env: dict[str, str] | None = None,
) -> tuple[TurnResult, ProcessOutcome]:
    """One turn of the real CLI through the adapter and the launcher's process runner."""
    adapter = get_adapter(name, flags=flags, executable=str(box.wrap(binary, name)))
    result, outcome = await run_turn(
        adapter,
        req,
        cwd=box.work,
        env={**box.env(), **(env or {})},
        timeout=TURN_TIMEOUT,
        silent_timeout=SILENT_TIMEOUT,
        kill_grace=2.0,
    )
    assert outcome is not None, result.error
    shown = [name, *adapter.argv(req)[1:]]
    print(f"\n{name} {PINNED[name].version}: {shown}\n  -> {result.error_kind}: {result.error_line()}")
    return result, outcome


def assert_argv_accepted(outcome: ProcessOutcome) -> None:
    said = outcome.stdout + outcome.stderr
    assert not [u for u in USAGE_ERRORS if u in said], said[-2000:]


# harness -> (error kind, words of the error) for a first turn without credentials or network
FIRST_TURN = {
    "claude": ("exit", "claude reported an error: Not logged in"),
    "codex": ("timeout", "Reconnecting"),  # it never gives up without a network
    "opencode": ("silent", "printed nothing for"),  # nor does opencode, in silence
    "gemini": ("exit", "exit 41: gemini error: Error: Please set an Auth method"),
    "copilot": ("exit", "Error: No authentication information found."),
}


@pytest.mark.parametrize("name", sorted(PINNED))
async def test_a_first_turn_is_accepted_and_fails_readably(
    name: str, real_clis: dict[str, Path], jail: Sandbox
) -> None:
    fresh = str(uuid.uuid4())
    result, outcome = await turn(
        name, real_clis[name], jail, TurnRequest(prompt=PROMPT, fresh_session_id=fresh)
    )
    assert_argv_accepted(outcome)
    kind, words = FIRST_TURN[name]
    line = result.error_line()  # how it ended, then what it said
    assert not result.ok and result.error_kind == kind, line
    assert words in (line or "") + outcome.stdout, line
    assert "\x1b" not in (result.error or "")  # the board refuses control characters
    if name in ("claude", "gemini"):
        assert result.session_id == fresh  # they took the pre-assigned id
    if name == "codex":
        assert result.session_id  # from thread.started, before the retries


def unknown_session(name: str) -> str:
    return "ses_" + uuid.uuid4().hex[:26] if name == "opencode" else str(uuid.uuid4())


@pytest.mark.parametrize("name", sorted(PINNED))
async def test_resuming_an_unknown_session_is_session_gone(
    name: str, real_clis: dict[str, Path], jail: Sandbox
) -> None:
    gone = unknown_session(name)
    result, outcome = await turn(name, real_clis[name], jail, TurnRequest(prompt=PROMPT, session_id=gone))
    assert_argv_accepted(outcome)
    assert result.error_kind == "session_gone", result.error
    assert result.error and "\x1b" not in result.error


async def test_opencode_takes_a_prompt_with_numbers_and_resumes_its_session(
    real_clis: dict[str, Path], jail: Sandbox
) -> None:
    """An unknown model makes opencode fail fast, after it made a session from the prompt."""
    flags = ("--model", "nope/nope")
    first, outcome = await turn("opencode", real_clis["opencode"], jail, TurnRequest(prompt=PROMPT), flags)
    assert_argv_accepted(outcome)
    assert first.error_kind == "exit" and first.exit is not None and first.exit.code == 1, first.error_line()
    assert (first.error or "").startswith("opencode error:"), first.error
    assert first.session_id and first.session_id.startswith("ses_")
    again, outcome = await turn(
        "opencode",
        real_clis["opencode"],
        jail,
        TurnRequest(prompt=PROMPT, session_id=first.session_id),
        flags,
    )
    assert_argv_accepted(outcome)
    assert again.error_kind == "exit" and again.session_id == first.session_id, again.error


async def test_opencode_dies_on_the_same_prompt_passed_as_words(
    real_clis: dict[str, Path], jail: Sandbox
) -> None:
    """Why the prompt goes on stdin: opencode's own parser turns "42" into a number and fails."""
    adapter = get_adapter("opencode", flags=("--model", "nope/nope"))
    wrapper = str(jail.wrap(real_clis["opencode"], "opencode"))
    words = [wrapper, *adapter.argv(TurnRequest(prompt=PROMPT))[1:], "--", *PROMPT.split(" ")]
    outcome = await run_process(words, cwd=jail.work, env=jail.env(), timeout=TURN_TIMEOUT)
    result = adapter.parse(outcome.stdout, outcome.stderr, outcome.exit_code)
    assert result.error_kind == "exit" and "G.includes is not a function" in (result.error or ""), (
        result.error
    )


@pytest.mark.skipif(os.geteuid() != 0, reason="claude's refusal is of root")
async def test_claude_as_root_needs_is_sandbox_and_the_adapter_says_so_first(
    real_clis: dict[str, Path], root_jail: Sandbox
) -> None:
    adapter = get_adapter("claude")
    with pytest.raises(ValueError, match="IS_SANDBOX=1"):
        adapter.check_environment(root_jail.env(), 0)
    refused, outcome = await turn("claude", real_clis["claude"], root_jail, TurnRequest(prompt=PROMPT))
    assert refused.error_kind == "exit"
    assert "cannot be used with root/sudo privileges" in outcome.stderr
    sandboxed = {"IS_SANDBOX": "1"}
    adapter.check_environment({**root_jail.env(), **sandboxed}, 0)
    allowed, _ = await turn(
        "claude", real_clis["claude"], root_jail, TurnRequest(prompt=PROMPT), env=sandboxed
    )
    assert "Not logged in" in (allowed.error or ""), allowed.error
