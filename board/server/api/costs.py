"""The cost route: what the wakes cost per UTC day, workspace, bot and routine."""

from __future__ import annotations

from typing import Any

from ..services import costs
from .responses import BOOL, INT, NUM, STR, Schema, array, nullable, obj
from .route import Answer, Call, Route


async def summary(call: Call) -> Any:
    return await costs.costs(call.ctx, call.p, call.query)


#: What a group of wakes cost: ``cost_usd`` is ``reported_usd`` (as the harnesses reported
#: it) plus ``estimated_usd`` (priced from tokens, services/prices.py); ``estimate`` says
#: whether any of it is estimated, ``unpriced_wakes`` counts wakes with neither.
SUMS: dict[str, Schema] = {
    "wakes": INT,
    "input_tokens": INT,
    "output_tokens": INT,
    "cache_read_tokens": INT,
    "cache_write_tokens": INT,
    "cost_usd": NUM,
    "reported_usd": NUM,
    "estimated_usd": NUM,
    "unpriced_wakes": INT,
    "estimate": BOOL,
}
DAY: Schema = {"type": "string", "format": "date"}


def _sums(**keys: Schema) -> Schema:
    return obj({**SUMS, **keys})


ROUTES = [
    Route(
        "GET",
        "/api/costs",
        summary,
        "What wakes cost per UTC day, workspace, bot and routine; estimates marked.",
        answer=Answer(
            obj(
                {
                    "timezone": {"const": "UTC"},
                    "days": INT,
                    "from": DAY,
                    "to": DAY,
                    "total": _sums(),
                    "by_day": array(_sums(day=DAY)),
                    "workspaces": array(_sums(workspace=STR)),
                    "bots": array(_sums(workspace=STR, bot=STR)),
                    "routines": array(_sums(routine=STR)),
                    "rows": array(_sums(day=DAY, workspace=STR, bot=STR, routine=nullable(STR))),
                    "rows_complete": BOOL,
                }
            )
        ),
        query=costs.CostQuery,
    ),
]
