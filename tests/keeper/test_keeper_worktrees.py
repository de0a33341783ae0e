"""The keeper and a bot's worktrees, on a real git repository with real worktrees.

It reports each one its bot's state file lists (with its size, and never one whose
folder is gone, though it tells the board once of a kept one whose folder is gone), and
carries out a ``remove_worktree`` order only for a worktree
listed as kept that lies in the bot's ``<repo>.worktrees`` folder as
``<handle>-t<thread>`` and that the repo's git knows: anything else is acked
``ok=false`` with why, and nothing on disk changes. The branch always stays.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from board.keeper import worktrees
from board.keeper.config import Enrolled, Timing
from board.keeper.daemon import Keeper
from board.keeper.supervisor import Supervisor
from board.launcher.logs import EventLog
from tests.fleet.test_fleet_api import fleet_setup
from tests.launcher.fakeharness import read_jsonl
from tests.support.boardtest import World
from tests.support.fleettest import Keeper as FleetKeeper
from tests.worktrees.test_worktree_fleet import fb1_of


def git(cwd: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, timeout=60, check=True)
    return done.stdout


def make_repo(root: Path) -> Path:
    """A checkout on ``main`` with one commit, as a bot's repo."""
    repo = root / "src" / "app"
    repo.mkdir(parents=True)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "config", "user.email", "dev@example.org")
    git(repo, "config", "user.name", "Dev")
    (repo / "README").write_text("app\n")
    git(repo, "add", "README")
    git(repo, "commit", "-q", "-m", "start")
    return repo


def add_worktree(repo: Path, handle: str, thread: int, *, commit: bool = True) -> Path:
    """The daemon's layout: ``<repo>.worktrees/<handle>-t<thread>`` on ``bot/<handle>/t<thread>``."""
    path = repo.parent / f"{repo.name}.worktrees" / f"{handle}-t{thread}"
    git(repo, "worktree", "add", "-q", "-b", f"bot/{handle}/t{thread}", str(path), "main")
    if commit:
        (path / "fix.py").write_text("print('fixed')\n" * 100)
        git(path, "add", "fix.py")
        git(path, "commit", "-q", "-m", "Fix it")
    return path


def write_state(bot_dir: Path, entries: dict[int, dict[str, Any]]) -> None:
    """The bot daemon's state.json, with its worktrees as the daemon writes them."""
    bot_dir.mkdir(parents=True, exist_ok=True)
    data = {
        "cursor": 3,
        "worktrees": {
            str(thread): {
                "branch": "",
                "base": "main",
                "created_at": time.time() - 7200,
                "session": None,
                **e,
            }
            for thread, e in entries.items()
        },
    }
    (bot_dir / "state.json").write_text(json.dumps(data))


def branches(repo: Path) -> list[str]:
    return git(repo, "branch", "--format=%(refname:short)").split()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path)


async def test_a_kept_worktree_is_removed_and_its_branch_stays(tmp_path: Path, repo: Path) -> None:
    kept = add_worktree(repo, "fb1", 5)
    bot_dir = tmp_path / "bots" / "fb1"
    write_state(bot_dir, {5: {"path": str(kept), "branch": "bot/fb1/t5", "state": "kept"}})
    ok, detail = await worktrees.remove("fb1", 5, bot_dir)
    assert ok, detail
    assert not kept.exists()
    assert "bot/fb1/t5" in branches(repo)  # never the branch
    assert str(kept) not in git(repo, "worktree", "list", "--porcelain")


async def test_a_kept_worktree_with_uncommitted_work_is_refused_and_the_work_stays(
    tmp_path: Path, repo: Path
) -> None:
    """The branch keeps the commits, not what was never committed: that is the human's to save."""
    kept = add_worktree(repo, "fb1", 5)
    (kept / "fix.py").write_text("print('half done')\n")
    (kept / "notes.txt").write_text("untracked\n")
    bot_dir = tmp_path / "bots" / "fb1"
    write_state(bot_dir, {5: {"path": str(kept), "branch": "bot/fb1/t5", "state": "kept"}})
    ok, detail = await worktrees.remove("fb1", 5, bot_dir)
    assert not ok and "uncommitted" in detail, detail
    assert (kept / "fix.py").read_text() == "print('half done')\n"
    assert (kept / "notes.txt").exists()
    assert f"worktree {kept}" in git(repo, "worktree", "list", "--porcelain").splitlines()


@pytest.mark.parametrize(
    ("listed_as", "why"),
    [
        ("repo", "is not inside a <repo>.worktrees folder"),  # the checkout itself
        ("sibling", "is not inside a <repo>.worktrees folder"),  # a folder beside the repo
        ("renamed", "is not inside a <repo>.worktrees folder"),  # right folder, another bot's name
        ("dotdot", "is not an absolute path free of links"),
        ("link", "is not an absolute path free of links"),
        ("live", "is 'live', not kept"),
        ("unlisted", "lists no worktree for thread 6"),
        ("not-a-worktree", "is not a worktree of"),
    ],
)
async def test_anything_but_a_kept_worktree_in_its_folder_is_refused_and_left_alone(
    tmp_path: Path, repo: Path, listed_as: str, why: str
) -> None:
    kept = add_worktree(repo, "fb1", 6)
    other = add_worktree(repo, "fb2", 6)
    folder = repo.parent / "app.worktrees"
    sibling = repo.parent / "fb1-t6"
    sibling.mkdir()
    plain = folder / "fb1-t7"  # the right place and name, but not one of git's worktrees
    plain.mkdir()
    (tmp_path / "link").symlink_to(folder)
    path, state, thread = {
        "repo": (repo, "kept", 6),
        "sibling": (sibling, "kept", 6),
        "renamed": (other, "kept", 6),
        "dotdot": (Path(f"{folder}/../app.worktrees/fb1-t6"), "kept", 6),
        "link": (tmp_path / "link" / "fb1-t6", "kept", 6),
        "live": (kept, "live", 6),
        "unlisted": (kept, "kept", 8),
        "not-a-worktree": (plain, "kept", 7),
    }[listed_as]
    bot_dir = tmp_path / "bots" / "fb1"
    write_state(bot_dir, {thread: {"path": str(path), "state": state}})
    before = git(repo, "worktree", "list", "--porcelain")
    asked = 7 if listed_as == "not-a-worktree" else 6
    ok, detail = await worktrees.remove("fb1", asked, bot_dir)
    assert not ok and why in detail, detail
    assert git(repo, "worktree", "list", "--porcelain") == before
    assert all(p.is_dir() for p in (repo, kept, other, sibling, plain))
    assert (repo / "README").exists() and (kept / "fix.py").exists()


#: What the daemon writes of a worktree it keeps with uncommitted work (a hostile name or two among them).
DIRTY = {"uncommitted": 8, "uncommitted_paths": ["a.py", "b" * 400, 3, "c", "d", "e", "f"]}


def test_the_report_lists_what_is_there_with_its_size_measured_once_a_minute(
    tmp_path: Path, repo: Path
) -> None:
    kept = add_worktree(repo, "fb1", 5)
    live = add_worktree(repo, "fb1", 9, commit=False)
    bot_dir = tmp_path / "bots" / "fb1"
    gone = repo.parent / "app.worktrees" / "fb1-t4"
    write_state(
        bot_dir,
        {
            5: {"path": str(kept), "branch": "bot/fb1/t5", "state": "kept", **DIRTY},
            9: {"path": str(live), "branch": "bot/fb1/t9", "state": "live", **DIRTY},  # not kept: not said
            4: {"path": str(gone), "branch": "bot/fb1/t4", "state": "kept"},  # a human removed it
        },
    )
    sizes = worktrees.Sizes()
    listed = worktrees.report(bot_dir, sizes)
    assert [(w["thread"], w["state"], w["branch"]) for w in listed] == [
        (5, "kept", "bot/fb1/t5"),
        (9, "live", "bot/fb1/t9"),
    ]
    assert [(w["uncommitted"], w["uncommitted_paths"]) for w in listed] == [
        (8, ["a.py", "b" * 300, "c", "d", "e"]),
        (None, []),
    ]
    first = listed[0]["disk_bytes"]
    assert first is not None and first > len("print('fixed')\n" * 100)
    assert 7100 < listed[0]["age_s"] < 7300
    (kept / "big").write_bytes(b"x" * 100_000)
    assert worktrees.report(bot_dir, sizes)[0]["disk_bytes"] == first  # not measured again yet
    assert worktrees.report(bot_dir, worktrees.Sizes(every=0))[0]["disk_bytes"] == first + 100_000
    assert worktrees.disk_bytes(kept, limit=3) is None  # past the walk's bound: unknown


def test_a_hostile_state_file_lists_nothing_it_cannot_read(tmp_path: Path) -> None:
    bot_dir = tmp_path / "bots" / "fb1"
    bot_dir.mkdir(parents=True)
    for text in (
        "not json",
        "[]",
        '{"worktrees": [1]}',
        '{"worktrees": {"x": {"path": "/"}, "5": {"path": 3}}}',
    ):
        (bot_dir / "state.json").write_text(text)
        assert worktrees.report(bot_dir, worktrees.Sizes()) == []


async def test_the_supervisor_carries_out_the_order_and_acks_it(tmp_path: Path, repo: Path) -> None:
    kept = add_worktree(repo, "fb1", 5)
    environ = {"BOT_STATE_DIR": str(tmp_path / "bots")}
    # Thread 6 lists the checkout itself as kept: a path outside the .worktrees folder.
    write_state(
        tmp_path / "bots" / "fb1",
        {5: {"path": str(kept), "state": "kept"}, 6: {"path": str(repo), "state": "kept"}},
    )
    log = EventLog(tmp_path / "keeper.log", handle="keeper", stream=None)
    sup = Supervisor(tmp_path / "keeper", "http://127.0.0.1:9", Timing(), environ, log, token=_no_token)
    (tmp_path / "keeper").mkdir()
    bots = [{"handle": "fb1", "profile": "proj-dev", "desired": "stopped"}]
    orders = [
        {"id": 1, "handle": "fb1", "kind": "remove_worktree", "target": 6},
        {"id": 2, "handle": "fb1", "kind": "remove_worktree", "target": 5},
        {"id": 3, "handle": "fb1", "kind": "remove_worktree", "target": None},
        {"id": 4, "handle": "fb1", "kind": "remove_worktree", "target": 8},
    ]
    sup.apply({"bots": bots, "orders": orders})
    await sup.close()
    acks = {a["id"]: (a["ok"], a["detail"]) for a in sup.acks}
    assert acks[1] == (False, f"{repo} is not inside a <repo>.worktrees folder as fb1-t6")
    assert acks[2][0] is True and "its branch stays" in acks[2][1]
    assert acks[3] == (False, "the order names no thread")
    assert acks[4] == (False, "@fb1 lists no worktree for thread 8")
    assert not kept.exists() and "bot/fb1/t5" in branches(repo)
    assert (repo / "README").exists() and str(repo) in git(repo, "worktree", "list", "--porcelain")
    sup.apply({"bots": bots, "orders": orders})  # an order is carried out once, whatever the retries
    await sup.close()
    assert len(sup.acks) == 4


async def _no_token(handle: str) -> str | None:
    return None


def fb1s_keeper(tmp_path: Path, world: World, box: FleetKeeper) -> Keeper:
    """The keeper of ``box`` (a real one, not started) with fb1 stopped on it, its bots' state
    under ``tmp_path/bots`` and its log in ``tmp_path/keeper.log``."""
    enrolled = Enrolled(world.board.url, box.machine, box.token)
    log = EventLog(tmp_path / "keeper.log", handle="keeper", stream=None)
    keeper = Keeper(tmp_path / "keeper", enrolled, Timing(), {"BOT_STATE_DIR": str(tmp_path / "bots")}, log)
    (tmp_path / "keeper").mkdir()
    keeper.sup.apply({"bots": [{"handle": "fb1", "profile": "proj-dev", "desired": "stopped"}], "orders": []})
    return keeper


async def test_the_keeper_tells_the_board_once_of_a_kept_worktree_whose_folder_is_gone(
    tmp_path: Path, repo: Path, world: World
) -> None:
    """Its thread read "kept" until the daemon's next turn; now it reads removed within a report."""
    box1, _ = await fleet_setup(world)
    thread = int((await world.human.post("task", channel="lobby", workspace="proj"))["id"])
    token = (await box1.client.call("POST", "/api/fleet/bots/fb1/token"))[1]["token"]
    await world.board.client(token).set_worktree(
        thread, state="kept", branch=f"bot/fb1/t{thread}", base="main", ahead=1
    )
    kept, live = add_worktree(repo, "fb1", thread), add_worktree(repo, "fb1", thread + 1, commit=False)
    entries = {
        thread: {"path": str(kept), "branch": f"bot/fb1/t{thread}", "state": "kept"},
        thread + 1: {"path": str(live), "branch": f"bot/fb1/t{thread + 1}", "state": "live"},
    }
    write_state(tmp_path / "bots" / "fb1", entries)
    keeper = fb1s_keeper(tmp_path, world, box1)
    try:
        await keeper.tell_gone()  # both folders there: nothing to say
        assert [r["state"] for r in (await world.human.thread(thread))["worktrees"]] == ["kept"]
        shutil.rmtree(kept)
        shutil.rmtree(live)  # a live one's daemon makes it again: not the keeper's to say
        await keeper.tell_gone()
        await keeper.tell_gone()  # told once
        [record] = (await world.human.thread(thread))["worktrees"]
        assert (record["state"], record["ahead"], record["branch"]) == ("removed", 1, f"bot/fb1/t{thread}")
        told = [e for e in read_jsonl(tmp_path / "keeper.log") if e["event"].startswith("worktree_gone")]
        assert [(e["event"], e["thread"]) for e in told] == [("worktree_gone", thread)]
    finally:
        await keeper.sup.close()
        await keeper.client.close()


async def test_a_damaged_uncommitted_count_or_name_leaves_the_keepers_report_taken(
    tmp_path: Path, repo: Path, world: World
) -> None:
    """The board refuses a report with a count past a whole number's range or a name that is no
    one line of text: such a value in a bot's state file is left out, never the machine's report."""
    box1, _ = await fleet_setup(world)
    kept, other = add_worktree(repo, "fb1", 5), add_worktree(repo, "fb1", 6)
    names = ["a.py", "two\nlines", "bell\x07", "\ud800", "b.py"]
    write_state(
        tmp_path / "bots" / "fb1",
        {
            5: {
                "path": str(kept),
                "branch": "bot/fb1/t5",
                "state": "kept",
                "uncommitted": 9,
                "uncommitted_paths": names,
            },
            6: {"path": str(other), "branch": "bot/fb1/t6", "state": "kept", "uncommitted": 2**63},
        },
    )
    keeper = fb1s_keeper(tmp_path, world, box1)
    try:
        assert await keeper.report_once()
        shown = {w["thread"]: w for w in fb1_of(await world.human.fleet())["worktrees"]}
        assert (shown[5]["uncommitted"], shown[5]["uncommitted_paths"]) == (9, ["a.py", "b.py"])
        assert (shown[6]["uncommitted"], shown[6]["uncommitted_paths"]) == (None, [])
    finally:
        await keeper.sup.close()
        await keeper.client.close()
