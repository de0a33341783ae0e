"""``board doctor`` on the board's machine: a real board process, real files, real locks.

Each check is shown passing and failing: nothing answering, another version
answering, a corrupted database, a schema of another version, a settings file
that does not read, pid files naming dead or foreign processes, a lock held by
a process that does not answer, too little free disk. Doctor only reads: the
database's bytes and schema version are the same after it ran.
"""

from __future__ import annotations

import contextlib
import hashlib
import re
import shutil
import sqlite3
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from board import __version__, ctl
from board.server.store.schema import schema_version
from tests.support.damage import mangle_schema, overwrite_pages
from tests.support.doctor_support import Diagnosis, default_db, doctor, doctor_env
from tests.support.processes import Served, board_env, command, free_port, kill, serve, wait_healthy

pytestmark = pytest.mark.timeout(240)


def make_db(db: Path, env: dict[str, str]) -> None:
    """A board database as the operator's first command makes it (migrated, one human)."""
    subprocess.run(
        command("admin", "user", "add", "alice", "--db", str(db)), env=env, check=True, capture_output=True
    )


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@contextlib.contextmanager
def running_board(tmp_path: Path, port: int, env: dict[str, str]) -> Iterator[Served]:
    db = default_db(tmp_path)
    db.parent.mkdir(parents=True, exist_ok=True)
    served = serve(db, "--routines", port=port, env=env)
    try:
        wait_healthy(served)
        yield served
    finally:
        kill(served.proc)


@contextlib.contextmanager
def process(*args: str) -> Iterator[subprocess.Popen[bytes]]:
    proc = subprocess.Popen(list(args), start_new_session=True, stdin=subprocess.DEVNULL)
    try:
        yield proc
    finally:
        kill(proc)


def dead_pid() -> int:
    """The pid of a process that has exited and been reaped."""
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


@pytest.fixture
def port() -> int:
    return free_port()


@pytest.fixture
def env(tmp_path: Path, port: int) -> dict[str, str]:
    return doctor_env(tmp_path, port)


def runner_called(db: Path, timeout: float = 20.0) -> None:
    """Wait until the board's runner has made its first call (its presence is written)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.closing(sqlite3.connect(f"{db.as_uri()}?mode=ro", uri=True)) as conn:
            row = conn.execute("SELECT last_seen_at FROM agents WHERE handle = 'board'").fetchone()
        if row and row[0]:
            return
        time.sleep(0.1)
    raise AssertionError("the runner never called its board")


@pytest.fixture
def healthy(tmp_path: Path, port: int, env: dict[str, str]) -> Iterator[Served]:
    with running_board(tmp_path, port, env) as served:
        runner_called(default_db(tmp_path))
        yield served


def test_a_fresh_board_with_its_runner_passes_every_check(
    healthy: Served, env: dict[str, str], port: int
) -> None:
    found = doctor(env)
    assert found.code == 0 and found.failing() == [], found.text
    assert found.lines("board") == [
        f"ok    board: answers at http://127.0.0.1:{port}, version {__version__} (pid {healthy.proc.pid})"
    ]
    assert found.status("database integrity") == ["ok"]
    assert found.lines("database schema") == [
        f"ok    database schema: version {schema_version()}, as this board expects"
    ]
    assert found.status("pid files") == ["ok"]
    assert found.status("disk") == ["ok"]
    assert found.lines("keepers") == ["ok    keepers: no machine enrolled"]
    (runner,) = found.lines("routines runner")
    assert (
        runner.startswith("ok    routines runner: last called the board ") and "0 active routine(s)" in runner
    )


def test_nothing_answering_fails_and_the_database_is_only_read(
    tmp_path: Path, env: dict[str, str], port: int
) -> None:
    db = default_db(tmp_path)
    make_db(db, env)
    before = digest(db)
    found = doctor(env)
    assert found.code == 1
    assert found.failing() == [
        f"FAIL  board: nothing answers at http://127.0.0.1:{port}/healthz — start it: board ctl start "
        "(or systemctl --user start board), then look at board ctl logs"
    ]
    assert digest(db) == before


def test_another_version_answering_fails_the_board_check(
    env: dict[str, str], port: int, tmp_path: Path
) -> None:
    make_db(default_db(tmp_path), env)
    impostor = textwrap.dedent(
        f"""
        import http.server, json, os
        class H(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                body = json.dumps({{"ok": True, "version": "0.0.9", "pid": os.getpid()}}).encode()
                self.send_response(200); self.end_headers(); self.wfile.write(body)
            def log_message(self, *a): pass
        http.server.HTTPServer(("127.0.0.1", {port}), H).serve_forever()
        """
    )
    with process(sys.executable, "-c", impostor) as proc:
        deadline = time.monotonic() + 20
        while ctl.health(f"http://127.0.0.1:{port}") is None and time.monotonic() < deadline:
            time.sleep(0.05)
        found = doctor(env)
    assert found.code == 1
    assert found.lines("board") == [
        f"FAIL  board: answers at http://127.0.0.1:{port}, version 0.0.9 (pid {proc.pid}), but version "
        f"{__version__} is installed — restart it to run the installed version: board ctl restart "
        "(or systemctl --user restart board)"
    ]


def test_a_corrupted_database_fails_integrity_and_names_the_restore(
    tmp_path: Path, env: dict[str, str]
) -> None:
    good = tmp_path / "good.db"
    make_db(good, env)
    restore = (
        "— stop the board (board ctl stop), put your latest backup back (board restore BACKUP, "
        f"from {tmp_path}/backups), then board ctl start"
    )
    bad = tmp_path / "bad.db"
    shutil.copy(good, bad)
    overwrite_pages(bad)
    found = doctor(env, "--db", str(bad))
    assert found.code == 1
    (line,) = found.lines("database integrity")
    assert line.startswith(f"FAIL  database integrity: {bad}: ") and line.endswith(restore)
    assert found.status("fleet") == ["skip"]

    shutil.copy(good, bad)
    mangle_schema(bad)  # SQLite's own message then holds bytes that are not UTF-8
    found = doctor(env, "--db", str(bad))
    assert found.code == 1
    assert found.lines("database integrity") == [
        f"FAIL  database integrity: {bad}: malformed database schema (\ufffdA\ufffd) - incomplete input "
        + restore
    ]
    assert found.status("fleet") == ["skip"]

    not_a_db = tmp_path / "notes.db"
    not_a_db.write_text("these are notes, not a database\n" * 200)
    found = doctor(env, "--db", str(not_a_db))
    assert found.code == 1 and found.status("database integrity") == ["fail"]
    assert "file is not a database" in found.lines("database integrity")[0]
    assert not_a_db.read_text() == "these are notes, not a database\n" * 200

    found = doctor(env, "--db", str(good))
    assert found.lines("database integrity") == [f"ok    database integrity: {good}: integrity_check ok"]


def test_a_missing_database_fails_and_is_not_created(tmp_path: Path, env: dict[str, str]) -> None:
    db = tmp_path / "nowhere" / "board.db"
    found = doctor(env, "--db", str(db))
    assert found.code == 1
    assert found.lines("database", exact=True) == [
        f"FAIL  database: no database at {db} — start the board, which creates it, or point BOARD_DB "
        "(db in board.toml) at yours"
    ]
    assert found.status("fleet") == ["skip"]
    assert not db.parent.exists()


def test_a_postgresql_database_that_does_not_answer_fails(tmp_path: Path, port: int) -> None:
    url = f"postgresql://board:secret@127.0.0.1:{free_port()}/board"
    found = doctor(doctor_env(tmp_path, port, BOARD_DATABASE_URL=url))
    assert found.code == 1
    shown = url.replace(":secret@", ":***@")
    (skipped,) = found.lines("database integrity")
    assert skipped.startswith(f"skip  database integrity: {shown}: PostgreSQL checks its own pages")
    # the page it names says how to run pg_amcheck
    (page,) = re.findall(r"docs/\w+\.md", skipped)
    assert "pg_amcheck --install-missing" in (Path(__file__).parent.parent / page).read_text()
    (line,) = found.lines("database", exact=True)
    assert line.startswith(f"FAIL  database: cannot read {shown}: ")
    assert line.endswith("— start PostgreSQL, or fix BOARD_DATABASE_URL (database_url in board.toml)")
    assert "secret" not in found.text
    assert found.status("fleet") == ["skip"]


@pytest.mark.parametrize("version", [schema_version() + 7, 5], ids=["newer", "older"])
def test_a_schema_of_another_version_fails_and_is_not_migrated(
    tmp_path: Path, env: dict[str, str], version: int
) -> None:
    db = tmp_path / "other.db"
    make_db(db, env)
    with contextlib.closing(sqlite3.connect(db)) as conn:
        conn.execute(f"PRAGMA user_version = {version}")
        conn.commit()
    before = digest(db)
    found = doctor(env, "--db", str(db))
    assert found.code == 1
    (line,) = found.lines("database schema")
    word = "newer than this board understands" if version > schema_version() else "older than this board's"
    assert line.startswith(f"FAIL  database schema: {db} has version {version}, {word}")
    assert found.status("fleet") == ["skip"]
    assert digest(db) == before  # not migrated, not touched


def test_the_config_line_says_where_each_setting_came_from(
    tmp_path: Path, env: dict[str, str], port: int
) -> None:
    config = tmp_path / "config" / "bot-board" / "board.toml"
    config.parent.mkdir(parents=True)
    config.write_text('log_level = "WARNING"\nsweep_every = 60\n')
    db = tmp_path / "flagged.db"
    make_db(db, env)
    found = doctor({**env, "BOARD_STALL_AFTER": "900"}, "--db", str(db))
    assert found.lines("config") == [
        f"ok    config: settings file {config}: db={db} from flag; log_level=WARNING from the file; "
        f"port={port} from BOARD_PORT; stall_after=900 from BOARD_STALL_AFTER; sweep_every=60 from the file; "
        "the rest are defaults"
    ]

    config.write_text("prot = 8080\n")
    found = doctor(env, "--db", str(db))
    assert found.code == 1
    (line,) = found.failing()
    assert line.startswith(f"FAIL  config: {config}: unknown setting(s) prot; known: db, ")
    assert line.endswith("— fix that setting (the file, or unset the variable), then run board doctor again")


def test_a_stale_board_pid_file_warns_and_a_foreign_one_fails(
    healthy: Served, tmp_path: Path, env: dict[str, str]
) -> None:
    pidfile = default_db(tmp_path).parent / "board.pid"
    gone = dead_pid()
    pidfile.write_text(f"{gone}\n")
    found = doctor(env)
    assert found.code == 0, found.text  # nothing is blocked by it
    assert found.lines("pid files") == [
        f"warn  pid files: {pidfile} names pid {gone}, which is not running: the board stopped without "
        f"removing it — remove it (rm {pidfile}); board ctl start writes a new one"
    ]

    with process("sleep", "60") as other:
        pidfile.write_text(f"{other.pid}\n")
        found = doctor(env)
    assert found.code == 1
    assert found.failing() == [
        f"FAIL  pid files: {pidfile} names pid {other.pid}, which is another program, not a board: board ctl "
        f"would refuse to start or act on it — remove it (rm {pidfile}), then board ctl start"
    ]

    pidfile.write_text(f"{healthy.proc.pid}\n")
    assert doctor(env).status("pid files") == ["ok"]


HOLD_LOCK = """
import fcntl, os, sys, time
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o600)
fcntl.flock(fd, fcntl.LOCK_EX)
os.ftruncate(fd, 0); os.write(fd, f"{os.getpid()}\\n".encode())
print("locked", flush=True)
time.sleep(60)
"""


@contextlib.contextmanager
def holding(path: Path) -> Iterator[subprocess.Popen[bytes]]:
    """A process holding ``path``'s flock with its pid in it, as the board and the keeper do."""
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLD_LOCK, str(path)], stdout=subprocess.PIPE, start_new_session=True
    )
    assert proc.stdout is not None
    try:
        assert proc.stdout.readline() == b"locked\n"
        yield proc
    finally:
        kill(proc)
        proc.stdout.close()


def test_a_lock_held_by_a_process_that_does_not_answer_fails(tmp_path: Path, env: dict[str, str]) -> None:
    db = default_db(tmp_path)
    make_db(db, env)
    lock = Path(f"{db}.lock")
    with holding(lock) as proc:
        found = doctor(env)
    assert f"FAIL  lock files: pid {proc.pid} holds {lock}, but no board answers at " in found.text
    assert f"— stop it (board ctl stop, or kill {proc.pid}), then board ctl start" in found.text
    # Its process gone, the lock is free and the file left behind blocks nothing.
    assert doctor(env).status("lock files") == []


def test_a_killed_keepers_and_bots_pid_files_warn(
    healthy: Served, tmp_path: Path, env: dict[str, str]
) -> None:
    keeper_pid = tmp_path / "keeper" / "keeper.pid"
    keeper_pid.parent.mkdir()
    bot_pid = tmp_path / "bots" / "fb1" / "bot.pid"
    bot_pid.parent.mkdir(parents=True)
    with holding(keeper_pid) as proc:
        bot_pid.write_text("")  # released cleanly: truncated
        assert doctor(env).status("pid files") == ["ok"]  # a keeper holding its lock is running
    # killed: its pid stays in the file
    bot_pid.write_text(f"{dead_pid()}\n")
    found = doctor(env)
    assert found.code == 0
    assert found.lines("pid files") == [
        f"warn  pid files: {keeper_pid} names pid {proc.pid}, which no longer holds it: "
        f"the keeper was killed — remove it (rm {keeper_pid}); nothing is blocked by it",
        f"warn  pid files: {bot_pid} names pid {bot_pid.read_text().strip()}, which no longer holds it: "
        f"bot fb1's daemon was killed — remove it (rm {bot_pid}); nothing is blocked by it",
    ]


def test_free_disk_below_the_minimum_fails_and_below_twice_it_warns(
    healthy: Served, env: dict[str, str]
) -> None:
    found = doctor(env, "--min-free", "1")
    assert found.status("disk") == ["ok"] and found.code == 0
    free_mb = shutil.disk_usage(default_db(Path(env["XDG_STATE_HOME"]).parent)).free // 2**20
    found = doctor(env, "--min-free", str(free_mb * 100))
    assert found.code == 1
    (line,) = found.lines("disk")
    assert line.startswith("FAIL  disk: ") and f", below {free_mb * 100} MB — free space there" in line
    found = doctor(env, "--min-free", str(free_mb * 2 // 3))
    assert found.code == 0 and found.status("disk") == ["warn"]


def test_doctor_reads_the_board_it_is_pointed_at_by_its_settings(tmp_path: Path) -> None:
    """BOARD_DB in the environment is a setting from the environment, not a flag."""
    port = free_port()
    db = tmp_path / "env.db"
    env = doctor_env(tmp_path, port, BOARD_DB=str(db))
    make_db(db, board_env())
    found: Diagnosis = doctor(env)
    assert f"db={db} from BOARD_DB" in found.lines("config")[0]
    assert found.lines("database integrity") == [f"ok    database integrity: {db}: integrity_check ok"]
