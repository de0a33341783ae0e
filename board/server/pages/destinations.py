"""A human's notification destinations on the settings page, and each one's page with its log.

The settings page (``signin.py``) lists them with the add form and quiet hours; this module
holds the forms' handlers and ``/settings/destinations/{id}``: its settings, the kinds it is
sent, a test send, and its notifications (state, attempts, the error of a failed one).
"""

from __future__ import annotations

from dataclasses import replace

from aiohttp import web

from ..services import destinations, outbound
from .routing import PageCall, PageRoute, redirect

#: Notifications a page of the log shows (the API's default is the house's 20).
LOG_PAGE = 50
#: What each kind of event is, as the pages say it.
KIND_LABELS = {
    "mention": "A message mentions me, or a thread is handed to me",
    "dm": "A message in a conversation of mine",
    "held": "A bot is held (loop guard or budget)",
    "crashed": "A bot of the fleet crashed or is misconfigured",
    "routine": "A routine version awaits approval",
    "run_failed": "A routine run failed or timed out",
    "review": "A knowledge proposal waits for review",
}


def _page(destination_id: int) -> str:
    return f"/settings/destinations/{destination_id}"


async def add(call: PageCall) -> web.StreamResponse:
    """The add form holds the fields of every kind and a browser sends them all (the email's
    security choice with a webhook too): only the chosen kind's go on."""
    own = {"name", "kind", *destinations.FIELDS.get(call.form.get("kind", ""), ())}
    call.form = {name: value for name, value in call.form.items() if name in own}
    made = await destinations.create(call.ctx, call.p, call.parsed_form(destinations.DestinationInput))
    return redirect(_page(made["id"]) + "#kinds")


async def page(call: PageCall) -> web.StreamResponse:
    destination_id = call.int_arg("id")
    destination = await destinations.get_destination(call.ctx, call.p, destination_id)
    q = call.query(destinations.LogQuery)
    if "limit" not in call.request.query:
        q = replace(q, limit=LOG_PAGE)
    log = await destinations.log(call.ctx, call.p, destination_id, q)
    return call.render(
        "destination.html",
        destination=destination,
        log=log,
        kind_labels=KIND_LABELS,
        urgent=outbound.URGENT,
        security=destinations.SECURITY,
    )


async def edit(call: PageCall) -> web.StreamResponse:
    destination_id = call.int_arg("id")
    await destinations.update(
        call.ctx, call.p, destination_id, call.parsed_form(destinations.DestinationInput)
    )
    return redirect(_page(destination_id))


async def kinds(call: PageCall) -> web.StreamResponse:
    """The whole set from the form: an unticked box sends nothing, so that kind is off."""
    destination_id = call.int_arg("id")
    chosen = [kind for kind in outbound.KINDS if kind in call.form]
    await destinations.set_kinds(call.ctx, call.p, destination_id, destinations.KindsInput(kinds=chosen))
    return redirect(_page(destination_id) + "#kinds")


async def test(call: PageCall) -> web.StreamResponse:
    destination_id = call.int_arg("id")
    await destinations.send_test(call.ctx, call.p, destination_id)
    return redirect(_page(destination_id) + "#log")


async def remove(call: PageCall) -> web.StreamResponse:
    await destinations.delete(call.ctx, call.p, call.int_arg("id"))
    return redirect("/settings#destinations")


async def quiet_hours(call: PageCall) -> web.StreamResponse:
    await destinations.set_quiet_hours(call.ctx, call.p, call.parsed_form(destinations.QuietHoursInput))
    return redirect("/settings#quiet-hours")


async def no_quiet_hours(call: PageCall) -> web.StreamResponse:
    await destinations.clear_quiet_hours(call.ctx, call.p)
    return redirect("/settings#quiet-hours")


ROUTES = [
    PageRoute("POST", "/settings/destinations", add, "Add a notification destination."),
    PageRoute("GET", "/settings/destinations/{id}", page, "A destination: its settings, kinds and log."),
    PageRoute("POST", "/settings/destinations/{id}", edit, "Change a destination's settings."),
    PageRoute("POST", "/settings/destinations/{id}/kinds", kinds, "Choose the kinds sent to a destination."),
    PageRoute("POST", "/settings/destinations/{id}/test", test, "Send a destination a test notification."),
    PageRoute("POST", "/settings/destinations/{id}/remove", remove, "Remove a destination and its log."),
    PageRoute("POST", "/settings/quiet-hours", quiet_hours, "Set my quiet hours."),
    PageRoute("POST", "/settings/quiet-hours/clear", no_quiet_hours, "No quiet hours."),
]
