"""Wakes summed per UTC day, workspace, bot, routine and harness: what the cost page reads."""

from __future__ import annotations

from dataclasses import dataclass

from .connection import Connection
from .rows import Row, all_rows

#: A wake's routine: the routine whose thread holds the earliest message that triggered it.
#: A routine's runs post their prompts in its one thread, and the bot's follow-ups there
#: are woken by that thread's messages, so each wake counts for at most one routine.
ROUTINE_OF_WAKE = """(SELECT r.name FROM routines r JOIN messages m ON m.thread_id = r.thread_id
    WHERE m.id = (SELECT MIN(j.value) FROM json_each(k.trigger_ids) j))"""

#: Token sums of the wakes whose harness reported no cost: the estimate prices them.
UNREPORTED = "CASE WHEN cost_usd IS NULL THEN {} END"


@dataclass(frozen=True)
class CostFilter:
    start: str  # started_at from (inclusive), RFC 3339 UTC
    end: str  # started_at before
    workspace_ids: list[int] | None  # None: every workspace
    agent_id: int | None = None
    routine: str | None = None


async def daily(conn: Connection, f: CostFilter) -> list[Row]:
    """One row per (day, workspace, bot, routine, harness): wakes, token sums, the reported cost,
    and the token sums of the wakes that reported none."""
    clauses = ["k.started_at >= ?", "k.started_at < ?"]
    params: list[str | int] = [f.start, f.end]
    if f.workspace_ids is not None:
        clauses.append(f"k.workspace_id IN ({','.join('?' * len(f.workspace_ids)) or 'NULL'})")
        params += f.workspace_ids
    if f.agent_id is not None:
        clauses.append("k.agent_id = ?")
        params.append(f.agent_id)
    outer = ""
    if f.routine is not None:
        outer = "WHERE x.routine = ?"
        params.append(f.routine)
    return await all_rows(
        conn,
        f"""SELECT x.day, x.workspace, x.bot, x.routine, x.harness, COUNT(*) AS wakes,
              SUM(input_tokens) AS input_tokens, SUM(output_tokens) AS output_tokens,
              SUM(cache_read_tokens) AS cache_read_tokens, SUM(cache_write_tokens) AS cache_write_tokens,
              SUM(cost_usd) AS reported_usd, COUNT(cost_usd) AS reported_wakes,
              SUM({UNREPORTED.format("input_tokens")}) AS unreported_input,
              SUM({UNREPORTED.format("output_tokens")}) AS unreported_output,
              SUM({UNREPORTED.format("cache_read_tokens")}) AS unreported_cache_read,
              SUM({UNREPORTED.format("cache_write_tokens")}) AS unreported_cache_write,
              SUM(CASE WHEN cost_usd IS NULL AND input_tokens IS NULL AND output_tokens IS NULL
                  THEN 1 ELSE 0 END) AS tokenless_wakes
            FROM (SELECT substr(k.started_at, 1, 10) AS day, w.slug AS workspace, a.handle AS bot,
                    {ROUTINE_OF_WAKE} AS routine, k.harness, k.input_tokens, k.output_tokens,
                    k.cache_read_tokens, k.cache_write_tokens, k.cost_usd
                  FROM wakes k JOIN agents a ON a.id = k.agent_id JOIN workspaces w ON w.id = k.workspace_id
                  WHERE {" AND ".join(clauses)}) x
            {outer}
            GROUP BY x.day, x.workspace, x.bot, x.routine, x.harness""",
        tuple(params),
    )
