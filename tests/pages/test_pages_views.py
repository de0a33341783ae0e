"""Page behaviour over HTTP: paging, typed confirmations, tokens shown once, audit filters."""

from __future__ import annotations

import html
import json
import re

import aiohttp

from board.server.clock import ManualClock
from board.server.pages.board import STREAM_PAGE
from board.server.pages.signin import SENT_AGAIN
from board.server.services import auth
from tests.support.boardtest import Board, World, db_rows, snapshot
from tests.support.pages_support import pages_as, sign_in, tab_panels


async def test_a_channel_opens_on_its_latest_page_and_links_to_older(world: World) -> None:
    ids = [(await world.bot.post(f"root number {i}", channel="lobby"))["id"] for i in range(STREAM_PAGE + 5)]
    alice = await sign_in(world.board)
    status, page = await alice.get("/c/lobby?workspace=proj")
    assert status == 200
    shown = [int(i) for i in re.findall(r'<article class="msg[^"]*" id="m(\d+)"', page)]
    assert shown == ids[5:]
    older = re.search(r'href="([^"]*before=\d+)" id="older"', page)
    assert older is not None
    status, page = await alice.get(older.group(1).replace("&amp;", "&"))
    shown = [int(i) for i in re.findall(r'<article class="msg[^"]*" id="m(\d+)"', page)]
    assert shown == ids[:5] and 'id="older"' not in page
    await alice.close()


async def test_deleting_a_workspace_needs_its_slug_typed(world: World) -> None:
    await world.human.create_workspace("gone")
    alice = await sign_in(world.board)
    status, _ = await alice.post("/workspaces/gone/archive", {})
    assert status == 303
    before = snapshot(world.board.db_path)
    status, _ = await alice.post("/workspaces/gone/delete", {"confirm": "gon"})
    assert status == 422
    assert snapshot(world.board.db_path) == before
    status, _ = await alice.post("/workspaces/gone/delete", {"confirm": "gone"})
    assert status == 303
    assert db_rows(world.board.db_path, "SELECT count(*) FROM workspaces WHERE slug = 'gone'") == [(0,)]
    await alice.close()


async def test_redaction_needs_the_word_typed(world: World) -> None:
    await world.bot.put_document("notes.md", "# Notes\n\nsecret\n", 0, "start")
    alice = await sign_in(world.board)
    form = {"workspace": "proj", "revision": "1", "reason": "leak"}
    before = snapshot(world.board.db_path)
    status, page = await alice.post("/kb/proj/notes.md/redact", {**form, "confirm": "yes"})
    assert status == 422 and "Type redact" in page
    assert snapshot(world.board.db_path) == before
    assert db_rows(world.board.db_path, "SELECT count(*) FROM kb_revisions WHERE body LIKE '%secret%'") == [
        (1,)
    ]
    await alice.close()


async def test_an_api_token_is_shown_once_and_revoked_from_settings(world: World) -> None:
    alice = await sign_in(world.board)
    status, page = await alice.post("/settings/tokens", {})
    token = re.search(r'id="new-token">(bh_[^<]+)<', page)
    assert status == 200 and token is not None
    async with aiohttp.ClientSession() as http:
        headers = {"Authorization": f"Bearer {token.group(1)}"}
        async with http.get(world.board.url + "/api/me", headers=headers) as resp:
            assert resp.status == 200
        status, page = await alice.get("/settings")
        assert token.group(1) not in page
        token_id = max(int(i) for i in re.findall(r"/settings/tokens/(\d+)/revoke", page))
        status, _ = await alice.post(f"/settings/tokens/{token_id}/revoke", {})
        assert status == 303
        async with http.get(world.board.url + "/api/me", headers=headers) as resp:
            assert resp.status == 401
    await alice.close()


async def test_a_token_form_sent_again_makes_no_second_token_and_says_where_the_first_is(
    world: World,
) -> None:
    """The page a token's creation renders is the form's answer: reloading it sent the form
    again and made a second live token, silently."""
    alice = await sign_in(world.board)
    try:
        _, page = await alice.get("/settings")
        sent = re.search(
            r'<form method="post" action="/settings/tokens" id="token-form">(.*?)</form>', page, re.S
        )
        assert sent is not None
        request_id = re.search(r'name="request_id" value="([^"]+)"', sent.group(1))
        assert request_id is not None
        form = {"name": "laptop", "request_id": request_id.group(1)}
        status, first = await alice.post("/settings/tokens", form)
        assert status == 200 and re.search(r'id="new-token">bh_', first)
        before = snapshot(world.board.db_path)
        status, again = await alice.post("/settings/tokens", form)  # the reload
        assert status == 409 and 'id="new-token"' not in again and "bh_" not in again
        assert html.escape(SENT_AGAIN) in again and 'data-code="REQUEST_ID_REUSE"' in again
        assert again.count('<strong class="token-name"><bdi>laptop</bdi></strong>') == 1
        assert snapshot(world.board.db_path) == before  # no second token
    finally:
        await alice.close()


async def test_an_api_token_carries_the_name_its_human_gives_it(world: World) -> None:
    """With several tokens listed only as "token #7", nobody could tell which one the CI held.
    A token takes a name when made; the list shows it (escaped: it is the human's own text),
    one made without a name keeps its number, and a name too long is refused, making none."""
    alice = await sign_in(world.board)
    status, page = await alice.post("/settings/tokens", {"name": "  <b>CI</b> deploys  "})
    assert status == 200 and "new-token" in page
    assert '<strong class="token-name"><bdi>&lt;b&gt;CI&lt;/b&gt; deploys</bdi></strong>' in page
    status, page = await alice.post("/settings/tokens", {"name": ""})
    unnamed = max(int(i) for i in re.findall(r"/settings/tokens/(\d+)/revoke", page))
    assert status == 200 and f"token #{unnamed}," in page
    made = db_rows(world.board.db_path, "SELECT id, name FROM tokens WHERE kind = 'human' ORDER BY id")
    assert [name for _, name in made[-2:]] == ["<b>CI</b> deploys", ""] and made[-1][0] == unnamed
    entries = (await world.human.call("GET", "/api/audit", params={"action": "token.create"}))[1]["entries"]
    named = [e for e in entries if e["details"].get("token") == made[-2][0]]
    assert (
        len(named) == 1
        and named[0]["actor"] == "alice"
        and named[0]["details"]["name"] == "<b>CI</b> deploys"
    )
    before = snapshot(world.board.db_path)
    status, page = await alice.post("/settings/tokens", {"name": "x" * 65})
    assert status == 422 and "new-token" not in page
    assert "The name is 65 characters; at most 64 are allowed." in page
    assert snapshot(world.board.db_path) == before
    await alice.close()


async def test_the_audit_log_filters_by_time(world: World) -> None:
    entries = (await world.human.call("GET", "/api/audit", params={"limit": "500"}))[1]["entries"]
    first_at = entries[0]["at"]
    _, later = await world.human.call("GET", "/api/audit", params={"from": "2999-01-01T00:00:00Z"})
    assert later["entries"] == []
    _, until = await world.human.call(
        "GET", "/api/audit", params={"until": "2000-01-01T00:00:00Z", "limit": "500"}
    )
    assert until["entries"] == []
    _, since_first = await world.human.call("GET", "/api/audit", params={"from": first_at, "limit": "500"})
    assert len(since_first["entries"]) == len(entries)
    (status, page), (refused, _) = await pages_as(
        world.board,
        "alice",
        "/audit?action=invite.create&from=2000-01-01T00:00:00Z",
        "/audit?from=not-a-time",
    )
    rows = page.split("<tbody>", 1)[1]  # the pick-lists above offer every action the log holds
    assert status == 200 and "invite.create" in rows and "human.create" not in rows
    assert refused == 422


async def test_a_profile_shows_the_latest_wakes_with_their_cost(world: World) -> None:
    for i in range(25):
        await world.bot.record_wake(
            harness="claude", started_at=f"2026-11-30T04:{i:02d}:00Z", outcome="ok", cost_usd=0.01 * (i + 1)
        )
    [(status, page)] = await pages_as(world.board, "alice", "/a/pb")
    assert status == 200
    assert "2026-11-30T04:24:00Z" in page and "$0.2500" in page  # the newest
    assert "2026-11-30T04:04:00Z" not in page  # past the latest 20
    _, newest = await world.human.call(
        "GET", "/api/wakes", params={"bot": "pb", "before": "1000000", "limit": "2"}
    )
    assert [w["started_at"] for w in newest["wakes"]] == ["2026-11-30T04:24:00Z", "2026-11-30T04:23:00Z"]
    assert newest["has_more"] and newest["next_before"] == newest["wakes"][-1]["id"]


async def test_answers_carry_the_boards_own_time(world: World) -> None:
    alice = await sign_in(world.board)
    async with alice.http.get(world.board.url + "/c/lobby?workspace=proj") as resp:
        assert resp.status == 200
        name, _, duration = resp.headers["Server-Timing"].partition(";dur=")
        assert name == "app" and float(duration) >= 0
        assert "script-src 'self'" in resp.headers["Content-Security-Policy"]
    await alice.close()


async def test_a_new_channel_name_opens_empty_and_its_first_post_creates_it(world: World) -> None:
    # A new channel's page is live from the board's head, not from 0: a busy workspace's past
    # is more than a live page catches up with, and would reload it for ever.
    said = [await world.bot.post(f"busy {n}", channel="lobby") for n in range(3)]
    alice = await sign_in(world.board)
    status, page = await alice.get("/c/release-notes?workspace=proj")
    assert status == 200 and 'id="no-roots"' in page
    assert f'data-cursor="{said[-1]["id"]}"' in page
    status, location = await alice.post("/c/release-notes", {"workspace": "proj", "body": "v1 is out"})
    assert status == 303 and location.startswith("/c/release-notes?workspace=proj&thread=")
    status, page = await alice.get("/c/release-notes?workspace=proj")
    assert "v1 is out" in page and "#release-notes" in page
    status, page = await alice.get("/c/release-notes?workspace=nowhere")
    assert status == 404
    await alice.close()


async def test_onboard_shows_how_to_add_the_boards_mcp_server_to_each_harness(world: World) -> None:
    [(status, page)] = await pages_as(world.board, "alice", "/onboard")
    assert status == 200
    board = world.board.url
    sections = tab_panels(page)
    stdio = f"claude mcp add board --env BOARD_TOKEN=bb_... -- board mcp --board {board}"
    assert stdio in sections["claude"]
    assert f"claude mcp add --transport http board {board}/mcp" in sections["claude"]
    assert f"url = &#34;{board}/mcp&#34;" in sections["codex"]
    for harness in ("gemini", "copilot", "opencode"):
        [text] = re.findall(r'<pre id="mcp-\w+" class="line mcp">(.*?)</pre>', sections[harness], re.S)
        config = json.loads(html.unescape(text))
        assert board in json.dumps(config), harness
    assert 'class="line mcp"' not in sections["command"] and 'class="no-mcp"' in sections["command"]


async def test_a_routine_decision_the_service_refuses_changes_nothing(world: World) -> None:
    fields = {"workspace": "proj", "schedule": "0 2 * * *", "bot": "pb", "prompt": "tidy up"}
    await world.bot.propose_routine("tidy", **fields)
    alice = await sign_in(world.board)
    before = snapshot(world.board.db_path)
    status, page = await alice.post("/routines/tidy/versions/1/reject", {"note": ""})
    assert status == 422 and "note" in page
    status, _ = await alice.post("/routines/tidy/run-now", {})
    assert status == 422  # nothing approved yet
    assert snapshot(world.board.db_path) == before
    status, _ = await alice.post("/routines/tidy/versions/1/approve", {"note": "go"})
    assert status == 303
    before = snapshot(world.board.db_path)
    status, _ = await alice.post("/routines/tidy/versions/1/approve", {"note": "again"})
    assert status == 422
    status, _ = await alice.post("/routines/tidy/resume", {})
    assert status == 422  # not paused
    status, _ = await alice.post("/routines/nope/pause", {})
    assert status == 404
    assert snapshot(world.board.db_path) == before
    actions = db_rows(
        world.board.db_path, "SELECT action FROM audit WHERE action LIKE 'routine.%' ORDER BY id"
    )
    assert [a for (a,) in actions] == ["routine.create", "routine.propose", "routine.approve"]
    await alice.close()


async def test_a_rejected_version_says_so_with_its_note_until_another_is_proposed(world: World) -> None:
    """Rejecting left a card reading only "No approved version": the decision and its reason
    were in the routine's thread alone, so the page looked as if nothing had been proposed."""
    fields = {"workspace": "proj", "schedule": "0 2 * * *", "bot": "pb", "prompt": "tidy up"}
    await world.bot.propose_routine("tidy", **fields)
    alice = await sign_in(world.board)
    status, _ = await alice.post("/routines/tidy/versions/1/reject", {"note": "not <b>now</b>"})
    assert status == 303
    status, page = await alice.get("/routines")
    [card] = re.findall(r'<section class="card routine" id="routine-tidy">(.*?)</section>', page, re.S)
    [said] = re.findall(r'<p class="rejected">(.*?)</p>', card, re.S)
    text = html.unescape(re.sub(r"<[^>]+>", "", said))
    assert text.startswith("Version 1 was rejected by alice") and text.endswith(": not <b>now</b>"), text
    await world.bot.propose_version("tidy", schedule="0 2 * * *", bot="pb", prompt="tidy up, gently")
    status, page = await alice.get("/routines")
    assert 'class="rejected"' not in page and 'id="pending-tidy-2"' in page, "the new proposal is the news"
    await alice.close()


async def test_a_routines_time_allowed_reads_as_its_prompt_gives_it(world: World) -> None:
    """90 s read "at most 1 min a run" while the run's prompt says "You have 90 seconds"."""
    for name, seconds in (("quick", 90), ("hourly", 3600)):
        fields = {"workspace": "proj", "schedule": "0 2 * * *", "bot": "pb", "prompt": "tidy up"}
        await world.bot.propose_routine(name, **fields, max_run_seconds=seconds)
        await world.human.approve_version(name, 1, "go")
    alice = await sign_in(world.board)
    status, page = await alice.get("/routines")
    assert status == 200
    said = dict(re.findall(r'id="routine-(\w+)">.*?at most (.+?) a run', page, re.S))
    assert said == {"quick": "90 s", "hourly": "60 min"}
    await alice.close()


async def test_a_run_due_in_quiet_hours_says_until_when_it_waits(clocked_world: World) -> None:
    """A run the schedule made in quiet hours stays "scheduled" until they end; the runs list
    and the page say so, where the row read only "scheduled" (the clock stands at 04:00 UTC)."""
    world = clocked_world
    fields = {"workspace": "proj", "schedule": "0 4 * * *", "bot": "pb", "prompt": "tidy up"}
    await world.bot.propose_routine("tidy", **fields, quiet_hours="03:00-06:00")
    await world.human.approve_version("tidy", 1, "go")
    runner = world.board.client(await auth.runner_token(world.board.ctx))
    await runner.create_run("tidy", 1, "2026-11-30T04:00:00Z")
    [run] = (await world.human.routine_runs("tidy"))["runs"]
    assert run["state"] == "scheduled" and run["waits_until"] == "2026-11-30T06:00:00Z"
    alice = await sign_in(world.board)
    status, page = await alice.get("/routines")
    assert status == 200
    row = re.search(r'<tr class="run run-scheduled">.*?</tr>', page, re.S)
    assert row is not None and "waits for the quiet hours to end" in row.group(0), page
    await alice.close()


async def test_a_run_reads_in_words_and_links_to_its_prompt(world: World) -> None:
    """A timed-out run reads "timed out" on its row and in "Last run", not the API's
    ``timed_out``, and its row links to the prompt message that started it."""
    fields = {"workspace": "proj", "schedule": "0 2 * * *", "bot": "pb", "prompt": "tidy up"}
    await world.bot.propose_routine("tidy", **fields)
    await world.human.approve_version("tidy", 1, "go")
    runner = world.board.client(await auth.runner_token(world.board.ctx))
    run = await runner.create_run("tidy", 1, "2026-11-30T02:00:00Z")
    started = await runner.start_run("tidy", run["id"])
    await runner.finish_run("tidy", run["id"], "timed_out", "no done in time")
    thread_id = (await world.human.request("GET", "/api/routines/tidy"))["thread_id"]
    alice = await sign_in(world.board)
    status, page = await alice.get("/routines")
    assert status == 200
    assert "timed_out" not in page.replace('class="run run-timed_out"', "")
    assert re.search(r"Last run: .*?\(timed out\)", page), page
    row = re.search(r'<tr class="run run-timed_out">.*?</tr>', page, re.S)
    assert row is not None and '<td class="run-state">timed out' in row.group(0), page
    assert f'href="/t/{thread_id}#m{started["message_id"]}"' in row.group(0), row.group(0)
    await alice.close()


async def test_a_run_waiting_for_the_running_one_says_so_and_run_now_again_changes_nothing(
    clocked_world: World, clock: ManualClock
) -> None:
    world = clocked_world
    fields = {"workspace": "proj", "schedule": "0 2 * * *", "bot": "pb", "prompt": "tidy up"}
    await world.bot.propose_routine("tidy", **fields)
    await world.human.approve_version("tidy", 1, "go")
    runner = world.board.client(await auth.runner_token(world.board.ctx))
    running = await runner.start_run(
        "tidy", (await runner.create_run("tidy", 1, "2026-11-30T02:00:00Z"))["id"]
    )
    alice = await sign_in(world.board)
    await alice.get("/routines")
    status, _ = await alice.post("/routines/tidy/run-now", {})
    assert status == 303
    status, page = await alice.get("/routines")
    [waiting] = [r for r in (await world.human.routine_runs("tidy"))["runs"] if r["state"] == "scheduled"]
    row = re.search(rf'<tr class="run run-scheduled"><td>{waiting["id"]}</td>.*?</tr>', page, re.S)
    assert row is not None and f"waits for run {running['id']}" in row.group(0), page
    assert "waits for" not in page.replace(row.group(0), "")

    clock.advance(5)
    before = snapshot(world.board.db_path)
    status, page = await alice.post("/routines/tidy/run-now", {})
    assert status == 409 and f"Run {waiting['id']} of routine tidy" in html.unescape(page)
    assert snapshot(world.board.db_path) == before
    await alice.close()


async def test_onboard_suggests_only_channels_the_workspace_has(world: World) -> None:
    await world.human.create_workspace("fresh")
    answers = await pages_as(world.board, "alice", "/onboard?workspace=proj", "/onboard?workspace=fresh")
    for workspace, (status, page) in zip(("proj", "fresh"), answers, strict=True):
        assert status == 200
        listed = await world.human.channels(workspace=workspace, limit=500)
        existing = {c["slug"] for c in listed["channels"]}
        watched = set(re.findall(r"--watch ([\w.-]+)", page))
        assert watched and watched <= existing, (workspace, watched, existing)
        assert f"--repo ~/src/{workspace}" in page
    _, page = answers[1]
    assert set(re.findall(r"--watch ([\w.-]+)", page)) == {"lobby"}
    sections = tab_panels(page)
    command = sections["command"]
    assert "--harness command" in command and "BOT_COMMAND_TEMPLATE=" in command
    assert "posted as the bot" in command


async def test_workspaces_lists_the_bots_it_counts_with_their_kind(world: World) -> None:
    invite = await world.human.invite("proj")
    await world.board.client().register("cb", invite["invite"], kind="claude-code")
    [(status, page)] = await pages_as(world.board, "alice", "/workspaces")
    assert status == 200
    card = page[page.index('id="ws-proj"') :]
    card = card[: card.index("</section>")]
    assert "3 bots" in card and "no bots yet" not in card
    members = re.findall(r'<a href="/a/([^"]+)">[^<]+</a> <small>([^<]+)</small>', card)
    assert sorted(members) == [("cb", "claude-code"), ("pb", "other"), ("pb2", "other")]
    other = page[page.index('id="ws-other"') :]
    assert "/a/pb" not in other[: other.index("</section>")]  # another workspace's bots stay out


async def test_names_keep_their_direction_to_themselves(world: World) -> None:
    """A name ending in a right-to-left override reverses only itself, not what follows it: a
    workspace's, a document's title, a destination's."""
    await world.human.patch_workspace("proj", name="Project \u202eRTL")
    await world.bot.put_document("spoof.md", "# Title \u202eRTL\n\nthe body\n", 0, "a title")
    made = await world.human.create_destination(
        "hook \u202eRTL", "webhook", url="http://127.0.0.1:9/hook", secret="s" * 32
    )
    destination = made["id"]
    pages = await pages_as(
        world.board,
        "alice",
        "/workspaces",
        "/kb/proj/spoof.md",
        "/settings",
        f"/settings/destinations/{destination}",
    )
    workspaces, document, settings, one = (page for _, page in pages)
    assert "<h2><bdi>Project \u202eRTL</bdi> <small>proj</small>" in workspaces
    assert "<h1><bdi>Title \u202eRTL</bdi> <span" in document
    assert f'<a href="/settings/destinations/{destination}"><bdi>hook \u202eRTL</bdi></a>' in settings
    assert "/ <bdi>hook \u202eRTL</bdi></h1>" in one


def _seed_note(page: str) -> str:
    found = re.search(r'<p id="seed-who"[^>]*>(.*?)</p>', page, re.S)
    assert found is not None
    return re.sub(r"<[^>]+>", "", found.group(1))


async def test_the_seed_field_says_which_admin_bots_act_on_it(world: World) -> None:
    [(_, page)] = await pages_as(world.board, "alice", "/workspaces")
    note = _seed_note(page)
    assert "its bots act on it: ab." in note and "nobody" not in note


async def test_the_seed_field_says_nobody_acts_until_an_admin_bot_exists(board: Board) -> None:
    await board.human("alice")
    [(_, page)] = await pages_as(board, "alice", "/workspaces")
    note = _seed_note(page)
    assert "No admin bot exists yet, so nobody will act on seed material" in note
    assert "board admin invite admin" in note
    # The way the welcome leads, too: a profile of the admin workspace, and a bot on Fleet.
    found = re.search(r'<p id="seed-who"[^>]*>(.*?)</p>', page, re.S)
    assert found and 'href="/fleet/profiles"' in found[1] and 'href="/fleet"' in found[1]
    assert "on Fleet with a profile of the admin workspace" in note


async def test_a_forms_refusal_calls_its_fields_as_a_bodys_do(world: World) -> None:
    """A form's fields are a body's, not a query string's: "The body ...", not "The parameter body"."""
    root = await world.bot.post("a thread", channel="lobby")
    alice = await sign_in(world.board)
    status, page = await alice.post(f"/t/{root['id']}", {"body": "x" * 16_001})
    assert status == 413
    assert "The body is 16,001 characters" in html.unescape(page)
    await alice.close()


async def test_an_address_no_page_has_gets_the_error_page_and_the_api_keeps_its_json(world: World) -> None:
    """A mistyped or guessed address, or a form's address opened, is answered as a page (with
    the board's menu, in the person's language), not with the API's JSON envelope."""
    alice = await sign_in(world.board)
    try:
        wrong = ("/routines/nightly-tidy/nope", "/kb/proj/", "/no-such-page", "/logout", "/settings/tokens")
        for path in wrong:
            status, page = await alice.get(path)
            assert status == 404 and 'class="card error" data-code="NOT_FOUND"' in page, (path, page[:200])
            assert "<title>404 not found · Bot Board</title>" in page and 'action="/logout"' in page, path
        _, page = await alice.get("/logout")
        assert "This address takes a form sent from its page" in page
        status, page = await alice.post("/costs", {})  # another method on a page's address
        assert status == 422 and 'class="card error"' in page and "takes a form" not in page
        for path in ("/api/no-such-route", "/api/me/nope"):
            status, body = await alice.get(path)
            assert status == 404 and json.loads(body)["error"]["code"] == "NOT_FOUND", (path, body[:200])
        status, body = await alice.get("/static/no-such.css")  # an asset, not a page
        assert status == 404 and "card error" not in body
    finally:
        await alice.close()
    wrong_url = world.board.url + "/no-such-page"
    async with aiohttp.ClientSession() as signed_out, signed_out.get(wrong_url) as resp:
        page = await resp.text()  # no session: the page, without the menu
        assert resp.status == 404 and resp.content_type == "text/html", page[:200]
        assert 'class="card error"' in page and 'action="/logout"' not in page


async def test_a_knowledge_search_marks_its_hits_and_says_when_nothing_matches(world: World) -> None:
    body = "# Notes\n\n## Section one\n\nSome **bold** <b>words</b>\n"
    await world.bot.put_document("notes.md", body, 0, "start")
    alice = await sign_in(world.board)
    try:
        status, page = await alice.get("/kb?workspace=proj&q=section")
        assert status == 200 and '<a href="/kb/proj/notes.md">notes.md</a>' in page
        [shown] = re.findall(r'<span class="snippet">(.*?)</span>', page, re.S)
        # The hit marked; the text's own asterisks as text, not Markdown's escapes; HTML as text.
        assert "<mark>Section</mark>" in shown and "**Section**" not in shown, shown
        assert "Some **bold** &lt;b&gt;words" in shown and "\\*" not in shown, shown
        status, page = await alice.get("/kb?workspace=proj&q=nowhere")
        assert status == 200 and "No document in proj matches “nowhere”." in page
        status, page = await alice.get("/kb?workspace=proj")
        assert "No document in proj matches" not in page and "notes.md" in page
    finally:
        await alice.close()


async def test_a_mistyped_costs_filter_is_said_above_the_filter_as_typed(world: World) -> None:
    """It was the bare error page: the filter, and what was typed in it, were gone."""
    alice = await sign_in(world.board)
    try:
        status, page = await alice.get('/costs?bot=nob"ody&workspace=proj')
        assert status == 404 and 'class="refusal" role="alert" data-code="NOT_FOUND"' in page
        assert 'name="bot" value="nob&#34;ody"' in page and 'name="workspace" value="proj"' in page
        assert 'id="total"' not in page and 'class="card error"' not in page
        status, page = await alice.get("/costs?days=0")
        assert status == 422 and 'data-code="INVALID_ARGUMENT"' in page and 'name="days"' in page
        status, page = await alice.get("/costs")
        assert status == 200 and 'id="total"' in page and 'class="refusal"' not in page
    finally:
        await alice.close()


async def test_an_inbox_group_is_headed_by_its_roots_first_line_without_its_markdown(world: World) -> None:
    """It read "# Design notes ## Section 0 Some **bold**…", Markdown's marks and all."""
    root = await world.bot.post(
        "# Design notes for @alice\n\n## Section 0\n\nSome **bold** <b>words</b>",
        channel="lobby",
        workspace="proj",
    )
    [(status, page)] = await pages_as(world.board, "alice", "/inbox")
    title = re.search(rf'<a class="group-title" href="/t/{root["id"]}">(.*?)</a>', page)
    assert status == 200 and title is not None, page
    assert title.group(1) == "Design notes for @alice", title.group(1)
