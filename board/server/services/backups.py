"""Backups taken through the API: humans only, always under the board's state directory."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from ..errors import BoardError
from ..principal import Principal
from ..settings import state_dir
from ..store import backup as store
from ..store.sqlitefile import private_dir
from . import actions, audit
from .context import Context

#: The board copies only its own SQLite file; a PostgreSQL database has its own tools.
POSTGRES_BACKUPS = (
    "This board runs on PostgreSQL: back it up with pg_dump and restore it with pg_restore "
    "(or the server's own backups), not through the board."
)


def backup_dir(ctx: Context) -> Path:
    """Where API backups go: ``backups/`` beside the database, never a caller-chosen path."""
    return state_dir(ctx.settings) / "backups"


async def take(ctx: Context, p: Principal) -> dict[str, Any]:
    """A consistent copy of the live database; the board keeps serving while it is taken."""
    actions.require(p, "backup.take")
    if ctx.settings.database_url:
        raise BoardError(POSTGRES_BACKUPS)
    started = ctx.now()
    folder = backup_dir(ctx)
    await asyncio.to_thread(private_dir, folder)
    path = await asyncio.to_thread(store.backup, Path(ctx.settings.db), folder)
    size = path.stat().st_size
    await ctx.db.write(
        lambda conn: audit.record(conn, ctx, p, "board.backup", path.name, details={"bytes": size})
    )
    return {"path": str(path), "bytes": size, "started_at": started}
