"""The forge's intake for humans: each source with its webhook URL and mappings, and the log of deliveries.

Sources and their mappings are set here or through ``PUT /api/intake/sources/{name}``
(docs/intake.md), by the same services; the page shows what they are, never their
secrets (a secret or token field left empty keeps the one set), what each delivery did or
why it was ignored, and the replies posted back to the forge with how each went.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from urllib.parse import urlsplit

from aiohttp import web

from ..api.keys import HOSTS
from ..errors import InvalidArgument
from ..services import intake
from ..validation import arg
from .routing import PageCall, PageRoute, redirect

LOG_PAGE = 50


@dataclass
class IntakeQuery:
    source: str | None = arg(None, pattern=intake.NAME_PATTERN)
    before: int = arg(0, min=0)


async def index(call: PageCall) -> web.StreamResponse:
    q = call.query(IntakeQuery)
    sources = await intake.list_sources(call.ctx, call.p, intake.SourceList(limit=500))
    log = await intake.list_deliveries(
        call.ctx, call.p, intake.DeliveryList(source=q.source, before=q.before, limit=LOG_PAGE)
    )
    out = await intake.list_replies(call.ctx, call.p, q.source, LOG_PAGE)
    board = call.request.app[HOSTS].board_url(call.request)
    return call.render(
        "intake.html",
        q=q,
        sources=sources["sources"],
        log=log,
        replies=out,
        board=board,
        loopback=on_loopback(board),
    )


def on_loopback(url: str) -> bool:
    """Whether a URL names this machine itself, an address no forge elsewhere can reach."""
    host = (urlsplit(url).hostname or "").lower()
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@dataclass
class SourceForm(intake.SourceInput):
    """The page's form of a source: its settings and, beside them, its name."""

    name: str = arg("", max_len=64)


@dataclass
class MappingKey:
    repository: str = arg(pattern=intake.REPOSITORY_PATTERN)
    label: str = arg("", max_len=64)


@dataclass
class Confirm:
    confirm: str = arg("", max_len=64)


async def save_source(call: PageCall) -> web.StreamResponse:
    form = call.parsed_form(SourceForm)
    await intake.put_source(call.ctx, call.p, form.name, form)
    return redirect(f"/intake#source-{form.name}")


async def add_mapping(call: PageCall) -> web.StreamResponse:
    name = call.arg("name")
    await intake.change_mappings(call.ctx, call.p, name, add=call.parsed_form(intake.MappingInput))
    return redirect(f"/intake#source-{name}")


async def remove_mapping(call: PageCall) -> web.StreamResponse:
    name, key = call.arg("name"), call.parsed_form(MappingKey)
    await intake.change_mappings(call.ctx, call.p, name, remove=(key.repository, key.label))
    return redirect(f"/intake#source-{name}")


async def delete_source(call: PageCall) -> web.StreamResponse:
    name = call.arg("name")
    if call.parsed_form(Confirm).confirm != name:
        raise InvalidArgument(f"Type the source's name, {name}, to delete it with its mappings and log.")
    await intake.delete_source(call.ctx, call.p, name)
    return redirect("/intake")


ROUTES = [
    PageRoute(
        "GET",
        "/intake",
        index,
        "The forge's intake: sources, mappings, each delivery's outcome, and the replies out.",
    ),
    PageRoute("POST", "/intake/sources", save_source, "Add a source, or change one (empty secrets kept)."),
    PageRoute("POST", "/intake/sources/{name}/mappings", add_mapping, "Map a repository of a source."),
    PageRoute("POST", "/intake/sources/{name}/mappings/remove", remove_mapping, "Remove a mapping."),
    PageRoute("POST", "/intake/sources/{name}/delete", delete_source, "Delete a source, its name typed."),
]
