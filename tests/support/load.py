"""A board under a steady load from several client processes, and what they saw acknowledged."""

from __future__ import annotations

import asyncio
import contextlib
import json
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from board.server.services import auth
from board.server.services.context import Context
from board.server.settings import Settings
from board.server.store.db import Database
from tests.support.processes import ROOT, board_env

#: Write limits lifted: the load is the point.
LOAD_ENV = {"BOARD_WRITE_RATE": "1000000", "BOARD_WRITE_BURST": "1000000"}


async def add_humans(db: Path, names: list[str]) -> list[str]:
    database = Database(db)
    await database.open()
    try:
        ctx = Context(db=database, settings=Settings(db=str(db)))
        tokens = []
        for name in names:
            await auth.add_human(ctx, name)
            tokens.append(await auth.human_token(ctx, name))
        return tokens
    finally:
        await database.close()


def humans(db: Path, names: list[str]) -> list[str]:
    """API tokens of new humans on ``db`` (made before any board serves it)."""
    return asyncio.run(add_humans(db, names))


@dataclass
class Load:
    """Client processes writing to one board address, each with its journal of acknowledgements."""

    url: str
    folder: Path
    procs: list[subprocess.Popen[bytes]] = field(default_factory=list)

    @property
    def stop_file(self) -> Path:
        return self.folder / "stop"

    def journals(self) -> list[Path]:
        return sorted(self.folder.glob("*.jsonl"))

    def acknowledged(self) -> list[dict[str, Any]]:
        """Every complete journal line so far (a line being written is not yet an acknowledgement)."""
        entries = []
        for journal in self.journals():
            for line in journal.read_text().splitlines(keepends=True):
                if line.endswith("\n"):
                    entries.append(json.loads(line))
        return entries

    def finish(self, timeout: float = 120) -> None:
        self.stop_file.touch()
        for proc in self.procs:
            assert proc.wait(timeout=timeout) == 0, "a client process failed"


@contextlib.contextmanager
def load(url: str, tokens: list[str], folder: Path) -> Iterator[Load]:
    folder.mkdir(parents=True, exist_ok=True)
    running = Load(url, folder)
    try:
        for n, token in enumerate(tokens):
            running.procs.append(
                subprocess.Popen(
                    [
                        sys.executable,
                        str(ROOT / "tests" / "support" / "loadgen.py"),
                        url,
                        token,
                        f"c{n}",
                        str(folder / f"c{n}.jsonl"),
                        str(running.stop_file),
                    ],
                    env=board_env(),
                    stdin=subprocess.DEVNULL,
                )
            )
        yield running
    finally:
        running.stop_file.touch()
        for proc in running.procs:
            if proc.poll() is None:
                try:
                    proc.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()


def missing(db: Path, acked: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The acknowledged writes ``db`` does not hold."""
    conn = sqlite3.connect(db)
    try:
        lost = []
        for entry in acked:
            if entry["kind"] == "post" and entry["id"] is None:  # applied, answer lost
                row = conn.execute("SELECT 1 FROM messages WHERE body = ?", (entry["body"],)).fetchone()
                found = row is not None
            elif entry["kind"] == "post":
                row = conn.execute("SELECT body FROM messages WHERE id = ?", (entry["id"],)).fetchone()
                found = row is not None and row[0] == entry["body"]
            elif entry["kind"] == "claim":
                row = conn.execute(
                    "SELECT a.handle FROM claims c JOIN agents a ON a.id = c.holder_id WHERE c.thread_id = ?",
                    (entry["thread"],),
                ).fetchone()
                found = row is not None
            else:
                row = conn.execute(
                    "SELECT r.body FROM kb_documents d JOIN kb_revisions r ON r.document_id = d.id "
                    "WHERE d.path = ? AND r.revision = 1",
                    (entry["path"],),
                ).fetchone()
                found = row is not None and row[0] == entry["body"]
            if not found:
                lost.append(entry)
        return lost
    finally:
        conn.close()


def integrity(db: Path) -> list[tuple[Any, ...]]:
    conn = sqlite3.connect(db)
    try:
        return conn.execute("PRAGMA integrity_check").fetchall()
    finally:
        conn.close()
