"""Database files damaged the two ways a disk or a stray write damages them."""

from __future__ import annotations

import random
import sqlite3
from pathlib import Path

#: A name no UTF-8 decoder accepts: SQLite quotes a damaged schema's name in its error, and
#: Python decodes that error strictly.
NOT_UTF8 = b"\xcfA\xcf"


def overwrite_pages(db: Path, seed: int = 0) -> None:
    """Overwrite part of every third page from the third on: tables and indexes the board uses."""
    noise = random.Random(seed)
    size = db.stat().st_size
    assert size > 8 * 4096
    with db.open("r+b") as f:
        for page in range(2, size // 4096, 3):
            f.seek(page * 4096 + 100)
            f.write(noise.randbytes(600))


def overwrite_index(db: Path, seed: int = 0) -> None:
    """Overwrite a page of an index of agents: its table and ``sqlite_sequence`` still read."""
    conn = sqlite3.connect(db)
    try:
        (root,) = conn.execute(
            "SELECT rootpage FROM sqlite_master WHERE type = 'index' AND tbl_name = 'agents' "
            "ORDER BY name LIMIT 1"
        ).fetchone()
    finally:
        conn.close()
    with db.open("r+b") as f:
        f.seek((root - 1) * 4096)
        f.write(random.Random(seed).randbytes(4096))


def mangle_schema(db: Path) -> None:
    """Give one index a name that is not UTF-8 and a definition that does not parse."""
    conn = sqlite3.connect(db)
    try:
        conn.execute("PRAGMA writable_schema = ON")
        changed = conn.execute(
            "UPDATE sqlite_master SET name = CAST(? AS TEXT), sql = 'CREATE INDEX broken ON' "
            "WHERE name = (SELECT name FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL "
            "ORDER BY name LIMIT 1)",
            (NOT_UTF8,),
        )
        assert changed.rowcount == 1
        conn.commit()
    finally:
        conn.close()
