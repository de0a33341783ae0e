"""``bot run --worktrees``: a real git repository, a real board, real ``bot run`` daemons.

Each thread the bot works in gets its own worktree and branch beside the
checkout; its fake harness commits there with real git. The tests read the
repository (``git worktree list``, branches, ``git log``), the thread's replies,
the daemon's state.json, its log (what it sent the board for each thread's
record) and the board's records (the thread's ``worktrees``).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from board.launcher.config import ConfigError, Options, resolve
from board.launcher.worktrees import GitError, Repo
from tests.launcher.botrun import BotProcess, mention, replies
from tests.launcher.fakeharness import Fake, read_jsonl
from tests.support.boardtest import World, eventually

WT = ["--worktrees"]


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, timeout=60, check=True
    )
    return done.stdout.strip()


def make_repo(path: Path, branch: str = "main") -> Path:
    """A checkout on branch with one commit."""
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "--quiet", "-b", branch)
    (path / "README").write_text("hello\n")
    git(path, "add", "README")
    git(path, "-c", "user.name=T", "-c", "user.email=t@example.invalid", "commit", "--quiet", "-m", "start")
    return path


def folder(bot: BotProcess, thread: int) -> Path:
    return bot.repo.parent / f"{bot.repo.name}.worktrees" / f"{bot.handle}-t{thread}"


def worktrees(bot: BotProcess) -> list[str]:
    """The checkout's threads' worktrees, as git lists them (not itself, nor the bot's spare)."""
    lines = git(bot.repo, "worktree", "list", "--porcelain").splitlines()
    paths = [line.split(" ", 1)[1] for line in lines if line.startswith("worktree ")]
    return [p for p in paths if Path(p) != bot.repo.resolve() and not Path(p).name.startswith(".")]


def branches(bot: BotProcess) -> list[str]:
    return git(bot.repo, "branch", "--format=%(refname:short)").splitlines()


def ahead(bot: BotProcess, branch: str) -> list[str]:
    """The subjects of branch's commits that main lacks."""
    return git(bot.repo, "log", "--format=%s", f"main..{branch}").splitlines()


def sent(bot: BotProcess, thread: int) -> list[str]:
    """The record states the daemon sent the board for thread, in order."""
    return [e["state"] for e in bot.events("worktree_record") if e["thread"] == thread]


async def board_records(world: World, thread: int) -> list[dict[str, Any]]:
    """The thread's worktree records as the board keeps them (GET /api/threads/{id} ``worktrees``)."""
    info = await world.human.thread(thread)
    assert "worktrees" in info, sorted(info)
    records: list[dict[str, Any]] = info["worktrees"]
    return records


async def check_records(world: World, bot: BotProcess, thread: int, states: list[str]) -> None:
    """The daemon sent these states, in order, the board took every one, and keeps the last."""
    # A record's log line follows the event that led to it (worktree_kept, then worktree_record).
    await eventually(lambda: sent(bot, thread) == states, f"the daemon to send {states!r}", timeout=30)
    assert not [e for e in bot.events("worktree_record_failed") if e["thread"] == thread]

    async def kept() -> list[dict[str, Any]] | None:  # the daemon logs a record as it sends it
        records = await board_records(world, thread)
        mine = [r for r in records if r["bot"] == bot.handle]
        return records if [r["state"] for r in mine] == states[-1:] else None

    records = await eventually(kept, f"the board to keep {states[-1]!r}", timeout=30)
    mine = [r for r in records if r["bot"] == bot.handle]
    assert len(mine) == 1 and mine[0]["state"] == states[-1], records


async def claimed(world: World, message_id: int) -> int:
    """pb holds the thread of message_id (claimed by its own token, as its harness would)."""
    await world.bot.claim(message_id, note="working on it")
    return message_id


async def saved_sessions(bot: BotProcess, count: int) -> dict[str, Any]:
    """The daemon's state file once it holds count sessions, each worktree's among them: it is
    saved again after a turn's record is sent, so under load a test that read it at once would
    see an older one."""

    def saved() -> dict[str, Any] | None:
        found = bot.state()
        sessions = found.get("sessions", {})
        worktrees_done = all(
            e.get("session") in sessions.values() for e in found.get("worktrees", {}).values()
        )
        return found if len(sessions) == count and worktrees_done else None

    return await eventually(saved, f"{count} sessions saved")


def calls_in(fake: Fake, path: Path) -> list[dict[str, Any]]:
    return [c for c in fake.calls() if c.get("step") and c["cwd"] == str(path)]


async def test_two_threads_at_once_get_two_worktrees_each_with_only_its_own_commit(
    tmp_path: Path, world: World, fake: Fake, make_bot: Callable[..., BotProcess]
) -> None:
    make_repo(tmp_path / "repo")
    fake.script(
        # Turns of 4 s: the second starts before the first ends, however slowly it is checked out.
        {"do": "commit", "path": "one.txt", "text": "1", "message": "first change", "delay": 4},
        {"do": "commit", "path": "two.txt", "text": "2", "message": "second change", "delay": 4},
        {"do": "ok"},
    )
    bot = await make_bot(args=WT).start().started()
    a = await mention(world, "change one")
    b = await mention(world, "change two")
    for thread in (a, b):
        await eventually(
            partial(calls_in, fake, folder(bot, thread)), f"a turn in thread {thread}'s worktree"
        )
    # Two turns at once, each with its board calls and its worktree's git inspection: on a
    # machine busy with other tests this took more than eventually's default of 15 s.
    await eventually(lambda: all(sent(bot, t) == ["live"] for t in (a, b)), "both turns' records", timeout=60)

    assert sorted(worktrees(bot)) == sorted(str(folder(bot, t)) for t in (a, b))
    assert {f"bot/pb/t{a}", f"bot/pb/t{b}"} <= set(branches(bot))
    subjects = [ahead(bot, f"bot/pb/t{t}") for t in (a, b)]
    assert sorted(subjects) == [["first change"], ["second change"]]
    assert git(bot.repo, "log", "--format=%s", "main") == "start"  # the checkout is untouched
    # The two turns ran at once (both started before either ended), each in its own session.
    turns = [e for e in bot.events() if e["event"] in ("turn_started", "turn_ended")]
    assert [e["event"] for e in turns] == ["turn_started", "turn_started", "turn_ended", "turn_ended"]
    assert {e["lane"] for e in turns} == {f"t{a}", f"t{b}"}
    state = await saved_sessions(bot, 2)
    assert set(state["sessions"]) == {f"t{a}", f"t{b}"}
    assert state["sessions"][f"t{a}"] != state["sessions"][f"t{b}"]
    for thread in (a, b):
        entry = state["worktrees"][str(thread)]
        assert entry["path"] == str(folder(bot, thread)) and entry["state"] == "live"
        assert entry["branch"] == f"bot/pb/t{thread}" and entry["base"] == "main"
        assert entry["session"] == state["sessions"][f"t{thread}"]
    commits = read_jsonl(fake.root / "commits.jsonl")
    assert sorted(c["cwd"] for c in commits) == sorted(str(folder(bot, t)) for t in (a, b))


async def test_a_done_thread_without_changes_leaves_no_worktree_and_no_branch(
    tmp_path: Path, world: World, fake: Fake, make_bot: Callable[..., BotProcess]
) -> None:
    make_repo(tmp_path / "repo")
    fake.script({"do": "ok", "text": "looked, nothing to change"})
    bot = await make_bot(args=WT).start().started()
    thread = await claimed(world, await mention(world, "have a look"))
    await eventually(lambda: bot.events("turn_ended"), "the first turn")
    await eventually(lambda: sent(bot, thread) == ["live"], "the live record")
    assert worktrees(bot) == [str(folder(bot, thread))]

    await world.human.done(thread, "nothing to do")
    await eventually(lambda: bot.events("worktree_removed"), "the worktree to be removed")
    assert worktrees(bot) == []
    assert not folder(bot, thread).exists()
    assert branches(bot) == ["main"]
    assert bot.state()["worktrees"] == {}
    await check_records(world, bot, thread, ["live", "removed"])  # the done event runs no turn
    assert not [r for r in await replies(world.human, thread, "pb") if "worktree" in r["body"]]


async def _kept_with_a_commit(
    tmp_path: Path, world: World, fake: Fake, make_bot: Callable[..., BotProcess], message: str
) -> tuple[BotProcess, int]:
    """A bot whose turn commits ``message`` in its thread's worktree, kept once the thread is done."""
    make_repo(tmp_path / "repo")
    fake.script(
        {"do": "commit", "path": "src/fix.py", "text": "print('fixed')\n", "message": message},
        {"do": "ok"},
    )
    bot = await make_bot(args=WT).start().started()
    thread = await claimed(world, await mention(world, "fix it"))
    await eventually(lambda: sent(bot, thread) == ["live"], "the live record")
    await world.human.done(thread, "thanks")
    await eventually(lambda: bot.events("worktree_kept"), "the worktree to be kept")
    return bot, thread


async def test_a_done_thread_with_a_commit_keeps_its_branch_and_says_so_once(
    tmp_path: Path, world: World, fake: Fake, make_bot: Callable[..., BotProcess]
) -> None:
    bot, thread = await _kept_with_a_commit(tmp_path, world, fake, make_bot, "fix @alice's bug")
    branch = f"bot/pb/t{thread}"
    assert ahead(bot, branch) == ["fix @alice's bug"]
    assert worktrees(bot) == [str(folder(bot, thread))]
    assert bot.state()["worktrees"][str(thread)]["state"] == "kept"
    assert bot.state()["worktrees"][str(thread)]["uncommitted"] == 0  # its keeper reports it clean

    said = await eventually(
        lambda: _kept_replies(world, thread), "the reply naming the kept branch", timeout=30
    )
    body = said[0]["body"]
    assert branch in body and "1 commit ahead of `main`" in body
    assert "src/fix.py | 1 +" in body
    assert "@\u200balice" in body and not said[0].get("mentions")  # wakes nobody
    await check_records(world, bot, thread, ["live", "kept"])
    sha = git(bot.repo, "rev-parse", "--short", branch)
    assert sha in body
    # One reply, whatever comes later in the thread.
    await world.human.post("one more thing", reply_to=thread)
    # The done event ran no turn: the follow-up is the second.
    await eventually(lambda: len(bot.events("turn_ended")) >= 2, "the turn on the follow-up")
    assert len(await _kept_replies(world, thread)) == 1


async def test_a_thread_the_bot_was_only_mentioned_in_closes_its_worktree_when_done(
    tmp_path: Path, world: World, fake: Fake, make_bot: Callable[..., BotProcess]
) -> None:
    """A bot mentioned in a thread (an issue from the forge) that committed without posting in
    it never heard of the thread's done: the event reached the holder and those who posted, so
    the worktree stayed live for good and took one of the bot's max_worktrees."""
    make_repo(tmp_path / "repo")
    fake.script({"do": "commit", "path": "fix.txt", "text": "fixed\n", "message": "fix it"}, {"do": "ok"})
    bot = await make_bot(args=WT).start().started()
    thread = await mention(world, "fix it")
    await eventually(lambda: sent(bot, thread) == ["live"], "the live record")
    assert not await replies(world.human, thread, "pb")

    async def reaches_pb() -> bool:
        """Whether the thread's newest message, a claim event, is in pb's wake feed."""
        last = (await world.human.thread(thread))["messages"][-1]
        assert last["kind"] == "event", last
        fed = await world.bot.wake(since=last["id"] - 1, wait=0)
        return last["id"] in [m["id"] for m in fed["messages"]]

    await world.human.claim(thread)  # a claim ends nothing: it is not pb's news (it would cost a wake)
    assert not await reaches_pb()
    await world.human.done(thread, "the issue was closed")
    assert await reaches_pb()
    await eventually(lambda: bot.events("worktree_kept"), "the worktree to be kept", timeout=30)
    await check_records(world, bot, thread, ["live", "kept"])
    assert len(bot.events("turn_ended")) == 1


async def test_a_kept_worktree_deleted_by_hand_reads_removed_on_its_thread_with_its_commits(
    tmp_path: Path, world: World, fake: Fake, make_bot: Callable[..., BotProcess]
) -> None:
    bot, thread = await _kept_with_a_commit(tmp_path, world, fake, make_bot, "fix it")
    await check_records(world, bot, thread, ["live", "kept"])

    shutil.rmtree(folder(bot, thread))  # the person deletes the folder by hand
    await mention(world, "something else")  # the daemon looks again after its next turn

    async def removed() -> dict[str, Any] | None:
        [record] = await board_records(world, thread)
        return record if record["state"] == "removed" else None

    record = await eventually(removed, "the record to read removed", timeout=30)
    assert [c["subject"] for c in record["commits"]] == ["fix it"] and record["ahead"] == 1
    assert "removed outside the board" in record["detail"]
    # The daemon tells the board before it forgets the entry and writes its state file.
    await eventually(lambda: str(thread) not in bot.state()["worktrees"], "the entry forgotten")
    assert not bot.events("worktree_gone_failed")


async def _kept_replies(world: World, thread: int) -> list[dict[str, Any]]:
    return [r for r in await replies(world.human, thread, "pb") if "kept my worktree" in r["body"]]


async def test_a_third_thread_waits_for_one_of_two_worktrees(
    tmp_path: Path, world: World, fake: Fake, make_bot: Callable[..., BotProcess]
) -> None:
    make_repo(tmp_path / "repo")
    fake.script({"do": "ok"})
    bot = await make_bot(args=[*WT, "--max-worktrees", "2"]).start().started()
    first = await claimed(world, await mention(world, "one"))
    second = await mention(world, "two")
    await eventually(lambda: len(bot.events("turn_ended")) >= 2, "two turns")
    third = await mention(world, "three")
    await eventually(lambda: sent(bot, third) == ["waiting"], "the third thread's waiting record")
    assert bot.events("worktree_waiting")[0]["thread"] == third
    await eventually(lambda: len(bot.events("turn_ended")) >= 2, "nothing more")
    assert not calls_in(fake, folder(bot, third)) and len(worktrees(bot)) == 2

    await world.human.done(first)
    await eventually(lambda: calls_in(fake, folder(bot, third)), "the third thread's turn")
    removed = bot.events("worktree_removed")
    assert [e["thread"] for e in removed] == [first]
    made = [e for e in bot.events() if e["event"] in ("worktree_removed", "worktree_made")]
    assert [e.get("thread") for e in made][-2:] == [first, third]  # made only once the first was gone
    assert sorted(worktrees(bot)) == sorted(str(folder(bot, t)) for t in (second, third))
    await eventually(lambda: sent(bot, third) == ["waiting", "live"], "the third's live record")
    await check_records(world, bot, third, ["waiting", "live"])


async def test_a_daemon_killed_mid_turn_adopts_its_worktree_and_keeps_the_commit(
    tmp_path: Path, world: World, fake: Fake, make_bot: Callable[..., BotProcess]
) -> None:
    make_repo(tmp_path / "repo")
    fake.script(
        {
            "do": "commit",
            "path": "half.txt",
            "text": "x",
            "message": "half done",
            "then": "hang",
            "seconds": 60,
        },
        {"do": "ok", "text": "finished"},
    )
    bot = await make_bot(args=WT).start().started()
    thread = await mention(world, "long job")
    await eventually(lambda: read_jsonl(fake.root / "commits.jsonl"), "the commit inside the turn")
    await bot.kill()
    assert ahead(bot, f"bot/pb/t{thread}") == ["half done"]

    await bot.start().started()
    await eventually(
        lambda: len(calls_in(fake, folder(bot, thread))) >= 2, "the interrupted turn to run again"
    )
    assert bot.events("orphan_killed")
    assert len(bot.events("worktree_made")) == 1  # by the first run; the second found it in state.json
    assert worktrees(bot) == [str(folder(bot, thread))]
    assert branches(bot) == ["bot/pb/t" + str(thread), "main"]
    assert ahead(bot, f"bot/pb/t{thread}") == ["half done"]
    assert list(bot.state()["worktrees"]) == [str(thread)]


async def test_a_daemon_restarted_adopts_a_worktree_its_state_lost(
    tmp_path: Path, world: World, fake: Fake, make_bot: Callable[..., BotProcess]
) -> None:
    """A worktree git lists under the bot's folder but state.json does not name is adopted, not made again."""
    repo = make_repo(tmp_path / "repo")
    thread = await mention(world, "pick this up")
    path = repo.parent / "repo.worktrees" / f"pb-t{thread}"
    git(repo, "worktree", "add", "--quiet", "-b", f"bot/pb/t{thread}", str(path), "main")
    fake.script({"do": "ok"})
    bot = await make_bot(args=WT).start().started()
    await eventually(lambda: calls_in(fake, path), "the turn in the adopted worktree")
    assert [e["thread"] for e in bot.events("worktree_adopted")] == [thread]
    assert not bot.events("worktree_made")
    assert worktrees(bot) == [str(path)]


@pytest.mark.parametrize(
    ("args", "env", "line"),
    [
        (
            ["--worktrees", "--base-branch", "release/9"],
            {},
            "bot: base branch 'release/9' does not exist in {repo}",
        ),
        (
            ["--worktrees"],
            {"BOT_BASE_BRANCH": "release/9"},
            "bot: base branch 'release/9' does not exist in {repo}",
        ),
        ([], {"BOT_WORKTREES": "1", "BOT_BASE_BRANCH": "-x"}, "bot: base branch '-x' must be 1-200 of"),
        (["--worktrees", "--max-worktrees", "33"], {}, "bot: max worktrees must be 1..32, not 33"),
        (
            ["--worktrees", "--pool", "{pool}", "--base-branch", "-x"],
            {},
            "bot: base branch '-x' must be 1-200 of",
        ),
    ],
)
async def test_start_refuses_a_bad_worktree_setting_with_one_line(
    tmp_path: Path,
    fake: Fake,
    make_bot: Callable[..., BotProcess],
    args: list[str],
    env: dict[str, str],
    line: str,
) -> None:
    make_repo(tmp_path / "repo")
    pool = str(tmp_path / "pool")
    bot = make_bot(args=[a.replace("{pool}", pool) for a in args], **env).start()
    assert await bot.wait_exit() == 2
    out = bot.output().strip()
    assert len(out.splitlines()) == 1 and out.startswith(line.format(repo=bot.repo.resolve())), out
    assert not (tmp_path / "repo.worktrees").exists() and not bot.events("started")
    assert not fake.calls()


async def test_start_refuses_worktrees_in_a_folder_that_is_not_a_git_checkout(
    tmp_path: Path, make_bot: Callable[..., BotProcess]
) -> None:
    bot = make_bot(args=WT).start()
    assert await bot.wait_exit() == 2
    out = bot.output().strip()
    assert out == f"bot: repo {bot.repo.resolve()} is not a git checkout (worktrees need one)"


async def test_a_checkout_gone_after_start_holds_the_thread_and_says_why_on_it(
    tmp_path: Path, world: World, fake: Fake, make_bot: Callable[..., BotProcess]
) -> None:
    """Its message read 'queued' and the thread nothing while the daemon retried git in a
    folder that was no more: the human had no way to learn the bot could not work there."""
    make_repo(tmp_path / "repo")
    fake.script({"do": "ok"})
    bot = await make_bot(args=WT).start().started()
    await eventually(lambda: bot.events("worktree_spare_ready"), "the spare worktree")
    shutil.rmtree(bot.repo)
    thread = await mention(world, "change one")

    async def waiting() -> list[dict[str, Any]] | None:
        records = await board_records(world, thread)
        return records if [r["state"] for r in records] == ["waiting"] else None

    (record,) = await eventually(waiting, "the thread's record to read waiting", timeout=30)
    assert record["detail"].startswith("no worktree: git worktree list: fatal: cannot change to")
    (message,) = (await world.human.thread(thread))["messages"]
    assert [(d["state"], d["reason"]) for d in message["delivery"]] == [
        ("held", f"worktrees: {record['detail']}")
    ]
    await eventually(lambda: len(bot.events("worktree_failed")) >= 2, "a second try", timeout=30)
    assert sent(bot, thread) == ["waiting"]  # once per run of failures, not once a try
    assert not fake.calls()


def test_git_runs_only_in_the_checkout_or_its_worktrees_folder(tmp_path: Path) -> None:
    repo = Repo(make_repo(tmp_path / "repo"))
    elsewhere = make_repo(tmp_path / "other")
    with pytest.raises(GitError, match="refusing to run git in"):
        repo.git(elsewhere, "status")
    with pytest.raises(GitError, match="refusing to run git in"):
        repo.git(tmp_path / "repo.worktrees-evil", "status")
    assert repo.git(repo.path, "status", "--porcelain").returncode == 0


def test_close_keeps_a_worktree_with_uncommitted_work_and_never_deletes_an_unmerged_branch(
    tmp_path: Path,
) -> None:
    repo = Repo(make_repo(tmp_path / "repo"))
    path, branch, made = repo.ensure("pb", 7, "main")
    assert made and path == tmp_path / "repo.worktrees" / "pb-t7" and branch == "bot/pb/t7"
    for n in range(7):
        (path / f"draft{n}.txt").write_text("not yet committed\n")
    kept = repo.close(path, branch, "main")
    assert kept.dirty == 7 and kept.ahead == 0 and path.is_dir() and repo.has_branch(branch)
    assert kept.dirty_paths == [f"draft{n}.txt" for n in range(5)]  # the first few, for the fleet page
    for n in range(7):
        (path / f"draft{n}.txt").unlink()
    git(
        path,
        "-c",
        "user.name=T",
        "-c",
        "user.email=t@example.invalid",
        "commit",
        "--quiet",
        "--allow-empty",
        "-m",
        "x",
    )
    kept = repo.close(path, branch, "main")
    assert kept.ahead == 1 and kept.commits[0]["subject"] == "x" and path.is_dir() and repo.has_branch(branch)
    # The same thread again: its worktree is adopted, not made twice.
    assert repo.ensure("pb", 7, "main") == (path, branch, False)


def test_a_spare_worktree_becomes_the_next_threads_on_its_branch_at_the_current_base(tmp_path: Path) -> None:
    repo = Repo(make_repo(tmp_path / "repo"))
    assert repo.make_spare("pb", "main") and not repo.make_spare("pb", "main")  # one at a time
    spare = repo.spare_path("pb")
    assert repo.listed() == {spare: ""}
    git(
        repo.path,
        "-c",
        "user.name=T",
        "-c",
        "user.email=t@example.invalid",
        "commit",
        "-q",
        "--allow-empty",
        "-m",
        "newer",
    )
    path, branch, made = repo.ensure("pb", 9, "main")
    assert made and repo.listed() == {path: branch}  # the spare was moved, not copied
    assert (
        git(path, "log", "-1", "--format=%s") == "newer" and git(path, "branch", "--show-current") == branch
    )
    # A spare with work in it is never taken: the next thread gets a checkout of its own.
    repo.make_spare("pb", "main")
    (spare / "stray.txt").write_text("someone's\n")
    other, _, _ = repo.ensure("pb", 10, "main")
    assert other != spare and spare in repo.listed() and (spare / "stray.txt").exists()


def test_the_profile_turns_worktrees_on_and_names_the_base_and_flags_win(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    git(repo, "branch", "release/8")
    profile = {"harness": "claude", "worktrees": True, "max_worktrees": 3, "base_branch": "release/8"}
    cfg = resolve(Options(repo=str(repo)), {}, token="t", handle="pb", profile=profile)
    assert (cfg.worktrees, cfg.max_worktrees, cfg.base_branch) == (True, 3, "release/8")
    flags = Options(repo=str(repo), max_worktrees=5, base_branch="main")
    cfg = resolve(flags, {"BOT_MAX_WORKTREES": "2"}, token="t", handle="pb", profile=profile)
    assert (cfg.max_worktrees, cfg.base_branch) == (5, "main")
    cfg = resolve(Options(repo=str(repo), worktrees=False), {}, token="t", handle="pb", profile=profile)
    assert not cfg.worktrees
    cfg = resolve(Options(repo=str(repo)), {"BOT_WORKTREES": "0"}, token="t", handle="pb", profile=profile)
    assert not cfg.worktrees
    cfg = resolve(
        Options(repo=str(repo)), {}, token="t", handle="pb", profile={"harness": "claude", "worktrees": True}
    )
    assert cfg.base_branch == "main"  # the checkout's current branch
    with pytest.raises(ConfigError, match=r"^base branch 'release/9' does not exist in "):
        resolve(
            Options(repo=str(repo)),
            {},
            token="t",
            handle="pb",
            profile={**profile, "base_branch": "release/9"},
        )


async def test_a_handoff_to_a_bot_on_the_same_checkout_starts_its_worktree_from_the_first_bots_branch(
    tmp_path: Path, world: World, fake: Fake, make_bot: Callable[..., BotProcess]
) -> None:
    make_repo(tmp_path / "repo")
    fake.script({"do": "commit", "path": "part1.txt", "text": "1", "message": "part one"}, {"do": "ok"})
    a = await make_bot(args=WT).start().started()
    b = await make_bot(args=WT, handle="pb2").start().started()
    thread = await claimed(world, await mention(world, "start this"))
    await eventually(lambda: sent(a, thread) == ["live"], "pb's live record")
    assert not b.events("worktree_made")

    await world.human.handoff(thread, "pb2", "pb2 finishes it")
    await eventually(lambda: calls_in(fake, folder(b, thread)), "pb2's turn in its own worktree")
    await eventually(lambda: sent(b, thread) == ["live"], "pb2's live record")
    await eventually(lambda: sent(a, thread)[-1:] == ["kept"], "pb's kept record")

    made = b.events("worktree_made")
    assert [(e["thread"], e["start"]) for e in made] == [(thread, f"bot/pb/t{thread}")]
    assert not b.events("handoff_branch_missing")
    # pb2's checkout has pb's commit, on a branch of its own; pb's branch and folder are as pb left them.
    assert git(folder(b, thread), "branch", "--show-current") == f"bot/pb2/t{thread}"
    assert git(folder(b, thread), "log", "--format=%s") == "part one\nstart"
    assert (folder(b, thread) / "part1.txt").read_text() == "1"
    assert ahead(a, f"bot/pb/t{thread}") == ["part one"] and folder(a, thread).is_dir()
    said = await eventually(lambda: _kept_replies(world, thread), "pb's reply naming its branch")
    assert f"bot/pb/t{thread}" in said[0]["body"]
    assert sorted(worktrees(a)) == sorted(str(folder(bot, thread)) for bot in (a, b))
    assert b.state()["worktrees"][str(thread)]["state"] == "live"
    assert a.state()["worktrees"][str(thread)]["state"] == "kept"

    # The board keeps both: pb's kept (with its commit) and pb2's live (sent after its log line).
    async def both() -> dict[str, dict[str, Any]] | None:
        found = {r["bot"]: r for r in await board_records(world, thread)}
        return found if found.keys() == {"pb", "pb2"} and found["pb2"]["state"] == "live" else None

    records = await eventually(both, "the board to keep both records", timeout=30)
    assert records["pb"]["state"] == "kept" and records["pb"]["ahead"] == 1
    assert records["pb"]["branch"] == f"bot/pb/t{thread}"
    assert records["pb"]["commits"][0]["subject"] == "part one"
    assert records["pb2"]["state"] == "live" and records["pb2"]["branch"] == f"bot/pb2/t{thread}"
    assert records["pb2"]["path"] == str(folder(b, thread))
    for bot in (a, b):
        assert not [e for e in bot.events("worktree_record_failed") if e["thread"] == thread]


def bot_status(bot: BotProcess, *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "board", "bot", "status", bot.handle, *args],
        env=bot.env,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


async def test_bot_status_lists_the_bots_worktrees_from_its_state(
    tmp_path: Path, world: World, fake: Fake, make_bot: Callable[..., BotProcess]
) -> None:
    make_repo(tmp_path / "repo")
    fake.script({"do": "commit", "path": "a.txt", "text": "a", "message": "change a"}, {"do": "ok"})
    bot = await make_bot(args=WT).start().started()
    kept = await claimed(world, await mention(world, "change a"))
    await eventually(lambda: sent(bot, kept) == ["live"], "the first thread's live record")
    live = await mention(world, "look at b")
    await eventually(lambda: sent(bot, live) == ["live"], "the second thread's live record")
    await world.human.done(kept, "thanks")
    await eventually(lambda: bot.events("worktree_kept"), "the first worktree to be kept")

    lines = bot_status(bot).splitlines()
    assert lines[0].startswith("pb: running (pid ")
    assert lines[1:] == [
        f"  worktree t{kept}: bot/pb/t{kept} kept, {lines[1].split(', ')[1]}, {folder(bot, kept)}",
        f"  worktree t{live}: bot/pb/t{live} live, {lines[2].split(', ')[1]}, {folder(bot, live)}",
    ]
    assert all(line.split(", ")[1].removesuffix(" old")[-1] in "sm" for line in lines[1:])
    info = json.loads(bot_status(bot, "--json"))
    trees = info["worktrees"]
    assert [(t["thread"], t["branch"], t["state"], t["path"], t["gone"]) for t in trees] == [
        (kept, f"bot/pb/t{kept}", "kept", str(folder(bot, kept)), False),
        (live, f"bot/pb/t{live}", "live", str(folder(bot, live)), False),
    ]
    assert all(0 <= t["age_s"] < 120 for t in trees)

    # A kept worktree removed by hand: status says its folder is gone (the daemon forgets it later).
    await bot.close()
    git(bot.repo, "worktree", "remove", "--force", str(folder(bot, kept)))
    lines = bot_status(bot).splitlines()
    assert lines[0].startswith("pb: stopped") and lines[1].endswith(f"{folder(bot, kept)} (folder gone)")
    assert not lines[2].endswith("(folder gone)")


async def project_channel(tmp_path: Path, world: World) -> None:
    """The channel wordsnap, whose topic names a repository (a pool clones it), on main with one commit."""
    work = make_repo(tmp_path / "work")
    origin = tmp_path / "origin.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(work), str(origin)], check=True, timeout=60)
    await world.human.create_channel("wordsnap", topic=f"The game. Repo: file://{origin}", workspace="proj")


async def test_pool_mode_gives_two_threads_of_one_project_channel_two_worktrees_of_its_checkout(
    tmp_path: Path, world: World, fake: Fake, make_bot: Callable[..., BotProcess]
) -> None:
    await project_channel(tmp_path, world)
    await world.human.create_channel("misc", topic="anything else", workspace="proj")
    fake.script(
        # Turns of 4 s: the second starts before the first ends, however slowly it is checked out.
        {"do": "commit", "path": "one.txt", "text": "1", "message": "first change", "delay": 4},
        {"do": "commit", "path": "two.txt", "text": "2", "message": "second change", "delay": 4},
        {"do": "ok"},
    )
    pool = tmp_path / "pool"
    bot = await make_bot(args=["--pool", str(pool), *WT]).start().started()
    checkout = pool / "wordsnap"
    assert git(checkout, "log", "--format=%s") == "start"

    a = int((await world.human.post("the score is wrong", channel="wordsnap", workspace="proj"))["id"])
    b = int((await world.human.post("@pb the timer too", channel="wordsnap", workspace="proj"))["id"])
    trees = {t: pool / "wordsnap.worktrees" / f"pb-t{t}" for t in (a, b)}
    for thread, path in trees.items():
        await eventually(partial(calls_in, fake, path), f"a turn in thread {thread}'s worktree")
    # Two turns at once, each with its board calls and its worktree's git inspection: on a
    # machine busy with other tests this took more than eventually's default of 15 s.
    await eventually(lambda: all(sent(bot, t) == ["live"] for t in (a, b)), "both turns' records", timeout=60)

    listed = git(checkout, "worktree", "list", "--porcelain").splitlines()
    paths = {line.split(" ", 1)[1] for line in listed if line.startswith("worktree ")}
    assert {str(p) for p in trees.values()} <= paths and str(checkout) in paths
    subjects = sorted(git(checkout, "log", "--format=%s", f"main..bot/pb/t{t}") for t in (a, b))
    assert subjects == ["first change", "second change"]
    assert git(checkout, "log", "--format=%s", "main") == "start"  # the channel's checkout is untouched
    assert not [c for c in fake.calls() if c.get("step") and c["cwd"] == str(checkout)]
    turns = [e for e in bot.events() if e["event"] in ("turn_started", "turn_ended")]
    assert [e["event"] for e in turns] == ["turn_started", "turn_started", "turn_ended", "turn_ended"]

    state = await saved_sessions(bot, 2)
    assert set(state["sessions"]) == {f"t{a}", f"t{b}"}
    assert state["sessions"][f"t{a}"] != state["sessions"][f"t{b}"]
    assert {k: (e["path"], e["state"], e["base"]) for k, e in state["worktrees"].items()} == {
        str(t): (str(path), "live", "main") for t, path in trees.items()
    }
    for thread in (a, b):
        await check_records(world, bot, thread, ["live"])

    # A channel that is not a project keeps its one session in its own folder, with no worktree.
    asked = await world.human.post("@pb what is 2+2", channel="misc", workspace="proj")
    await eventually(lambda: len(bot.events("turn_ended")) >= 3, "the turn in misc")
    assert [c["BOARD_WAKE_IDS"] for c in calls_in(fake, pool / "misc")] == [str(asked["id"])]
    after = await saved_sessions(bot, 3)
    assert set(after["sessions"]) == {f"t{a}", f"t{b}", "misc"}
    assert set(after["worktrees"]) == {str(a), str(b)}
    assert not (pool / "misc.worktrees").exists() and not sent(bot, int(asked["id"]))

    # Done with a commit: kept, in the channel's checkout. A restarted daemon takes the other up again.
    await world.human.done(a, "thanks")
    await eventually(lambda: bot.events("worktree_kept"), "the first thread's worktree to be kept")
    assert [e["path"] for e in bot.events("worktree_kept")] == [str(trees[a])]
    await check_records(world, bot, a, ["live", "kept"])
    await bot.close()
    await bot.start().started()
    await world.human.post("and the timer's colour", reply_to=b)
    await eventually(lambda: len(calls_in(fake, trees[b])) == 2, "the follow-up in b's worktree")
    assert len(bot.events("worktree_made")) == 2 and not bot.events("worktree_adopted")
    assert bot.state()["sessions"][f"t{b}"] == state["sessions"][f"t{b}"]
    assert not bot.events("crashed") and not bot.events("worktree_failed")


async def test_pool_mode_with_a_base_branch_a_checkout_lacks_runs_no_turn_there_and_says_why(
    tmp_path: Path, world: World, fake: Fake, make_bot: Callable[..., BotProcess]
) -> None:
    await project_channel(tmp_path, world)
    fake.script({"do": "ok"})
    pool = tmp_path / "pool"
    bot = await make_bot(args=["--pool", str(pool), *WT, "--base-branch", "release/9"]).start().started()
    why = f"base branch 'release/9' does not exist in {pool / 'wordsnap'}"
    assert [(e.get("channel"), e["error"]) for e in bot.events("worktree_failed")] == [("wordsnap", why)]

    thread = int((await world.human.post("@pb fix the score", channel="wordsnap", workspace="proj"))["id"])
    await eventually(
        lambda: [e for e in bot.events("worktree_failed") if e.get("thread") == thread],
        "the thread's failure",
    )
    assert {e["error"] for e in bot.events("worktree_failed")} == {why}
    assert not fake.calls() and not bot.events("turn_started") and not bot.events("crashed")
    assert not (pool / "wordsnap.worktrees").exists() and bot.state()["worktrees"] == {}
