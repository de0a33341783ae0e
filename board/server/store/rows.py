"""Reading rows: the query helpers every store module uses, and the typed rows services pass around.

A row is what the connection hands back (``sqlite3.Row``, or the PostgreSQL store's
``Row``): read by column name or by position, never changed. The typed rows below
name the columns of the rows that cross into services, so a misspelt column is a
type error; at run time they are still the connection's rows, read only by key.
"""

from __future__ import annotations

from typing import Any

from .connection import Connection

#: A result row, read by column name or position (``sqlite3.Row``, or the PostgreSQL store's).
Row = Any


async def one(conn: Connection, sql: str, params: tuple[Any, ...] = ()) -> Row | None:
    """The first row of a query, or None."""
    rows = await conn.execute_fetchall(sql, params)
    return next(iter(rows), None)


async def all_rows(conn: Connection, sql: str, params: tuple[Any, ...] = ()) -> list[Row]:
    """All rows in one round trip to the connection's thread."""
    return list(await conn.execute_fetchall(sql, params))


async def count(conn: Connection, sql: str, params: tuple[Any, ...] = ()) -> int:
    """The first column of the first row as an int (a ``count(*)``); 0 when there is no row."""
    row = await one(conn, sql, params)
    return int(row[0]) if row else 0


async def first_column(conn: Connection, sql: str, params: tuple[Any, ...] = ()) -> list[Any]:
    """The first column of every row."""
    return [row[0] for row in await all_rows(conn, sql, params)]
