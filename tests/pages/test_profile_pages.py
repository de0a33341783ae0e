"""/fleet/profiles: profiles made and changed on a page, through the registry service the API calls.

What the form saves is what the API then answers; a refused form (a bad name, an
unknown skill, a name taken, an archived workspace, a stale version) comes back
with what was typed and the error in one line, and the database is as it was.
"""

from __future__ import annotations

import asyncio
import html
import re
from typing import Any

import pytest

from board.server.services.registry import HARNESSES
from tests.support.boardtest import World, db_rows, held, snapshot
from tests.support.fleettest import enroll_keeper
from tests.support.pages_support import Browser, sign_in

ERROR = re.compile(r'id="profile-error" role="alert" data-code="([A-Z_]+)">([^<]*)</p>')

COMMAND_FORM = {
    "name": "cmd-dev",
    "workspace": "proj",
    "harness": "command",
    "model": "m1",
    "repo": "~/src/proj",
    "command_template": "python3 agent.py {flags} --resume {session} {prompt}",
    "command_session_field": "result.session_id",
    "skills": "review, release-notes",
    "mcp": "true",
    "flags": "--allowed=Read,Write\r\n\r\n  --verbose  \r\n",
    "watch": "#lobby, builds",
    "identity": "You are the proj command bot.\r\nBe brief.",
    "rotate_after_turns": "10",
    "rotate_after_tokens": "",
}


def stored(world: World) -> list[Any]:
    """Everything a profile write touches: its rows, its skills and bots, and the audit log."""
    where = world.board.db_path
    return [
        db_rows(where, "SELECT * FROM profiles ORDER BY id"),
        db_rows(where, "SELECT * FROM profile_skills ORDER BY profile_id, position"),
        db_rows(where, "SELECT * FROM bot_profiles ORDER BY 1, 2"),
        db_rows(where, "SELECT count(*) FROM audit"),
        snapshot(where),
    ]


def refusal(page: str) -> tuple[str, str]:
    """The form's one line of error: its code and its message."""
    found = ERROR.search(page)
    assert found, "no error line next to the form"
    return found.group(1), html.unescape(found.group(2))


async def skills(world: World) -> None:
    for name in ("review", "release-notes"):
        await world.human.create_skill(name, f"# {name}\n\nHow to {name}.\n")


async def signed_in(world: World) -> Browser:
    return await sign_in(world.board, "alice")


async def test_a_profile_made_on_the_page_is_the_one_the_api_answers(world: World) -> None:
    await skills(world)
    await world.human.create_workspace("old", "Old project")
    await world.human.archive_workspace("old")
    b = await signed_in(world)
    try:
        status, page = await b.get("/fleet/profiles")
        assert status == 200
        assert "No profiles yet: make the first one below." in page
        assert '<form method="post" action="/fleet/profiles" id="profile-form"' in page
        select = page.split('name="workspace"')[1].split("</select>")[0]
        writable = ["admin", "other", "proj"]  # not the archived one
        assert re.findall(r'<option value="([^"]+)"', select) == writable
        harnesses = page.split('name="harness"')[1].split("</select>")[0]
        assert re.findall(r"<option[^>]*>([a-z]+)</option>", harnesses) == list(HARNESSES)
        assert "On this board: release-notes, review." in page
        status, location = await b.post("/fleet/profiles", COMMAND_FORM)
        assert (status, location) == (303, "/fleet/profiles/cmd-dev")
        profile = await world.human.profile("cmd-dev")
        assert {k: profile[k] for k in ("workspace", "harness", "model", "repo", "mcp", "updated_by")} == {
            "workspace": "proj",
            "harness": "command",
            "model": "m1",
            "repo": "~/src/proj",
            "mcp": True,
            "updated_by": "alice",
        }
        assert profile["command_template"] == "python3 agent.py {flags} --resume {session} {prompt}"
        assert profile["command_session_field"] == "result.session_id"
        assert profile["skills"] == ["review", "release-notes"]
        assert profile["flags"] == ["--allowed=Read,Write", "--verbose"]  # one per line, commas kept
        assert profile["watch"] == ["lobby", "builds"]
        assert profile["identity"] == "You are the proj command bot.\nBe brief."
        assert (profile["rotate_after_turns"], profile["rotate_after_tokens"]) == (10, None)
        status, page = await b.get(location)
        assert status == 200
        # Just saved, by the board's wall clock (on a busy machine some seconds may pass).
        stamp = r'<time datetime="[0-9TZ:-]+" title="[^"]+ UTC">(just now|\d+ s ago)</time>'
        saved = rf"Saved: version 1, by alice, {stamp}\."
        assert re.search(saved, page)
        assert '<input type="hidden" name="base_version" value="1">' in page
        assert 'name="name"' not in page and 'name="workspace"' not in page  # fixed once made
        assert 'value="python3 agent.py {flags} --resume {session} {prompt}"' in page
        assert 'value="review release-notes"' in page and 'value="lobby builds"' in page
        assert ">--allowed=Read,Write\n--verbose</textarea>" in page
        assert 'name="mcp" value="true" checked' in page
        assert 'name="rotate_after_turns" type="number" min="0" value="10"' in page
        assert 'name="rotate_after_tokens" type="number" min="0" value=""' in page
        status, page = await b.get("/fleet/profiles")
        row = page.split('<tr id="profile-cmd-dev">')[1].split("</tr>")[0]
        for shown in ('href="/fleet/profiles/cmd-dev"', ">proj</a>", "command", "m1", "~/src/proj", "—"):
            assert shown in row, shown
    finally:
        await b.close()


async def test_saving_the_form_writes_the_whole_profile_and_keeps_its_bots(world: World) -> None:
    await skills(world)
    await world.human.create_profile(
        "proj-dev", "proj", "claude", model="m1", flags=["-x"], skills=["review"], mcp=True, bots=["pb"]
    )
    b = await signed_in(world)
    try:
        status, page = await b.get("/fleet/profiles/proj-dev")
        assert status == 200 and 'href="/a/pb">pb</a>' in page
        form = {"base_version": "1", "harness": "codex", "model": "", "repo": "", "skills": "", "flags": ""}
        form |= {"watch": "lobby", "identity": "", "command_template": "", "command_session_field": ""}
        status, location = await b.post("/fleet/profiles/proj-dev", form)  # mcp unticked: not sent
        assert (status, location) == (303, "/fleet/profiles/proj-dev")
        profile = await world.human.profile("proj-dev")
        assert (profile["harness"], profile["model"]) == ("codex", "")
        assert (profile["flags"], profile["skills"]) == ([], [])
        assert (profile["mcp"], profile["watch"], profile["version"]) == (False, ["lobby"], 2)
        assert profile["bots"] == ["pb"]  # not on the form: kept
        status, page = await b.get(location)
        assert "Saved: version 2, by alice" in page
    finally:
        await b.close()


async def test_a_page_save_ends_the_bots_streams_only_when_it_moves_their_watch(world: World) -> None:
    """The form sends every field: a save that changes the model alone, watch as it was, leaves
    a bot's wake stream open; one with a new watch ends it (``rescoped``), for the bot's daemon
    to take the watch."""
    await world.human.create_profile("proj-dev", "proj", "claude", watch=["lobby"], bots=["pb"])
    b = await signed_in(world)
    form = {"harness": "claude", "repo": "", "skills": "", "flags": "", "identity": ""}
    form |= {"command_template": "", "command_session_field": "", "watch": "lobby"}
    since = int((await world.bot.me())["cursor"])
    try:
        async with await world.bot.wake_stream(since=since, beat=60) as stream:
            lines = aiter(stream)
            await held(world.board)
            saved = await b.post("/fleet/profiles/proj-dev", form | {"base_version": "1", "model": "m2"})
            assert saved == (303, "/fleet/profiles/proj-dev")
            note = await world.human.post("@pb after the save", channel="lobby", workspace="proj")
            assert (await asyncio.wait_for(anext(lines), 10))["message"]["id"] == note["id"]
            saved = await b.post(
                "/fleet/profiles/proj-dev", form | {"base_version": "2", "watch": "lobby, ops"}
            )
            assert saved == (303, "/fleet/profiles/proj-dev")
            assert await asyncio.wait_for(anext(lines), 10) == {"cursor": note["id"], "end": "rescoped"}
        assert (await world.human.profile("proj-dev"))["watch"] == ["lobby", "ops"]
    finally:
        await b.close()


CREATE_REFUSALS = [
    ({"name": "Bad Name"}, "INVALID_ARGUMENT", 422, "The name must match"),
    ({"skills": "review nope"}, "NOT_FOUND", 404, "No such skill nope"),
    ({"name": "proj-dev"}, "NAME_CONFLICT", 409, "Profile 'proj-dev' exists"),
    ({"workspace": "old"}, "FORBIDDEN", 403, "Workspace old is archived and read-only."),
    ({"workspace": "nowhere"}, "NOT_FOUND", 404, "No such workspace"),
    ({"watch": "lobby bad/slug"}, "INVALID_ARGUMENT", 422, "The field watch[1] must match"),
    ({"mcp": "maybe"}, "INVALID_ARGUMENT", 422, "The mcp must be true or false."),
    ({"rotate_after_turns": "-3"}, "INVALID_ARGUMENT", 422, "The field rotate_after_turns "),
    ({"owner": "bob"}, "INVALID_ARGUMENT", 422, "Unknown field owner;"),  # strict, as the API
]
# The refusals above that name their input: it is marked invalid.
MARKED = ("name", "watch", "rotate_after_turns")


@pytest.mark.parametrize(("change", "code", "status", "message"), CREATE_REFUSALS, ids=lambda c: str(c))
async def test_a_refused_new_profile_keeps_what_was_typed_and_writes_nothing(
    world: World, change: dict[str, str], code: str, status: int, message: str
) -> None:
    await skills(world)
    await world.human.create_workspace("old", "Old project")
    await world.human.archive_workspace("old")
    await world.human.create_profile("proj-dev", "proj", "claude")
    b = await signed_in(world)
    try:
        before = stored(world)
        typed = {**COMMAND_FORM, "model": "typed <model>", **change}
        answer, page = await b.post("/fleet/profiles", typed)
        assert answer == status
        assert refusal(page)[0] == code and message in refusal(page)[1], refusal(page)
        assert stored(world) == before
        assert 'value="typed &lt;model&gt;"' in page  # what was typed, escaped
        assert f'value="{html.escape(typed["name"])}"' in page
        assert ">You are the proj command bot.\r\nBe brief.</textarea>" in page
        assert 'id="profile-proj-dev"' in page  # the list is still there
        marked = re.findall(r'name="(\w+)"[^>]*aria-invalid="true"', page)
        assert marked == [name for name in MARKED if name in change and code == "INVALID_ARGUMENT"]
    finally:
        await b.close()


async def test_a_save_over_a_newer_version_is_refused_then_made_knowingly(world: World) -> None:
    await world.human.create_profile("proj-dev", "proj", "claude", model="m1")
    b = await signed_in(world)
    try:
        status, page = await b.get("/fleet/profiles/proj-dev")
        assert '<input type="hidden" name="base_version" value="1">' in page
        await world.human.update_profile("proj-dev", model="m2", base_version=1)  # someone else, meanwhile
        before = stored(world)
        mine = {"base_version": "1", "harness": "claude", "model": "m3", "identity": "mine\r\n"}
        status, page = await b.post("/fleet/profiles/proj-dev", mine)
        assert status == 409
        assert refusal(page) == (
            "VERSION_CONFLICT",
            "Profile proj-dev is at version 2, not 1: read it again, merge, and retry.",
        )
        assert stored(world) == before
        assert (await world.human.profile("proj-dev"))["model"] == "m2"
        assert 'value="m3"' in page  # what was typed
        saved_now = page.split('id="saved-now"')[1].split("</section>")[0]
        assert '<tr class="changed"><th>model</th><td><pre>m2</pre>' in saved_now
        assert "<tr><th>harness</th><td><pre>claude</pre>" in saved_now
        assert '<input type="hidden" name="base_version" value="2">' in page  # saving again replaces v2
        status, location = await b.post("/fleet/profiles/proj-dev", {**mine, "base_version": "2"})
        assert (status, location) == (303, "/fleet/profiles/proj-dev")
        profile = await world.human.profile("proj-dev")
        assert (profile["model"], profile["identity"], profile["version"]) == ("m3", "mine\n", 3)
    finally:
        await b.close()


SAVE_REFUSALS = [
    ({"skills": "nope"}, "NOT_FOUND", 404, "No such skill nope"),
    ({"harness": "vim"}, "INVALID_ARGUMENT", 422, "The harness must be one of"),
    ({"name": "renamed"}, "INVALID_ARGUMENT", 422, "Unknown field name;"),
    ({"base_version": "x1"}, "INVALID_ARGUMENT", 422, "The field base_version must be a whole number."),
]


@pytest.mark.parametrize(("change", "code", "status", "message"), SAVE_REFUSALS, ids=lambda c: str(c))
async def test_a_refused_save_keeps_what_was_typed_and_writes_nothing(
    world: World, change: dict[str, str], code: str, status: int, message: str
) -> None:
    await world.human.create_profile("proj-dev", "proj", "claude", model="m1")
    b = await signed_in(world)
    try:
        before = stored(world)
        typed = {"base_version": "1", "harness": "claude", "model": "typed", **change}
        answer, page = await b.post("/fleet/profiles/proj-dev", typed)
        assert answer == status
        assert refusal(page)[0] == code and message in refusal(page)[1], refusal(page)
        assert stored(world) == before
        assert 'value="typed"' in page and 'id="saved-now"' not in page
    finally:
        await b.close()


async def test_an_archived_workspaces_profile_shows_read_only_and_refuses_a_save(world: World) -> None:
    await world.human.create_workspace("old", "Old project")
    await world.human.create_profile("old-dev", "old", "claude")
    await world.human.archive_workspace("old")
    b = await signed_in(world)
    try:
        status, page = await b.get("/fleet/profiles/old-dev")
        assert status == 200 and "old is archived: its profiles are read-only." in page
        assert '<fieldset class="fields" disabled>' in page
        before = stored(world)
        status, page = await b.post("/fleet/profiles/old-dev", {"base_version": "1", "harness": "codex"})
        assert status == 403 and refusal(page) == ("FORBIDDEN", "Workspace old is archived and read-only.")
        assert stored(world) == before
    finally:
        await b.close()


async def test_a_profile_form_without_its_csrf_token_writes_nothing(world: World) -> None:
    await world.human.create_profile("proj-dev", "proj", "claude")
    b = await signed_in(world)
    try:
        before = stored(world)
        status, _ = await b.post("/fleet/profiles", {**COMMAND_FORM}, csrf="")
        assert status == 403
        status, _ = await b.post("/fleet/profiles/proj-dev", {"harness": "codex"}, csrf="wrong")
        assert status == 403
        assert stored(world) == before
        status, _ = await b.get("/fleet/profiles/nope")
        assert status == 404
    finally:
        await b.close()


async def test_a_profile_made_on_the_page_runs_a_bot_from_fleet(world: World) -> None:
    await skills(world)
    await enroll_keeper(world.board, world.human, "box1")
    b = await signed_in(world)
    try:
        assert (await b.post("/fleet/profiles", COMMAND_FORM))[0] == 303
        assign = {"handle": "cmd1", "machine": "box1", "profile": "cmd-dev"}
        status, location = await b.post("/fleet/bots", assign)
        assert (status, location) == (303, "/fleet")
        bot = (await world.human.fleet())["machines"][0]["bots"][0]
        assert (bot["handle"], bot["workspace"], bot["profile"]) == ("cmd1", "proj", "cmd-dev")
        status, page = await b.get("/fleet/profiles/cmd-dev")
        assert 'href="/a/cmd1">cmd1</a>' in page
    finally:
        await b.close()
