"""bot run's configuration: flags over environment over profile; the token file's rules."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from board.launcher.config import (
    ConfigError,
    Options,
    make_adapter,
    read_token_file,
    resolve,
    state_dir,
    state_root,
    token_for,
)
from tests.launcher.fakeharness import FAKES_BIN, SANDBOX_ENV

ON_PATH = {"PATH": str(FAKES_BIN), **SANDBOX_ENV}  # the fake harnesses, found as the real ones would be


def test_state_directory_defaults_to_xdg_state_and_can_be_moved(tmp_path: Path) -> None:
    home = str(Path.home())
    assert state_root({}) == Path(home) / ".local/state/bot-board/bots"
    assert state_root({"XDG_STATE_HOME": str(tmp_path)}) == tmp_path / "bot-board/bots"
    assert state_dir({"BOT_STATE_DIR": str(tmp_path)}, "box3-x") == tmp_path / "box3-x"
    with pytest.raises(ConfigError):
        state_dir({}, "../etc")


def test_a_token_file_readable_by_others_is_refused(tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text("bb_secret\n")
    token.chmod(0o644)
    with pytest.raises(ConfigError, match="chmod 600"):
        read_token_file(token)
    token.chmod(0o600)
    assert read_token_file(token) == "bb_secret"
    with pytest.raises(ConfigError, match="no token"):
        read_token_file(tmp_path / "missing")


def test_board_token_wins_over_the_token_file(tmp_path: Path) -> None:
    env = {"BOT_STATE_DIR": str(tmp_path)}
    (tmp_path / "pb").mkdir()
    (tmp_path / "pb" / "token").write_text("bb_file")
    os.chmod(tmp_path / "pb" / "token", 0o600)
    assert token_for("pb", env) == "bb_file"
    assert token_for("pb", {**env, "BOARD_TOKEN": "bb_env"}) == "bb_env"
    with pytest.raises(ConfigError):
        token_for(None, env)


def test_flags_beat_environment_beat_profile(tmp_path: Path) -> None:
    env = {"BOT_STATE_DIR": str(tmp_path), "BOT_WATCH": "env-chan", "BOT_JITTER": "3"}
    profile = {"harness": "codex", "watch": ["prof-chan"], "goal": 12, "model": "m1", "flags": ["-c", "a=b"]}
    cfg = resolve(Options(repo=str(tmp_path)), env, token="t", handle="pb", profile=profile)
    assert cfg.harness == "codex" and cfg.watch == ("env-chan",) and cfg.goal == 12 and cfg.jitter == 3
    assert cfg.model == "m1" and cfg.flags == ("-c", "a=b")
    cfg = resolve(
        Options(repo=str(tmp_path), harness="gemini", watch="ab,cd", jitter=0),
        env,
        token="t",
        handle="pb",
        profile=profile,
    )
    assert cfg.harness == "gemini" and cfg.watch == ("ab", "cd") and cfg.jitter == 0
    assert resolve(Options(repo=str(tmp_path)), {}, token="t", handle="pb", profile=profile).watch == (
        "prof-chan",
    )


def test_configuration_errors_say_what_to_change(tmp_path: Path) -> None:
    def bad(options: Options, env: dict[str, str] | None = None) -> str:
        with pytest.raises(ConfigError) as info:
            resolve(options, env or {}, token="t", handle="pb")
        return str(info.value)

    assert "--harness" in bad(Options(repo=str(tmp_path)))
    assert "unknown harness" in bad(Options(repo=str(tmp_path), harness="vim"))
    assert "not a directory" in bad(Options(repo=str(tmp_path / "nope"), harness="claude"))
    assert "BOT_TURN_TIMEOUT" in bad(Options(repo=str(tmp_path), harness="claude"), {"BOT_TURN_TIMEOUT": "x"})
    assert "channel slug" in bad(Options(repo=str(tmp_path), harness="claude", watch="Bad Slug"))


def test_profile_flags_apply_unless_the_environment_sets_its_own(tmp_path: Path) -> None:
    profile = {"harness": "claude", "flags": "--max-turns 5"}
    cfg = resolve(Options(repo=str(tmp_path)), ON_PATH, token="t", handle="pb", profile=profile)
    assert make_adapter(cfg).flags == ("--max-turns", "5")
    cfg = resolve(
        Options(repo=str(tmp_path)),
        {"BOT_CLAUDE_FLAGS": "--max-turns 9", **ON_PATH},
        token="t",
        handle="pb",
        profile=profile,
    )
    assert make_adapter(cfg).flags == ("--max-turns", "9")
    locked = resolve(
        Options(repo=str(tmp_path)),
        ON_PATH,
        token="t",
        handle="pb",
        profile={"harness": "claude", "flags": "--resume x"},
    )
    with pytest.raises(ConfigError, match="may not set --resume"):
        make_adapter(locked)
