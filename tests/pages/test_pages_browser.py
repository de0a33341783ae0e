"""The pages in a real browser: sign in, post, live replies, threads, XSS, review, search, workspaces,
routines, profiles."""

from __future__ import annotations

import re
from pathlib import Path

from playwright.async_api import Browser, expect

from board.server.services import auth
from routines import importer
from tests.support.boardtest import Board, World, db_rows
from tests.support.browser_support import new_tab, no_sideways_scroll, signed_in_tab, use_login_link
from tests.support.fleettest import enroll_keeper
from tests.support.pages_support import login_link

LIVE = re.compile(r"\blive\b")  # the page's stream is open


async def test_sign_in_with_the_link_then_the_link_is_refused(
    chromium: Browser, world: World, tmp_path: Path
) -> None:
    tab = await new_tab(chromium, tmp_path)
    link = world.board.url + await login_link(world.board, "alice")
    await tab.page.goto(link)
    await tab.shot("01-login-link")
    await tab.page.click("#use-link")
    await tab.page.wait_for_url("**/c/**")
    await expect(tab.page.locator(".who")).to_have_text("alice")
    await tab.shot("02-first-visit")
    other = await new_tab(chromium, tmp_path)
    await other.page.goto(link)
    await expect(other.page.locator(".refusal")).to_contain_text("already used")
    await expect(other.page.locator(".refusal")).to_contain_text("board admin user link")
    await other.shot("03-used-link")
    assert db_rows(world.board.db_path, "SELECT count(*) FROM sessions")[0][0] == 1


async def test_a_first_visit_to_a_fresh_board(chromium: Browser, board: Board, tmp_path: Path) -> None:
    """What install.sh's link opens on a board with nothing in it yet: the steps to a fleet."""
    tab = await use_login_link(
        await new_tab(chromium, tmp_path), board.url + await login_link(board, "alice")
    )
    await tab.page.wait_for_url("**/c/lobby?workspace=admin")  # the admin lobby, where the steps are
    await expect(tab.page.locator("#get-started")).to_contain_text("Create a workspace")
    # The steps lead to a profile and Fleet's "Add a bot", which a keeper runs, before the by-hand
    # way (an invite and `bot run`). A bare `board serve` enrolled no keeper: the step says how to.
    steps = tab.page.locator("#get-started li")
    await expect(steps.nth(0)).to_contain_text("once an admin bot runs, it writes")  # none runs yet
    await expect(steps.nth(1).locator("a[href='/fleet/profiles']")).to_be_visible()
    await expect(steps.nth(2).locator("a[href='/fleet']")).to_contain_text("Fleet")
    await expect(steps.nth(2)).to_contain_text("Add a bot")
    await expect(steps.nth(2)).to_contain_text("none is enrolled yet: Add a machine there gives the line")
    await expect(steps.nth(2)).to_contain_text("bash -s -- keeper")
    await expect(steps.nth(2)).not_to_contain_text("is enrolled)")
    await tab.shot("00-first-run-no-keeper")
    phone = await use_login_link(
        await new_tab(chromium, tmp_path, width=390), board.url + await login_link(board, "alice")
    )
    await phone.shot("00-first-run-no-keeper-phone")
    await no_sideways_scroll(phone)  # the install line wraps
    # install.sh enrolls the board machine's keeper, and the step says so.
    await enroll_keeper(board, await board.human("bob"), "box1")
    await tab.page.reload()
    await expect(steps.nth(2)).to_contain_text("the keeper of its machine (box1's is enrolled) starts it")
    await expect(steps.nth(2)).not_to_contain_text("none is enrolled")
    await tab.shot("00-first-run")
    await phone.page.reload()
    await phone.shot("00-first-run-phone")
    await tab.page.goto(board.url + "/workspaces")
    await expect(tab.page.locator("#seed-who")).to_contain_text("No admin bot exists yet")
    await tab.shot("00-workspaces-no-admin-bot")
    assert tab.errors == [] and phone.errors == []


async def test_post_and_see_a_bots_reply_arrive_live(chromium: Browser, world: World, tmp_path: Path) -> None:
    await world.bot.post("first", channel="lobby", workspace="proj")
    await world.bot.post("build 1 passed", channel="builds", workspace="proj")
    tab = await signed_in_tab(chromium, world, tmp_path)
    await tab.page.goto(world.board.url + "/c/lobby?workspace=proj")
    await tab.page.fill(".stream textarea[name=body]", "hello @pb, can you look at the build?")
    await tab.page.click(".stream button[type=submit]")
    await tab.page.wait_for_url("**thread=*")
    await expect(tab.page.locator("#roots .msg").last).to_contain_text("can you look at the build")
    root = int(tab.page.url.rsplit("=", 1)[1])
    await expect(tab.page.locator("body")).to_have_class(LIVE)
    replies = tab.page.locator(f"#roots #m{root} a.open-thread")
    await expect(replies).to_have_text("0 replies")
    await world.bot.post("On it: the build fails on step 3.", reply_to=root)
    await expect(tab.page.locator("#thread-messages .msg").last).to_contain_text("fails on step 3")
    await expect(replies).to_have_text("1 reply")
    await world.bot.post("A new root from pb", channel="lobby", workspace="proj")
    await expect(tab.page.locator("#roots .msg").last).to_contain_text("A new root from pb")
    builds = tab.page.locator('[data-unread="builds"]')
    await expect(builds).to_have_text("1")
    await world.bot.post("build 2 failed", channel="builds", workspace="proj")
    await expect(builds).to_have_text("2")
    await expect(tab.page.locator('[data-unread="lobby"]')).to_be_hidden()
    await world.bot.claim(root, note="fixing step 3")
    claim = tab.page.locator(f'#roots [data-claim-for="{root}"]')
    await expect(claim).to_contain_text("claimed by pb")
    await tab.shot("04-live-reply")
    await world.bot.post("Fixed.", reply_to=root)
    await expect(replies).to_have_text("2 replies")
    await tab.page.reload()
    await expect(replies).to_have_text("2 replies")
    await world.human.post("Thanks.", reply_to=(await world.bot.post("One more root", channel="lobby"))["id"])
    await tab.page.reload()
    await expect(tab.page.locator("#roots a.open-thread").last).to_have_text("1 reply")
    assert tab.errors == []


async def test_a_thread_shows_its_claim_history_and_wakes(
    chromium: Browser, world: World, tmp_path: Path
) -> None:
    root = await world.human.post("please fix the flaky test @pb", channel="lobby", workspace="proj")
    await world.bot.claim(root["id"], note="looking")
    await world.bot.record_wake(
        harness="claude",
        started_at="2026-11-30T04:00:00Z",
        outcome="ok",
        trigger_ids=[root["id"]],
        cost_usd=0.0421,
    )
    await world.bot.call(
        "POST", f"/api/threads/{root['id']}/handoff", json={"to": "pb2", "note": "yours now"}
    )
    tab = await signed_in_tab(chromium, world, tmp_path)
    await tab.page.goto(world.board.url + f"/t/{root['id']}")
    history = tab.page.locator("#claim-history li")
    await expect(history).to_have_count(2)
    await expect(history.nth(0)).to_contain_text("claim")
    await expect(history.nth(1)).to_contain_text("handoff")
    await expect(history.nth(1)).to_contain_text("pb2")
    await expect(tab.page.locator("h1 .claim")).to_contain_text("claimed by pb2")
    await expect(tab.page.locator("table.wakes")).to_contain_text("$0.0421")
    await tab.shot("05-thread-claim-history")


async def test_approve_a_proposal_from_the_review_queue(
    chromium: Browser, world: World, tmp_path: Path
) -> None:
    await world.human.call("PATCH", "/api/workspaces/proj", json={"review": "bots"})
    await world.bot.put_document("runbook/deploy.md", "# Deploy\n\nRun make deploy.\n", 0, "how we deploy")
    tab = await signed_in_tab(chromium, world, tmp_path)
    await tab.page.goto(world.board.url + "/kb/review")
    group = tab.page.locator(".review-group", has_text="runbook/deploy.md")
    await expect(group).to_contain_text("Run make deploy.")
    await tab.shot("06-review-queue")
    await group.get_by_role("button", name="Approve r1").click()
    await expect(tab.page.locator("main")).to_contain_text("Nothing to review.")
    doc = await world.bot.document("runbook/deploy.md")
    assert doc["status"] == "settled" and doc["review"]["by"] == "alice"


async def test_approve_a_new_documents_first_revision_on_its_own_page(
    chromium: Browser, world: World, tmp_path: Path
) -> None:
    """A document with no accepted revision yet showed "proposed" and no way to accept it: the
    buttons were only for a proposal over an accepted revision, so its reader had to find the queue."""
    await world.human.call("PATCH", "/api/workspaces/proj", json={"review": "bots"})
    await world.bot.put_document("runbook/deploy.md", "# Deploy\n\nRun make deploy.\n", 0, "how we deploy")
    tab = await signed_in_tab(chromium, world, tmp_path, width=390, height=844)
    await tab.page.goto(world.board.url + "/kb/proj/runbook/deploy.md")
    await expect(tab.page.locator("#doc-status")).to_have_text("proposed")
    proposal = tab.page.locator("#proposal")
    await expect(proposal).to_contain_text("nothing of this document is accepted yet")
    await tab.shot("08-new-document-proposed")
    await proposal.get_by_role("button", name="Approve").click()
    await expect(tab.page.locator("#doc-status")).to_have_text("settled")
    await expect(tab.page.locator("#proposal")).to_have_count(0)
    doc = await world.bot.document("runbook/deploy.md")
    assert doc["status"] == "settled" and doc["review"]["by"] == "alice"
    # A second proposal over the accepted revision is offered with its diff, as before.
    await world.bot.put_document("runbook/deploy.md", "# Deploy\n\nRun make ship.\n", 1, "renamed")
    await tab.page.reload()
    await expect(tab.page.locator("#proposal")).to_contain_text("Proposal: revision 2 by pb")
    await tab.page.locator("#proposal").get_by_role("button", name="Reject").click()
    await expect(tab.page.locator("#proposal")).to_have_count(0)
    assert tab.errors == []


async def test_redact_a_revision_and_see_the_stub(chromium: Browser, world: World, tmp_path: Path) -> None:
    await world.bot.put_document("notes.md", "# Notes\n\nthe password is hunter2\n", 0, "oops")
    await world.bot.put_document("notes.md", "# Notes\n\nno secrets here\n", 1, "fixed")
    tab = await signed_in_tab(chromium, world, tmp_path)
    await tab.page.goto(world.board.url + "/kb/proj/notes.md?revision=1")
    form = tab.page.locator("#redact-form")
    await form.locator("select[name=revision]").select_option("1")
    await form.locator("input[name=reason]").fill("a leaked secret")
    await expect(form.get_by_role("button", name="Redact")).to_be_disabled()
    await form.locator("input[name=confirm]").fill("redact")
    await form.get_by_role("button", name="Redact").click()
    await tab.page.goto(world.board.url + "/kb/proj/notes.md?revision=1")
    await expect(tab.page.locator("#redacted")).to_contain_text("a leaked secret")
    assert "hunter2" not in await tab.page.content()
    await tab.shot("07-redacted-stub")
    rows = db_rows(world.board.db_path, "SELECT count(*) FROM kb_revisions WHERE body LIKE '%hunter2%'")
    assert rows == [(0,)]


async def test_search_shows_a_highlighted_snippet(chromium: Browser, world: World, tmp_path: Path) -> None:
    await world.bot.post("the nightly deploy failed at the migration step", channel="lobby", workspace="proj")
    tab = await signed_in_tab(chromium, world, tmp_path)
    await tab.page.goto(world.board.url + "/search")
    await tab.page.fill("input[name=q]", "migration")
    await tab.page.get_by_role("button", name="Search").click()
    await expect(tab.page.locator(".snippet mark")).to_have_text("migration")
    await tab.shot("08-search")


async def test_a_search_the_board_cannot_run_says_why_in_its_form(
    chromium: Browser, world: World, tmp_path: Path
) -> None:
    """A search of no word ("*"), a misspelt workspace or words past the 200 the board takes ended
    on an error page, what was typed gone: the search page says why above what was typed."""
    tab = await signed_in_tab(chromium, world, tmp_path, width=390, height=844)
    page = tab.page
    await page.goto(world.board.url + "/search")
    await page.fill("input[name=q]", "*")
    await page.get_by_role("button", name="Search").click()
    await expect(page.locator(".refusal")).to_have_text("Search for at least one word.")
    await expect(page.locator("input[name=q]")).to_have_value("*")
    await page.fill("input[name=q]", "deploy")
    await page.fill("input[name=workspace]", "projj")
    await page.get_by_role("button", name="Search").click()
    await expect(page.locator(".refusal")).to_contain_text("No such workspace")
    await expect(page.locator("input[name=workspace]")).to_have_value("projj")
    await tab.shot("09-search-refused")
    await page.fill("input[name=q]", "deploy " * 40)
    assert len(await page.locator("input[name=q]").input_value()) == 200
    assert tab.errors == []


async def test_create_a_workspace_and_an_invite(chromium: Browser, world: World, tmp_path: Path) -> None:
    tab = await signed_in_tab(chromium, world, tmp_path)
    await tab.page.goto(world.board.url + "/workspaces")
    await tab.page.fill("#new-workspace input[name=slug]", "wordsnap")
    await tab.page.fill("#new-workspace input[name=name]", "Word Snap")
    await tab.page.click("#new-workspace button[type=submit]")
    card = tab.page.locator("#ws-wordsnap")
    await expect(card).to_contain_text("Word Snap")
    await card.get_by_role("button", name="Create an invite").click()
    code = await tab.page.locator("#invite-code").inner_text()
    await expect(tab.page.locator("#invite-line")).to_contain_text(code)
    await tab.shot("09-workspace-invite")
    registered = await world.board.client().register("wordsnap-bot", code, kind="codex")
    assert registered["agent"]["workspace"] == "wordsnap"
    await tab.page.reload()
    await expect(card).to_contain_text("1 bot · 1 channel")
    await expect(card).to_contain_text("Members: wordsnap-bot codex")
    await tab.shot("10-workspace-members")


PAYLOADS = [
    "<script>window.__pwned = 1; alert('script')</script>",
    "<img src=x onerror=\"window.__pwned = 1; alert('img')\">",
    "[click me](javascript:alert('link'))",
    "<svg onload=\"window.__pwned = 1; alert('svg')\"><script>alert(2)</script></svg>",
    "[svg](data:image/svg+xml;base64,PHN2ZyBvbmxvYWQ9YWxlcnQoMSk+)",
]


async def test_hostile_bodies_render_inert(chromium: Browser, world: World, tmp_path: Path) -> None:
    for payload in PAYLOADS:
        await world.bot.post(payload, channel="lobby", workspace="proj")
    await world.bot.put_document("xss.md", "# XSS\n\n" + "\n\n".join(PAYLOADS) + "\n", 0, "payloads")
    tab = await signed_in_tab(chromium, world, tmp_path)
    await tab.page.goto(world.board.url + "/c/lobby?workspace=proj")
    await expect(tab.page.locator("body")).to_have_class(LIVE)
    live = await world.bot.post(PAYLOADS[1] + " live", channel="lobby", workspace="proj")
    await expect(tab.page.locator(f"#m{live['id']}")).to_contain_text("onerror")
    for selector in ("#roots", "#roots"):
        assert await tab.page.locator(f"{selector} script").count() == 0
        assert await tab.page.locator(f"{selector} img").count() == 0
        assert await tab.page.locator(f"{selector} svg").count() == 0
    links = tab.page.locator("#roots .body a")
    for i in range(await links.count()):
        assert not (await links.nth(i).get_attribute("href") or "").startswith(("javascript:", "data:"))
    await expect(tab.page.locator("#roots")).to_contain_text("<script>window.__pwned")
    await tab.shot("10-xss-messages")
    await tab.page.goto(world.board.url + "/kb/proj/xss.md")
    assert await tab.page.locator(".doc-body script, .doc-body img, .doc-body svg").count() == 0
    await tab.shot("11-xss-document")
    assert await tab.page.evaluate("window.__pwned") is None
    assert tab.dialogs == []


async def test_approve_an_imported_routine_and_see_its_next_run(
    chromium: Browser, world: World, tmp_path: Path
) -> None:
    shipped = importer.SHIPPED / "knowledge-reconciler"
    definition = importer.read(shipped, {"workspace": "proj", "bot": "pb"})
    assert (await importer.propose(world.bot, definition))["version"] == 1
    tab = await signed_in_tab(chromium, world, tmp_path)
    await tab.page.goto(world.board.url + "/inbox")
    await expect(tab.page.locator("#pending-routines")).to_contain_text("knowledge-reconciler version 1")
    await tab.page.click("#pending-routines a")
    await tab.page.wait_for_url("**/routines#pending-knowledge-reconciler-1")
    routine = tab.page.locator("#routine-knowledge-reconciler")
    pending = routine.locator("#pending-knowledge-reconciler-1")
    await expect(routine.locator(".state")).to_have_text("unapproved")
    await expect(pending).to_contain_text("Proposed by pb")
    await expect(pending).to_contain_text("every day at 02:00 UTC")
    await expect(pending.locator(".why")).to_contain_text("Keep the knowledge base in step")
    await expect(pending.locator("tr.changed", has_text="quiet_hours")).to_contain_text("08:00-20:00")
    first_line = definition.fields["prompt"].splitlines()[0]
    await expect(pending.locator(".diff")).to_contain_text("+++ version 1")  # a file name, not an added line
    await expect(pending.locator(".diff .add").first).to_have_text("+" + first_line)
    await expect(routine.locator(".next-run")).to_have_text("none")
    await tab.shot("20-routine-pending")
    await pending.locator("input[name=note]").first.fill("looks right")
    await pending.get_by_role("button", name="Approve version 1").click()
    await expect(routine.locator(".state")).to_have_text("active")
    found = await world.human.request("GET", "/api/routines/knowledge-reconciler")
    assert found["state"] == "active" and found["approved"]["version"] == 1
    assert found["approved"]["decided_by"] == "alice" and found["approved"]["note"] == "looks right"
    assert found["next_run"] is not None and found["next_run"].endswith("T02:00:00Z")
    await expect(routine.locator(".next-run time")).to_have_attribute("datetime", found["next_run"])
    await expect(routine.locator(".pending-version")).to_have_count(0)
    await expect(tab.page.locator("body")).to_have_class(LIVE)
    await tab.shot("21-routine-approved")
    # A bot proposes a change: the page shows it live, diffed against version 1.
    changed = {**definition.fields, "schedule": "30 3 * * *", "why": "later, after the backups"}
    assert (await world.bot.propose_version("knowledge-reconciler", **changed))["version"] == 2
    second = routine.locator("#pending-knowledge-reconciler-2")
    await expect(second.locator("tr.changed")).to_have_count(1)
    await expect(second.locator("tr.changed")).to_contain_text("30 3 * * *")
    await expect(second.locator("tr.changed")).to_contain_text("0 2 * * *")
    await expect(second.locator(".prompt-unchanged")).to_be_visible()
    await tab.shot("22-routine-version-2-live")
    await second.locator("input[name=note]").nth(1).fill("keep 02:00")
    await second.get_by_role("button", name="Reject version 2").click()
    await expect(routine.locator(".pending-version")).to_have_count(0)
    runner = world.board.client(await auth.runner_token(world.board.ctx))
    scheduled = await runner.create_run("knowledge-reconciler", 1, "2026-01-01T02:00:00Z")
    await runner.start_run("knowledge-reconciler", scheduled["id"])
    await routine.get_by_role("button", name="Run now").click()
    await expect(routine.locator("tr.run")).to_have_count(2)
    await expect(routine.locator("tr.run-scheduled")).to_contain_text("run-now")
    waits = f"waits for run {scheduled['id']}"
    await expect(routine.locator("tr.run-scheduled .waits-for")).to_have_text(waits)
    await expect(routine.locator("tr.run-running .waits-for")).to_have_count(0)
    await routine.get_by_role("button", name="Pause").click()
    await expect(routine.locator(".state")).to_have_text("paused")
    await expect(routine.locator(".next-run")).to_have_text("none")
    await tab.shot("23-routine-paused-with-a-run")
    versions = (await world.human.request("GET", "/api/routines/knowledge-reconciler"))["versions"]
    assert [(v["version"], v["state"], v["note"]) for v in versions] == [
        (1, "approved", "looks right"),
        (2, "rejected", "keep 02:00"),
    ]
    assert tab.errors == []


async def test_make_a_command_profile_on_the_page_then_run_a_bot_with_it(
    chromium: Browser, world: World, tmp_path: Path
) -> None:
    """A new user's way to a bot: /fleet has no profile, says how to make one; make it, edit it, use it."""
    await world.human.create_skill("review", "# review\n\nHow to review.\n")
    await enroll_keeper(world.board, world.human, "box1")
    tab = await signed_in_tab(chromium, world, tmp_path)
    await tab.page.goto(world.board.url + "/fleet")
    await expect(tab.page.locator("#no-profiles")).to_contain_text("No profiles yet: make one.")
    await expect(tab.page.locator("#add-bot")).to_have_count(0)
    await tab.shot("30-fleet-without-profiles")
    await tab.page.locator("#no-profiles").get_by_role("link", name="make one").click()
    await tab.page.wait_for_url("**/fleet/profiles")
    await expect(tab.page.locator(".nav a.here")).to_have_text("Profiles")
    form = tab.page.locator("#profile-form")
    await form.locator("input[name=name]").fill("cmd-dev")
    await form.locator("select[name=workspace]").select_option("proj")
    await form.locator("select[name=harness]").select_option("command")
    await form.locator("input[name=model]").fill("m1")
    await form.locator("input[name=repo]").fill("~/src/proj")
    await form.locator("input[name=command_template]").fill("python3 agent.py {flags} {prompt}")
    await form.locator("input[name=command_session_field]").fill("result.session_id")
    await form.locator("input[name=skills]").fill("review")
    await form.locator("input[name=mcp]").check()
    await form.locator("textarea[name=flags]").fill("--fast\n--tools=Read,Write")
    await form.locator("input[name=watch]").fill("#lobby, builds")
    await form.locator("textarea[name=identity]").fill("You are the proj command bot.\nBe brief.")
    await form.locator("input[name=rotate_after_turns]").fill("10")
    await tab.shot("31-new-profile-filled")
    await tab.page.click("#save-profile")
    await tab.page.wait_for_url("**/fleet/profiles/cmd-dev")
    await expect(tab.page.locator("#saved")).to_contain_text("Saved: version 1, by alice")
    made = await world.human.profile("cmd-dev")
    assert (made["harness"], made["command_template"], made["mcp"]) == (
        "command",
        "python3 agent.py {flags} {prompt}",
        True,
    )
    assert (made["flags"], made["watch"], made["skills"]) == (
        ["--fast", "--tools=Read,Write"],
        ["lobby", "builds"],
        ["review"],
    )
    assert made["identity"] == "You are the proj command bot.\nBe brief."
    assert (made["rotate_after_turns"], made["rotate_after_tokens"]) == (10, None)  # empty: never
    await expect(form.locator("input[name=rotate_after_turns]")).to_have_value("10")
    # Someone saves the profile while the form is open: this save is refused, nothing of it lost.
    await world.human.update_profile("cmd-dev", model="m-theirs", base_version=1)
    await form.locator("input[name=model]").fill("m2")
    await form.locator("input[name=skills]").fill("review nope")
    await form.locator("input[name=mcp]").uncheck()
    await tab.page.click("#save-profile")
    await expect(tab.page.locator("#profile-error")).to_contain_text("is at version 2, not 1")
    await expect(tab.page.locator("#saved-now tr.changed", has_text="model")).to_contain_text("m-theirs")
    await expect(form.locator("input[name=model]")).to_have_value("m2")
    await expect(form.locator("input[name=skills]")).to_have_value("review nope")
    await tab.shot("32-profile-save-refused-newer-version")
    assert (await world.human.profile("cmd-dev"))["model"] == "m-theirs"
    await tab.page.click("#save-profile")  # knowingly, over version 2: now the unknown skill is refused
    await expect(tab.page.locator("#profile-error")).to_contain_text("No such skill nope")
    await expect(form.locator("input[name=model]")).to_have_value("m2")
    assert (await world.human.profile("cmd-dev"))["version"] == 2
    await form.locator("input[name=skills]").fill("review")
    await tab.page.click("#save-profile")
    await expect(tab.page.locator("#saved")).to_contain_text("Saved: version 3, by alice")
    await expect(tab.page.locator("#profile-error")).to_have_count(0)
    saved = await world.human.profile("cmd-dev")
    assert (saved["model"], saved["mcp"], saved["skills"]) == ("m2", False, ["review"])
    await tab.shot("33-profile-saved")
    phone = await signed_in_tab(chromium, world, tmp_path, width=390)
    await phone.page.goto(world.board.url + "/fleet/profiles")
    await expect(phone.page.locator("#profile-cmd-dev")).to_contain_text("command")
    await phone.shot("34-profiles-phone")
    await phone.page.goto(world.board.url + "/fleet/profiles/cmd-dev")
    await phone.shot("35-profile-phone")
    assert await phone.page.evaluate("document.documentElement.scrollWidth") <= 390
    # Use it: "Add a bot with it" opens /fleet with the profile chosen.
    await tab.page.get_by_role("link", name="Add a bot with it").click()
    await tab.page.wait_for_url("**/fleet?profile=cmd-dev#add-bot")
    add = tab.page.locator("#add-bot")
    await expect(add.locator("select[name=profile]")).to_have_value("cmd-dev")
    await add.locator("input[name=handle]").fill("cmd1")
    await add.locator("select[name=machine]").select_option("box1")
    await add.get_by_role("button", name="Assign").click()
    await expect(tab.page.locator("#bot-cmd1")).to_contain_text("proj/cmd-dev")
    await tab.shot("36-fleet-bot-from-the-profile")
    bot = (await world.human.fleet())["machines"][0]["bots"][0]
    assert (bot["handle"], bot["profile"], bot["workspace"]) == ("cmd1", "cmd-dev", "proj")
    assert tab.errors == [] and phone.errors == []
    await tab.page.context.close()  # ends /fleet's live stream, which the board would wait out on closing
