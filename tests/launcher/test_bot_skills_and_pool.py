"""--skill linking, and pool mode's reading of channel topics and its clones."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from board.launcher.config import ConfigError
from board.launcher.pool import clone, git_url, redact_url
from board.launcher.skills import install, link, prompt_note, skills_dir
from tests.launcher.botrun import BotProcess


def make_skill(path: Path, name: str | None = None) -> Path:
    path.mkdir(parents=True)
    front = f"---\nname: {name}\ndescription: d\n---\n" if name else ""
    (path / "SKILL.md").write_text(front + "Do the thing.\n")
    return path


def git_repo_with_skill(tmp_path: Path) -> Path:
    """A bare repository (file:// URL) holding a SKILL.md at its root."""
    work = make_skill(tmp_path / "src", "from-git")
    run = ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid"]
    subprocess.run([*run, "init", "-q"], cwd=work, check=True)
    subprocess.run([*run, "add", "SKILL.md"], cwd=work, check=True)
    subprocess.run([*run, "commit", "-q", "-m", "skill"], cwd=work, check=True)
    bare = tmp_path / "review-skill.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(work), str(bare)], check=True)
    return bare


def test_each_harness_has_the_skills_folder_the_board_names_in_its_prompt(tmp_path: Path) -> None:
    from board.server.services.registry import SKILL_DIRS as BOARD_SKILL_DIRS

    assert skills_dir("claude", tmp_path) == tmp_path / ".claude/skills"
    assert skills_dir("opencode", tmp_path) == tmp_path / ".config/opencode/skills"
    for harness, folder in BOARD_SKILL_DIRS.items():
        assert str(skills_dir(harness, Path("~"))) == folder


def test_a_skill_is_linked_under_its_name_and_relinked_safely(tmp_path: Path) -> None:
    folder = tmp_path / "home/.claude/skills"
    skill = link(make_skill(tmp_path / "a", "tidy-up"), folder)
    assert skill.name == "tidy-up" and (folder / "tidy-up").is_symlink()
    assert skill.path == folder / "tidy-up" / "SKILL.md" and skill.path.exists()
    newer = link(make_skill(tmp_path / "b", "tidy-up"), folder)  # our own link: replaced
    assert (folder / "tidy-up").resolve() == (tmp_path / "b").resolve() and newer.name == "tidy-up"
    assert link(make_skill(tmp_path / "plain"), folder).name == "plain"  # no front matter: dir name
    (folder / "mine").mkdir()
    with pytest.raises(ConfigError, match="not a link"):
        link(make_skill(tmp_path / "c", "mine"), folder)
    with pytest.raises(ConfigError, match=r"no SKILL\.md"):
        link(tmp_path, folder)
    assert "tidy-up" in prompt_note([skill])


async def test_a_git_url_skill_is_cloned_into_the_state_directory(tmp_path: Path) -> None:
    bare = git_repo_with_skill(tmp_path)
    home = tmp_path / "home"
    skills = await install(
        [f"file://{bare}"],
        harness="codex",
        state_dir=tmp_path / "state",
        home=home,
        environ={"PATH": "/usr/bin:/bin"},
    )
    assert [s.name for s in skills] == ["from-git"]
    assert (tmp_path / "state/skills/review-skill/SKILL.md").exists()
    assert (home / ".agents/skills/from-git").resolve() == (tmp_path / "state/skills/review-skill").resolve()


def test_the_git_url_in_a_topic() -> None:
    assert (
        git_url("Wordsnap. Repo: https://github.com/o/wordsnap.git, ask @pb")
        == "https://github.com/o/wordsnap.git"
    )
    assert git_url("repo git@github.com:o/w.git") == "git@github.com:o/w.git"
    assert git_url("see file:///srv/git/w.git") == "file:///srv/git/w.git"
    assert git_url("ssh://git@host/w") == "ssh://git@host/w"
    assert git_url("docs at https://example.com/guide") is None
    assert git_url("") is None and git_url(None) is None
    assert redact_url("https://user:s3cret@host/x.git") == "https://***@host/x.git"


async def test_a_clone_that_fails_leaves_nothing_behind(tmp_path: Path) -> None:
    dest = tmp_path / "proj"
    why = await clone(f"file://{tmp_path}/missing.git", dest, timeout=30, env={"PATH": "/usr/bin:/bin"})
    assert why is not None and "exited" in why
    assert not dest.exists() and not (tmp_path / ".proj.cloning").exists()


async def test_a_refusal_found_after_the_lock_ends_the_output_in_words(
    tmp_path: Path, make_bot: Callable[..., BotProcess]
) -> None:
    """A skill folder without SKILL.md is found once the daemon holds its lock; it ends the output
    as a refusal found before does, in words: its last line is why on /fleet and in board doctor."""
    empty = tmp_path / "no-skill"
    empty.mkdir()
    bot = make_bot(args=["--skill", str(empty)]).start()
    assert await bot.wait_exit() == 2
    last = bot.output().strip().splitlines()[-1]
    assert last.startswith("bot: --skill ") and last.endswith("no SKILL.md there"), last
