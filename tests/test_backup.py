"""Backups under load: consistent, checked, restorable; a restore never lands under a running board."""

from __future__ import annotations

import contextlib
import os
import resource
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest

from board.client import BoardAPIError, BoardClient
from board.server.store import backup as store
from board.server.store.writer import StoreError
from tests.support.damage import mangle_schema, overwrite_index
from tests.support.doctor_support import doctor, doctor_env
from tests.support.load import LOAD_ENV, add_humans, humans, integrity, load, missing
from tests.support.processes import board_env, command, free_port, kill, serve, wait_healthy


def board(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command(*args), env=env, capture_output=True, text=True, timeout=120)


def _wait_for_acks(clients: object, count: int, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while len(clients.acknowledged()) < count:  # type: ignore[attr-defined]
        assert time.monotonic() < deadline, "the clients got no answers"
        time.sleep(0.02)


async def test_a_backup_under_load_restores_every_write_acknowledged_before_it(tmp_path: Path) -> None:
    db = tmp_path / "board.db"
    tokens = await add_humans(db, ["c0", "c1", "c2"])
    env = board_env(**LOAD_ENV)
    served = serve(db, env=env)
    try:
        wait_healthy(served)
        with load(served.url, tokens, tmp_path / "load") as clients:
            _wait_for_acks(clients, 100)
            before_cli = clients.acknowledged()
            made = board(env, "backup", str(tmp_path / "copy.db"), "--db", str(db))
            assert made.returncode == 0, made.stderr
            assert "integrity ok" in made.stdout
            _wait_for_acks(clients, len(clients.acknowledged()) + 50)  # the board kept serving

            before_api = clients.acknowledged()
            async with BoardClient(served.url, tokens[0]) as human:
                answer = await human.request("POST", "/api/admin/backup")
            clients.finish()
        during_api = clients.acknowledged()
    finally:
        kill(served.proc)

    assert len(during_api) > len(before_api) > len(before_cli) >= 100
    api_copy = Path(answer["path"])
    assert api_copy.parent == tmp_path / "backups" and answer["bytes"] == api_copy.stat().st_size
    for copy, acked in ((tmp_path / "copy.db", before_cli), (api_copy, before_api)):
        restored = tmp_path / f"restored-{copy.name}"
        put_back = board(env, "restore", str(copy), "--db", str(restored))
        assert put_back.returncode == 0, put_back.stderr
        assert integrity(restored) == [("ok",)]
        assert missing(restored, acked) == []
        conn = sqlite3.connect(restored)
        try:
            assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "delete"  # one file, no -wal
        finally:
            conn.close()


async def test_only_a_human_may_take_a_backup_through_the_api(tmp_path: Path) -> None:
    from tests.support.boardtest import populate, start_board, stop_board

    running = await start_board(tmp_path)
    try:
        world = await populate(running)
        for caller in (world.bot, world.admin_bot):
            with pytest.raises(BoardAPIError) as refused:
                await caller.request("POST", "/api/admin/backup")
            assert refused.value.code == "FORBIDDEN"
        assert not (tmp_path / "backups").exists() or not any((tmp_path / "backups").iterdir())
        with pytest.raises(BoardAPIError) as bodied:
            await world.human.request("POST", "/api/admin/backup", json={"path": "/etc/passwd"})
        assert bodied.value.code == "INVALID_ARGUMENT"
    finally:
        await stop_board(running)


def test_restore_refuses_while_a_board_serves_the_database(tmp_path: Path) -> None:
    db = tmp_path / "board.db"
    env = board_env()
    humans(db, ["al"])
    assert board(env, "backup", str(tmp_path / "copy.db"), "--db", str(db)).returncode == 0
    link = tmp_path / "link.db"  # another name for the same file: the same lock
    link.symlink_to(db)
    served = serve(link, env=env)
    try:
        wait_healthy(served)
        before = db.read_bytes()
        for name in (db, link):
            refused = board(env, "restore", str(tmp_path / "copy.db"), "--db", str(name))
            assert refused.returncode != 0
            assert "running board" in refused.stderr and "board ctl stop" in refused.stderr
            assert db.read_bytes() == before and link.is_symlink()
        assert not (tmp_path / "backups").exists()
    finally:
        kill(served.proc)


async def test_an_admin_command_and_a_restore_refuse_each_other(tmp_path: Path) -> None:
    """An admin command may run beside a board, but not beside a restore: what it wrote into
    the file being replaced would be in neither database. Each refuses while the other has
    the file, in one line, and changes nothing; once it is free, each runs."""
    from board.server.store.db import Database

    db = tmp_path / "board.db"
    env = board_env()
    await add_humans(db, ["al"])
    assert board(env, "backup", str(tmp_path / "copy.db"), "--db", str(db)).returncode == 0
    files = [db, *(Path(f"{db}{suffix}") for suffix in store.SIDE_FILES)]

    def contents() -> dict[str, bytes | None]:
        return {path.name: path.read_bytes() if path.exists() else None for path in files}

    before = contents()

    with store.owning(db):  # what a restore holds while it replaces the file
        refused = board(env, "admin", "token", "al", "--db", str(db))
    assert refused.returncode == 1, refused.stderr
    assert "is being replaced by a restore or a move to PostgreSQL" in refused.stderr
    assert "Traceback" not in refused.stderr and refused.stdout == ""
    assert contents() == before

    admin = Database(db)  # what an admin command holds while it runs
    await admin.open()
    try:
        opened = contents()
        waiting = board(env, "restore", str(tmp_path / "copy.db"), "--db", str(db))
        assert waiting.returncode == 1, waiting.stderr
        assert "is open in another board command" in waiting.stderr and "Traceback" not in waiting.stderr
        assert contents() == opened and not (tmp_path / "backups").exists()
    finally:
        await admin.close()

    assert board(env, "admin", "token", "al", "--db", str(db)).returncode == 0
    restored = board(env, "restore", str(tmp_path / "copy.db"), "--db", str(db))
    assert restored.returncode == 0, restored.stderr


async def test_a_lock_file_no_board_can_take_is_named_and_one_root_makes_is_the_folder_owner_s(
    tmp_path: Path,
) -> None:
    """A lock file that cannot be opened stops an admin command in one line that names it. One
    made by root (an admin command run with sudo) belongs to the folder's owner, the board's
    user, who could not take it otherwise and whose board would then not start."""
    db = tmp_path / "data" / "board.db"
    env = board_env()
    await add_humans(db, ["al"])
    lock = Path(f"{db}.open.lock")
    lock.unlink(missing_ok=True)
    lock.mkdir()
    tokens = _count_tokens(db)
    refused = board(env, "admin", "token", "al", "--db", str(db))
    assert refused.returncode == 1 and f"cannot open the lock file {lock}: Is a directory" in refused.stderr
    assert "Traceback" not in refused.stderr and refused.stdout == "" and _count_tokens(db) == tokens
    lock.rmdir()
    if os.geteuid() != 0:
        return
    os.chown(db.parent, 65534, 65534)  # the board's own user owns its folder
    made = board(env, "admin", "token", "al", "--db", str(db))
    assert made.returncode == 0, made.stderr
    assert (lock.stat().st_uid, lock.stat().st_gid) == (65534, 65534)


def test_a_restore_through_a_symbolic_link_replaces_the_file_it_names(tmp_path: Path) -> None:
    """The board's path may be a link to the file elsewhere: the restore replaces that file,
    which the board opens, not the link (which it replaced with a file the board never read)."""
    db = tmp_path / "disk" / "board.db"
    link = tmp_path / "board.db"
    env = board_env()
    humans(db, ["al"])
    link.symlink_to(db)
    assert board(env, "backup", str(tmp_path / "copy.db"), "--db", str(link)).returncode == 0
    humans(db, ["bo"])
    restored = board(env, "restore", str(tmp_path / "copy.db"), "--db", str(link))
    assert restored.returncode == 0, restored.stderr
    assert link.is_symlink() and link.resolve() == db
    conn = sqlite3.connect(db)
    try:
        handles = {row[0] for row in conn.execute("SELECT handle FROM agents")}
        assert "al" in handles and "bo" not in handles  # bo came after the copy
    finally:
        conn.close()


def _count_tokens(db: Path) -> int:
    conn = sqlite3.connect(db)
    try:
        return int(conn.execute("SELECT count(*) FROM tokens").fetchone()[0])
    finally:
        conn.close()


def test_backup_and_restore_refuse_what_they_cannot_do_cleanly(tmp_path: Path) -> None:
    db = tmp_path / "board.db"
    env = board_env()
    humans(db, ["al"])
    (tmp_path / "taken.db").write_text("x")
    exists = board(env, "backup", str(tmp_path / "taken.db"), "--db", str(db))
    assert exists.returncode != 0 and "already exists" in exists.stderr
    assert (tmp_path / "taken.db").read_text() == "x"

    (tmp_path / "junk.db").write_bytes(b"SQLite format 3\x00" + b"\x00" * 200)
    before = db.read_bytes()
    junk = board(env, "restore", str(tmp_path / "junk.db"), "--db", str(db))
    assert junk.returncode != 0 and "integrity check" in junk.stderr
    assert db.read_bytes() == before

    assert board(env, "restore", str(tmp_path / "absent.db"), "--db", str(db)).returncode != 0

    (tmp_path / "empty.db").write_bytes(b"")  # SQLite reads an empty file as an empty database
    empty = board(env, "restore", str(tmp_path / "empty.db"), "--db", str(db))
    assert empty.returncode == 1 and "is not a board's database (it has no schema version)" in empty.stderr
    assert db.read_bytes() == before and not (tmp_path / "backups").exists()

    wal = board(env, "backup", f"{db}-wal", "--db", str(db))
    assert wal.returncode == 1 and "is the database's own wal file" in wal.stderr
    assert not Path(f"{db}-wal").exists()


def test_restore_over_a_stopped_board_keeps_the_database_it_replaces(tmp_path: Path) -> None:
    db = tmp_path / "board.db"
    env = board_env()
    humans(db, ["al"])
    assert board(env, "backup", str(tmp_path / "one-human.db"), "--db", str(db)).returncode == 0
    humans(db, ["bo"])
    put_back = board(env, "restore", str(tmp_path / "one-human.db"), "--db", str(db))
    assert put_back.returncode == 0, put_back.stderr
    (saved,) = (tmp_path / "backups").iterdir()
    assert f"saved the database it replaced to {saved}" in put_back.stdout

    def handles(path: Path) -> set[str]:
        conn = sqlite3.connect(path)
        try:
            return {row[0] for row in conn.execute("SELECT handle FROM agents WHERE kind = 'human'")}
        finally:
            conn.close()

    assert handles(db) == {"al"} and handles(saved) == {"al", "bo"}


def _mode(path: Path) -> str:
    return oct(path.stat().st_mode & 0o777)


def test_a_database_named_by_a_link_to_a_file_not_made_yet_is_made_its_owner_s_alone(tmp_path: Path) -> None:
    target = tmp_path / "data" / "real.db"
    target.parent.mkdir()
    link = tmp_path / "board.db"
    link.symlink_to(target)
    humans(link, ["al"])
    assert link.is_symlink() and _mode(target) == "0o600"
    looped = tmp_path / "loop.db"
    looped.symlink_to(looped)
    with pytest.raises(StoreError, match=r"loop\.db: a loop of symbolic links"):
        humans(looped, ["al"])
    assert looped.is_symlink()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["board.db", "data", "loop.db"]  # nothing made


def test_the_database_its_side_files_and_every_copy_are_its_owner_s_alone(tmp_path: Path) -> None:
    """The database holds secrets (a forge's token, a mail server's password): no other local
    user may read it, its WAL, a backup, a restored copy or the one a restore set aside."""
    db = tmp_path / "state" / "board.db"
    env = board_env()
    humans(db, ["al"])
    assert _mode(db) == "0o600" and _mode(db.parent) == "0o700"
    served = serve(db, env=env)
    try:
        wait_healthy(served)
        for suffix in ("-wal", "-shm"):
            assert _mode(Path(f"{db}{suffix}")) == "0o600", suffix
        made = board(env, "backup", str(tmp_path / "copies" / "first.db"), "--db", str(db))
        assert made.returncode == 0, made.stderr
    finally:
        kill(served.proc)
    assert _mode(tmp_path / "copies" / "first.db") == "0o600" and _mode(tmp_path / "copies") == "0o700"
    put_back = board(env, "restore", str(tmp_path / "copies" / "first.db"), "--db", str(db))
    assert put_back.returncode == 0, put_back.stderr
    (saved,) = (db.parent / "backups").iterdir()
    assert _mode(db) == _mode(saved) == "0o600" and _mode(saved.parent) == "0o700"
    # A restore keeps the mode the operator gave the database it replaces (a backup group's).
    db.chmod(0o640)
    again = board(env, "restore", str(tmp_path / "copies" / "first.db"), "--db", str(db))
    assert again.returncode == 0, again.stderr
    assert _mode(db) == "0o640" and {_mode(kept) for kept in saved.parent.iterdir()} == {"0o600"}
    if os.geteuid() == 0:  # an admin command run with sudo: what it makes is the folder owner's
        os.chown(tmp_path / "copies", 65534, 65534)
        made = board(env, "backup", str(tmp_path / "copies" / "by-root" / "b.db"), "--db", str(db))
        assert made.returncode == 0, made.stderr
        for path in (tmp_path / "copies" / "by-root", tmp_path / "copies" / "by-root" / "b.db"):
            assert (path.stat().st_uid, path.stat().st_gid) == (65534, 65534), path
    # A database an earlier version made readable keeps its mode: the board does not change it.
    db.chmod(0o644)
    humans(db, ["bo"])
    assert _mode(db) == "0o644"


async def test_after_a_restore_new_messages_take_ids_no_reader_has_seen(tmp_path: Path) -> None:
    """The copy put back is older than what readers saw: ids it would hand out again lie at or
    below their cursors, and a reader past them would skip what is written next. New messages
    take ids above everything the replaced database handed out."""
    db = tmp_path / "board.db"
    env = board_env()
    (token,) = await add_humans(db, ["al"])

    async def posted(body: str) -> int:
        served = serve(db, env=env)
        try:
            wait_healthy(served)
            async with BoardClient(served.url, token) as human:
                return int((await human.post(body, channel="lobby", workspace="admin"))["id"])
        finally:
            kill(served.proc)

    first = await posted("before the backup")
    assert board(env, "backup", str(tmp_path / "copy.db"), "--db", str(db)).returncode == 0
    seen = await posted("after the backup: a reader's cursor is here")
    put_back = board(env, "restore", str(tmp_path / "copy.db"), "--db", str(db))
    assert put_back.returncode == 0, put_back.stderr
    served = serve(db, env=env)
    try:
        wait_healthy(served)
        async with BoardClient(served.url, token) as human:
            new = await human.post("after the restore", channel="lobby", workspace="admin")
            read = await human.messages(workspace="admin", channel="lobby", since=seen)
    finally:
        kill(served.proc)
    assert first < seen < new["id"]
    assert [m["body"] for m in read["messages"]] == ["after the restore"]


@pytest.mark.parametrize("damage", ["index", "schema"])
def test_a_damaged_database_is_refused_as_a_copy_and_set_aside_by_a_restore(
    tmp_path: Path, damage: str
) -> None:
    """What ``board doctor`` sends a person to do about a damaged database works: the backup
    goes back, the damaged files are kept as they were, and new ids stay above every old one."""
    db = tmp_path / "board.db"
    env = board_env()
    humans(db, ["al"])
    assert board(env, "backup", str(tmp_path / "copy.db"), "--db", str(db)).returncode == 0
    humans(db, ["bo", "cy"])
    with sqlite3.connect(db) as conn:
        (mark,) = conn.execute("SELECT seq FROM sqlite_sequence WHERE name = 'agents'").fetchone()
    damaged = {"index": overwrite_index, "schema": mangle_schema}[damage]
    damaged(db)
    before = db.read_bytes()
    wal = Path(f"{db}-wal")
    wal.write_bytes(b"frames no checkpoint took in " * 50)  # SQLite reads past a WAL it cannot use

    for args in (("backup", str(tmp_path / "again.db")), ("restore", str(db))):
        refused = board(env, *args, "--db", str(db) if args[0] == "backup" else str(tmp_path / "x.db"))
        assert refused.returncode == 1 and "Traceback" not in refused.stderr
        assert "integrity check" in refused.stderr
    assert not (tmp_path / "again.db").exists() and not (tmp_path / "x.db").exists()

    put_back = board(env, "restore", str(tmp_path / "copy.db"), "--db", str(db))
    assert put_back.returncode == 0, put_back.stderr
    (kept,) = (tmp_path / "backups").glob("*-damaged.db")
    assert put_back.stdout.startswith("kept the damaged database it replaced (")
    assert f") as it was in {kept}\n" in put_back.stdout
    assert kept.read_bytes() == before
    assert Path(f"{kept}-wal").read_bytes() == b"frames no checkpoint took in " * 50
    assert not wal.exists()  # played back into the copy put in its place, it would damage it
    assert integrity(db) == [("ok",)]
    with sqlite3.connect(db) as conn:
        handles = {row[0] for row in conn.execute("SELECT handle FROM agents WHERE kind = 'human'")}
        marks = dict(conn.execute("SELECT name, seq FROM sqlite_sequence").fetchall())
        counted = {
            row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE sql LIKE '%AUTOINCREMENT%'")
        }
    assert handles == {"al"}
    # A damaged index leaves the marks readable; a schema that does not parse hides them,
    # and new ids start far above the copy's instead, in every table that counts its ids
    # (messages too, which the copy has none of yet).
    if damage == "index":
        assert marks["agents"] == mark
    else:
        assert set(marks) == counted and "messages" in counted
        assert marks["agents"] > mark + 10**8 and min(marks.values()) > 10**8


def crashed_copy(tmp_path: Path, env: dict[str, str]) -> tuple[Path, Path]:
    """A board's database holding al and bo, and a backup copy of it holding al that a
    program was killed in the middle of writing to: its file holds half a transaction and
    its journal the pages to put back. Read only, SQLite may not play that journal back."""
    db = tmp_path / "board.db"
    humans(db, ["al"])
    copy = tmp_path / "copy.db"
    assert board(env, "backup", str(copy), "--db", str(db)).returncode == 0
    humans(db, ["bo"])
    with subprocess.Popen(
        [sys.executable, "-c", _KILLED_MID_WRITE, str(copy)], stdout=subprocess.PIPE, text=True
    ) as writer:
        try:
            assert writer.stdout is not None and writer.stdout.readline() == "written\n"
        finally:
            writer.kill()
    assert Path(f"{copy}-journal").stat().st_size
    read_only = sqlite3.connect(f"{copy.as_uri()}?mode=ro", uri=True)
    with pytest.raises(sqlite3.OperationalError, match="attempt to write a readonly database"):
        read_only.execute("SELECT count(*) FROM agents").fetchall()
    read_only.close()
    return db, copy


def files(copy: Path) -> tuple[bytes, bytes]:
    return copy.read_bytes(), Path(f"{copy}-journal").read_bytes()


def test_a_copy_a_crash_left_with_its_rollback_journal_is_read_as_committed_and_left_as_it_was(
    tmp_path: Path,
) -> None:
    """Such a copy was refused as damaged by a backup, a restore and the doctor. It is read as
    its next open would read it (the journal played back on a copy in the temporary folder),
    named through a link too: it backs up and restores as what was committed, the doctor finds
    it whole, its two files are not touched, and the temporary folder is left empty."""
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    env = board_env(TMPDIR=str(scratch))
    db, copy = crashed_copy(tmp_path, env)
    before = files(copy)
    link = tmp_path / "link.db"
    link.symlink_to(copy)

    again = tmp_path / "again.db"
    copied = board(env, "backup", str(again), "--db", str(link))
    assert copied.returncode == 0, copied.stderr
    put_back = board(env, "restore", str(link), "--db", str(db))
    assert put_back.returncode == 0, put_back.stderr
    for restored in (again, db):
        assert integrity(restored) == [("ok",)]
        with contextlib.closing(sqlite3.connect(restored)) as conn:
            handles = {row[0] for row in conn.execute("SELECT handle FROM agents WHERE kind = 'human'")}
            assert handles == {"al"}  # the killed write's rows are not there
            assert conn.execute("SELECT count(*) FROM sqlite_master WHERE name = 'junk'").fetchone() == (0,)
    found = doctor(doctor_env(tmp_path, free_port(), TMPDIR=str(scratch)), "--db", str(link))
    assert found.lines("database integrity") == [f"ok    database integrity: {link}: integrity_check ok"]
    assert found.status("database schema") == ["ok"]
    assert files(copy) == before
    assert list(scratch.iterdir()) == []


def test_no_room_to_play_a_journal_back_is_said_as_such_not_as_damage(tmp_path: Path) -> None:
    """The journal is played back on a copy: with no room for it, the backup says so and
    writes nothing. It does not call the copy damaged, which would send a person to restore."""
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    env = board_env(TMPDIR=str(scratch))
    _, copy = crashed_copy(tmp_path, env)
    before = files(copy)

    full = on_a_full_disk(env, 4096, "backup", str(tmp_path / "again.db"), "--db", str(copy))
    said = (
        f"Error: could not play back the rollback journal beside {copy} on a copy in {scratch}/board-journal-"
    )
    assert full.stderr.startswith(said), full.stderr
    assert "damaged" not in full.stderr and "integrity" not in full.stderr
    assert not (tmp_path / "again.db").exists()
    assert files(copy) == before
    assert list(scratch.iterdir()) == []


def test_a_temporary_folder_gone_is_said_as_such_not_as_damage(tmp_path: Path, monkeypatch: Any) -> None:
    """The temporary folder removed under a running process: no folder can be made for the
    copy, and the check says so instead of answering with a verdict on the database."""
    _, copy = crashed_copy(tmp_path, board_env())
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "gone"))
    with pytest.raises(StoreError, match=f"beside {copy} on a copy in the temporary folder: .*No such file"):
        store.integrity(copy)


#: Writes to the database named by argv[1] in rollback-journal mode, with a cache of a page so
#: that the transaction's pages reach the file before its commit, then waits to be killed.
_KILLED_MID_WRITE = """
import sqlite3, sys, time
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("PRAGMA cache_size = 1")
conn.execute("BEGIN")
conn.execute("UPDATE agents SET handle = handle || '-gone'")
conn.execute("CREATE TABLE junk AS SELECT randomblob(3000) AS b FROM (SELECT 1 UNION SELECT 2) , agents")
conn.execute("INSERT INTO junk SELECT randomblob(3000) FROM junk, junk AS j2")
print("written", flush=True)
time.sleep(60)
"""


def on_a_full_disk(env: dict[str, str], limit: int, *args: str) -> subprocess.CompletedProcess[str]:
    """``board ARGS`` unable to write a file past ``limit`` bytes, as on a full disk; it must
    fail with one line, no traceback."""

    def small_files() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    failed = subprocess.run(
        command(*args), env=env, capture_output=True, text=True, timeout=120, preexec_fn=small_files
    )
    assert failed.returncode == 1 and "Traceback" not in failed.stderr, failed.stderr
    return failed


def test_a_restore_that_cannot_save_what_it_replaces_changes_nothing(tmp_path: Path) -> None:
    """A full disk (here, a limit on the size of a file the restore may write) stops the
    restore before it replaces anything: the database is neither lost nor called damaged."""
    db = tmp_path / "board.db"
    env = board_env()
    humans(db, ["al"])
    assert board(env, "backup", str(tmp_path / "copy.db"), "--db", str(db)).returncode == 0
    humans(db, ["bo"])
    before = db.read_bytes()
    limit = db.stat().st_size // 2

    full = on_a_full_disk(env, limit, "restore", str(tmp_path / "copy.db"), "--db", str(db))
    assert full.stderr.startswith(f"Error: could not write {tmp_path}/backups/board-")
    assert "damaged" not in full.stderr and "integrity" not in full.stderr
    assert db.read_bytes() == before
    assert [p.name for p in (tmp_path / "backups").iterdir()] == []
    assert not list(tmp_path.glob(".*"))  # no partial copy left behind


def test_a_restore_stopped_before_its_last_rename_leaves_the_database_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A restore removes the database's WAL before it renames the copy into place: the WAL's
    commits are in the file by then (checkpointed), so stopping in between loses none."""
    db = tmp_path / "board.db"
    humans(db, ["al"])
    store.backup(db, tmp_path / "copy.db")
    died = (  # a writer that committed and died before any checkpoint: the commit is in the WAL only
        "import os, sqlite3, sys\n"
        "conn = sqlite3.connect(sys.argv[1])\n"
        "conn.execute('PRAGMA wal_autocheckpoint = 0')\n"
        "conn.execute('CREATE TABLE notes (body TEXT)')\n"
        "conn.execute(\"INSERT INTO notes VALUES ('in the WAL only')\")\n"
        "conn.commit()\n"
        "os._exit(0)\n"
    )
    subprocess.run([sys.executable, "-c", died, str(db)], check=True, timeout=60)
    assert Path(f"{db}-wal").stat().st_size > 0
    rename = Path.replace

    def stopped(self: Path, target: Any) -> Path:
        if self.name == ".board.db.partial":
            raise OSError(28, "No space left on device")
        return rename(self, target)

    monkeypatch.setattr(Path, "replace", stopped)
    with pytest.raises(StoreError, match="No space left on device"):
        store.restore(tmp_path / "copy.db", db)
    monkeypatch.undo()
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT body FROM notes").fetchall() == [("in the WAL only",)]
    assert integrity(db) == [("ok",)]


def test_a_table_an_older_copy_lacks_keeps_the_mark_of_the_database_it_replaces(tmp_path: Path) -> None:
    """A copy from before a migration has no table the migration makes; the board's next open
    makes it, and its first id must still come above those the replaced database gave out."""
    db, copy = tmp_path / "board.db", tmp_path / "copy.db"
    humans(db, ["al"])
    store.backup(db, copy)
    with sqlite3.connect(copy) as conn:  # as a copy of a schema before fleet orders
        conn.execute("DROP TABLE fleet_orders")
    with sqlite3.connect(db) as conn:  # orders given and gone: only the mark says so
        conn.execute("INSERT OR REPLACE INTO sqlite_sequence (name, seq) VALUES ('fleet_orders', 77)")
    store.restore(copy, db)
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE fleet_orders (id INTEGER PRIMARY KEY AUTOINCREMENT, body TEXT)")
        made = conn.execute("INSERT INTO fleet_orders (body) VALUES ('first after the restore')")
        assert made.lastrowid == 78
