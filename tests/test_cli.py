"""The ``board`` command as a real process, against a running board.

Operator commands (``board admin ...``) work on the database file beside the
running board; client verbs talk to it over HTTP with BOARD_URL and BOARD_TOKEN.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from board.client import BoardAPIError, BoardClient
from board.server.services.auth import hash_secret
from tests.support.boardtest import World, database_env, db_execute, db_rows, snapshot
from tests.support.fleettest import keeper_with_bots
from tests.support.processes import board_env, command, free_port


@dataclass
class Result:
    status: int
    out: str
    err: str

    @property
    def last_line(self) -> str:
        return self.out.strip().splitlines()[-1]

    def json(self) -> Any:
        return json.loads(self.out)


async def cli(*args: str, stdin: str | None = None, **env: str) -> Result:
    proc = await asyncio.create_subprocess_exec(
        *command(*args),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=board_env(**env),
        start_new_session=True,
    )
    try:
        out, err = await asyncio.wait_for(proc.communicate(stdin.encode() if stdin else b""), 60)
    finally:
        if proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            await proc.wait()
    assert proc.returncode is not None
    result = Result(proc.returncode, out.decode(), err.decode())
    assert "Traceback" not in result.err, result.err
    return result


def as_caller(world: World, client: BoardClient) -> dict[str, str]:
    assert client.token is not None
    return {"BOARD_URL": world.board.url, "BOARD_TOKEN": client.token}


def failed_with(result: Result, code: str) -> None:
    assert result.status != 0, result.out
    assert code in result.err, result.err


# -- operator commands -------------------------------------------------------------


async def test_user_add_prints_a_one_time_login_link(world: World) -> None:
    db = database_env(world.board)
    result = await cli("admin", "user", "add", "bob", "--board", "http://board.example:9000/", **db)
    assert result.status == 0, result.err
    assert "Created human bob" in result.out
    link = result.last_line
    prefix = "http://board.example:9000/login?token="
    assert link.startswith(prefix)
    token = link[len(prefix) :]
    assert token.startswith("bl_")
    rows = db_rows(
        world.board.db_path,
        "SELECT a.kind, t.kind FROM tokens t JOIN agents a ON a.id = t.agent_id WHERE t.hash = ?",
        (hash_secret(token),),
    )
    assert rows == [("human", "login")]
    # A login link is not an API token.
    with pytest.raises(BoardAPIError) as err:
        await world.board.client(token).me()
    assert err.value.code == "UNAUTHENTICATED"


async def test_user_add_reads_the_database_and_url_from_the_environment(world: World) -> None:
    result = await cli(
        "admin", "user", "add", "carol", **database_env(world.board), BOARD_URL=world.board.url
    )
    assert result.status == 0, result.err
    assert result.last_line.startswith(f"{world.board.url}/login?token=bl_")
    assert (await world.human.agent("carol"))["kind"] == "human"


async def test_admin_token_prints_a_working_human_token_last(world: World) -> None:
    result = await cli("admin", "token", "alice", **database_env(world.board))
    assert result.status == 0, result.err
    token = result.last_line
    assert token.startswith("bh_")
    me = await world.board.client(token).me()
    assert (me["handle"], me["kind"]) == ("alice", "human")
    if isinstance(world.board.db_path, Path):  # the file itself (tokens on PostgreSQL: test_identity)
        wal = world.board.db_path.with_name("board.db-wal")
        stored = world.board.db_path.read_bytes() + (wal.read_bytes() if wal.exists() else b"")
        assert token.encode() not in stored
        assert hash_secret(token).encode() in stored


async def test_admin_invite_prints_a_code_with_the_uses_asked_for(world: World) -> None:
    result = await cli("admin", "invite", "proj", "--uses", "2", **database_env(world.board))
    assert result.status == 0, result.err
    code = result.last_line
    assert code.startswith("bi_")
    for handle in ("cli-one", "cli-two"):
        registered = await world.board.client().register(handle, code)
        assert registered["agent"]["workspace"] == "proj"
    with pytest.raises(BoardAPIError) as err:
        await world.board.client().register("cli-three", code)
    assert err.value.code == "UNAUTHENTICATED"


async def test_admin_enroll_code_prints_a_code_a_keeper_enrolls_with(world: World) -> None:
    db = database_env(world.board)
    result = await cli("admin", "enroll-code", "build-01", "--as", "alice", **db)
    assert result.status == 0, result.err
    code = result.last_line
    assert code.startswith("bk_")
    enrolled = await world.board.client().enroll(code, hostname="build-01.local")
    assert enrolled["machine"] == "build-01"
    with pytest.raises(BoardAPIError) as err:
        await world.board.client().enroll(code)
    assert err.value.code == "UNAUTHENTICATED"


async def test_fleet_ls_says_what_the_fleet_page_says(world: World) -> None:
    """A bot on a machine whose keeper went quiet, and one an order is on its way to: the listing
    printed the keeper's last word (``running``) where the page says the machine is offline, and
    nothing of the stop the human had just asked for."""
    quiet = await keeper_with_bots(world, "box8", "away")
    box1 = await keeper_with_bots(world, "box1", "s1")
    await quiet.client.fleet_report(
        {"interval": 0.05, "bots": [{"handle": "away", "state": "running", "pid": 7}]}
    )
    await box1.client.fleet_report(
        {"interval": 3600, "bots": [{"handle": "s1", "state": "running", "pid": 8}]}
    )
    await world.human.assign_bot("box1", "proj-dev", "fresh")  # not reported by its keeper yet
    await world.human.fleet_order("s1", "stop")
    # Past box8's three intervals and the 2 s allowance, and a second more: times are kept to the
    # second, so a report late in one second and a read early in another look up to 1 s closer.
    await asyncio.sleep(3.5)
    # Python lists every module it imports on stderr: a client verb loads no server service.
    result = await cli("fleet", "ls", PYTHONPROFILEIMPORTTIME="1", **as_caller(world, world.human))
    assert result.status == 0, result.err
    assert "board.server.services" not in result.err
    lines = {line.split()[0]: line for line in result.out.splitlines() if line.startswith("  ")}
    assert "away (proj/proj-dev): machine offline, its keeper last said running pid 7," in lines["away"]
    assert "s1 (proj/proj-dev): running pid 8, should be stopped; stopping…;" in lines["s1"]
    assert lines["fresh"] == "  fresh (proj/proj-dev): not reported, should be running; restarts 0"


async def test_fleet_ls_says_why_a_bot_stopped_with_its_daemons_text_escaped(world: World) -> None:
    """A misconfigured or crashed bot's row said only its state, not the reason /fleet shows. The
    reason comes from a keeper's report, hostile text: what the board lets in (a C1 control, a
    bidirectional override) and what a row written by another program may hold (a terminal
    escape) are printed escaped, never raw. A running bot's last error is no reason."""
    box1 = await keeper_with_bots(world, "box1", "delta", "echo", "fox")
    await box1.client.fleet_report(
        {
            "interval": 3600,
            "bots": [
                {
                    "handle": "delta",
                    "state": "misconfigured",
                    "error": "usage: ...\nbot: repo /nope is not a directory\n",
                },
                {
                    "handle": "echo",
                    "state": "crashed",
                    "error": "Traceback ...\nboom \u202egnp.exe\x9b31m",
                    "last_wake": {"at": "2026-12-07T10:00:00Z", "outcome": "od\u202egnp\x9b31m"},
                },
                {"handle": "fox", "state": "running", "pid": 9, "error": "an old exit"},
            ],
        }
    )
    escape = json.dumps({"state": "crashed", "error": "cleared \x1b[2J\x1b]0;owned\x07 here"})
    agent = "SELECT id FROM agents WHERE handle = ?"
    db_execute(
        world.board.db_path, f"UPDATE fleet_bots SET status = ? WHERE agent_id = ({agent})", (escape, "fox")
    )
    db_execute(
        world.board.db_path, f"UPDATE fleet_bots SET state = ? WHERE agent_id = ({agent})", ("crashed", "fox")
    )

    result = await cli("fleet", "ls", **as_caller(world, world.human))
    assert result.status == 0, result.err
    lines = {line.split()[0]: line for line in result.out.splitlines() if line.startswith("  ")}
    assert lines["delta"].startswith(
        "  delta (proj/proj-dev): misconfigured (bot: repo /nope is not a directory), should be running;"
    )
    assert "crashed (boom \\u202egnp.exe\\u009b31m)," in lines["echo"]
    assert "crashed (cleared \\u001b[2J\\u001b]0;owned\\u0007 here)," in lines["fox"]
    assert lines["echo"].endswith("last wake 2026-12-07T10:00:00Z od\\u202egnp\\u009b31m"), lines["echo"]
    assert not any(c in result.out for c in "\x1b\x07\u202e\x9b")
    assert "Traceback" not in result.out and len(result.out.splitlines()) == 4  # the machine and its bots


async def test_fleet_ls_gives_a_running_bot_no_reason(world: World) -> None:
    box1 = await keeper_with_bots(world, "box1", "fox")
    await box1.client.fleet_report(
        {"interval": 3600, "bots": [{"handle": "fox", "state": "running", "pid": 9, "error": "an old exit"}]}
    )
    result = await cli("fleet", "ls", **as_caller(world, world.human))
    assert result.status == 0, result.err
    assert "  fox (proj/proj-dev): running pid 9, should be running; restarts 0" in result.out
    assert "old exit" not in result.out


async def test_admin_enroll_code_is_issued_only_as_a_human_and_for_a_valid_name(world: World) -> None:
    db = database_env(world.board)
    failed_with(await cli("admin", "enroll-code", "m1", "--as", "nobody", **db), "NOT_FOUND")
    failed_with(await cli("admin", "enroll-code", "m1", "--as", "pb", **db), "NOT_FOUND")
    bad_name = await cli("admin", "enroll-code", "no good", "--as", "alice", **db)
    failed_with(bad_name, "INVALID_ARGUMENT")
    assert db_rows(world.board.db_path, "SELECT count(*) FROM enroll_codes") == [(0,)]


async def test_operator_errors_print_the_code_and_fail(world: World) -> None:
    db = database_env(world.board)
    before = snapshot(world.board.db_path)
    failed_with(await cli("admin", "token", "nobody", **db), "NOT_FOUND")
    failed_with(await cli("admin", "token", "pb", **db), "NOT_FOUND")
    nowhere = await cli("admin", "invite", "nowhere", **db)
    failed_with(nowhere, "NOT_FOUND")
    assert "No workspace nowhere: make it on /workspaces first." in nowhere.err
    failed_with(await cli("admin", "user", "add", "alice", **db), "NAME_CONFLICT")
    failed_with(await cli("admin", "user", "add", "no good", **db), "INVALID_ARGUMENT")
    bad_uses = await cli("admin", "invite", "proj", "--uses", "0", **db)
    assert bad_uses.status == 2 and "--uses" in bad_uses.err
    assert snapshot(world.board.db_path) == before  # no refusal wrote anything


# -- client verbs ------------------------------------------------------------------


async def test_post_read_inbox_search_and_claim_print_json(world: World) -> None:
    human = as_caller(world, world.human)
    posted = await cli(
        "post", "please review the parser @pb", "--channel", "lobby", "--workspace", "proj", **human
    )
    assert posted.status == 0, posted.err
    message = posted.json()
    assert message["mentions"] == ["pb"] and message["workspace"] == "proj"

    read = await cli("read", "--workspace", "proj", "--channel", "lobby", **human)
    assert read.status == 0, read.err
    assert [m["id"] for m in read.json()["messages"]] == [message["id"]]

    bot = as_caller(world, world.bot)
    inbox = await cli("inbox", **bot)
    assert inbox.status == 0, inbox.err
    rows = inbox.json()["messages"]
    assert [(m["id"], m["reason"]) for m in rows] == [(message["id"], "mention")]
    assert "preview" in rows[0] and "body" not in rows[0]

    found = await cli("search", "parser", **bot)
    assert found.status == 0, found.err
    assert [m["id"] for m in found.json()["messages"]] == [message["id"]]

    claimed = await cli("claim", str(message["id"]), "--note", "mine", **bot)
    assert claimed.status == 0, claimed.err
    assert (claimed.json()["holder"], claimed.json()["state"]) == ("pb", "claimed")

    reply = await cli("post", "-", "--reply-to", str(message["id"]), stdin="looked: two bugs\n", **bot)
    assert reply.status == 0, reply.err
    assert reply.json()["thread_id"] == message["id"] and reply.json()["body"] == "looked: two bugs\n"
    thread = await world.human.thread(message["id"])
    assert [m["author"] for m in thread["messages"] if m["kind"] != "event"] == ["alice", "pb"]


async def test_the_board_and_token_options_work_without_the_environment(world: World) -> None:
    assert world.bot.token is not None
    result = await cli("read", "--board", world.board.url, "--token", world.bot.token)
    assert result.status == 0, result.err
    assert result.json()["messages"] == []
    # --url, the option's former name, until the next release
    old_name = await cli("read", "--url", world.board.url, "--token", world.bot.token)
    assert old_name.status == 0, old_name.err
    assert old_name.json()["messages"] == []


async def test_client_errors_print_the_boards_code_and_fail(world: World) -> None:
    human = as_caller(world, world.human)
    failed_with(await cli("post", "hi", "--channel", "lobby", **human), "INVALID_ARGUMENT")
    failed_with(await cli("read", "--workspace", "nowhere", **human), "NOT_FOUND")
    failed_with(await cli("read", "--workspace", "other", **as_caller(world, world.bot)), "NOT_FOUND")
    failed_with(await cli("claim", "999999", **as_caller(world, world.bot)), "NOT_FOUND")
    # The two a person mends at the terminal say what to do.
    wrong = await cli("read", BOARD_URL=world.board.url, BOARD_TOKEN="bb_wrong")
    failed_with(wrong, "UNAUTHENTICATED")
    assert "is the token this board's? `board admin token NAME` makes a human's" in wrong.err, wrong.err
    nowhere = f"http://127.0.0.1:{free_port()}"
    assert world.human.token is not None
    down = await cli("read", BOARD_URL=nowhere, BOARD_TOKEN=world.human.token)
    failed_with(down, "UNAVAILABLE")
    assert "is the board running? `board ctl status` on its machine" in down.err, down.err
    assert "board ctl status" not in wrong.err and "board admin token" not in down.err
    missing = await cli("read", BOARD_URL=world.board.url)
    assert missing.status == 2 and "--token" in missing.err


async def test_without_a_url_commands_talk_to_the_board_the_settings_file_describes(
    world: World, tmp_path: Path
) -> None:
    """No --board and no BOARD_URL: the port (and public URL) in board.toml, not 8080."""
    port = world.board.url.rsplit(":", 1)[1]
    config = tmp_path / "board.toml"
    config.write_text(f"port = {port}\n")
    env = {**database_env(world.board), "BOARD_CONFIG": str(config)}
    assert world.human.token is not None
    read = await cli("read", "--workspace", "proj", BOARD_TOKEN=world.human.token, **env)
    assert read.status == 0, read.err
    link = await cli("admin", "user", "link", "alice", **env)
    assert link.status == 0, link.err
    assert link.last_line.startswith(f"http://127.0.0.1:{port}/login?token=bl_")
    config.write_text(f'port = {port}\npublic_url = "https://board.example/"\n')
    added = await cli("admin", "user", "add", "dora", **env)
    assert added.last_line.startswith("https://board.example/login?token=bl_")
    broken = await cli("read", BOARD_TOKEN=world.human.token, BOARD_CONFIG=str(tmp_path / "none.toml"))
    assert broken.status == 1 and "does not exist; or name the board with --board or BOARD_URL" in broken.err
