"""Notifications out of band, end to end: real events on a real board reach real receivers.

Each destination kind is served on loopback: webhooks by an aiohttp server that checks the
signature as a receiver would, Slack and ntfy by the same server, email by aiosmtpd. What
is proved: every kind of event reaches every kind of destination exactly once; retries,
a restart between them, and a destination that never answers; quiet hours; the refusals.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from email.message import Message
from email.utils import parsedate_to_datetime
from pathlib import Path
from typing import Any

import pytest

from board.client import BoardAPIError
from board.server.api.keys import OUTBOX
from board.server.clock import iso
from board.server.outbox.dispatch import absolute_link
from board.server.services import auth, outbound
from board.server.settings import Settings
from tests.support.boardtest import (
    Board,
    World,
    db_execute,
    db_rows,
    eventually,
    populate,
    snapshot,
    start_board,
    stop_board,
)
from tests.support.fleettest import keeper_with_bots
from tests.support.notify_support import (
    SECRET,
    Mailbox,
    Receiver,
    add_destinations,
    fast_retries,
    self_signed,
)
from tests.support.pages_support import pages_as, sign_in

DESTINATIONS = ("webhook", "slack", "ntfy", "email")


@pytest.fixture
async def receiver() -> AsyncIterator[Receiver]:
    r = await Receiver().start()
    yield r
    await r.close()


@pytest.fixture
def mailbox() -> Any:
    m = Mailbox().start()
    yield m
    m.stop()


def rows(board: Board, where: str = "1 = 1") -> list[tuple[Any, ...]]:
    return db_rows(
        board.db_path,
        f"SELECT idem_key, kind, state, attempts, last_error FROM notifications WHERE {where} ORDER BY id",
    )


async def settled(board: Board, count: int) -> list[tuple[Any, ...]]:
    """The outbox once ``count`` rows are there and none is pending or being sent."""

    def probe() -> list[tuple[Any, ...]] | None:
        found = rows(board)
        done = len(found) == count and all(r[2] in ("sent", "failed") for r in found)
        return found if done else None

    return await eventually(probe, f"{count} notifications sent or failed", timeout=30)


def deliveries(receiver: Receiver, mailbox: Mailbox, name: str = "a") -> dict[str, list[str]]:
    """The subjects each destination received, by destination kind."""
    return {
        "webhook": [r.json()["subject"] for r in receiver.at(f"/hook/{name}")],
        "slack": [r.json()["text"].split("\n")[0].strip("*") for r in receiver.at(f"/slack/{name}")],
        "ntfy": [r.headers["Title"] for r in receiver.at(f"/ntfy/{name}")],
        "email": [str(m["Subject"]) for m in mailbox.mails],
    }


async def _each_event(world: World) -> None:
    """One event of every kind, caused by others than alice (the human who listens)."""
    human, bot = world.human, world.bot
    board = world.board
    await bot.post("@alice have a look", channel="lobby", workspace="proj")  # mention
    talk = await bot.open_conversation(["alice"], "a word", workspace="proj")
    await bot.post("just between us", conversation=talk["conversation"]["id"], workspace="proj")  # dm
    # held: pb reaches its daily budget of one wake; its next feed read posts the notice.
    await human.set_budget("pb", budget_wakes=1)
    await bot.record_wake(harness="claude", started_at=iso(datetime.now(UTC)), outcome="ok")
    await bot.wake(since=0, wait=0)
    # crashed: a keeper reports its bot crashed.
    keeper = await keeper_with_bots(world, "box1", "fb")
    report = {"interval": 5, "bots": [{"handle": "fb", "state": "crashed", "error": "exit 1: boom"}]}
    await keeper.client.call("POST", "/api/fleet/report", json=report)
    await keeper.client.call("POST", "/api/fleet/report", json=report)  # still crashed: told once
    # routine: pb proposes one; run_failed: its run fails.
    fields = {"workspace": "proj", "schedule": "0 2 * * *", "bot": "pb", "prompt": "Do it."}
    await world.peer.propose_routine("tidy", **fields)
    await human.approve_version("tidy", 1, "go")
    runner = board.client(await auth.runner_token(board.ctx))
    run = await runner.create_run("tidy", 1, "2026-11-30T02:00:00Z")
    await runner.start_run("tidy", run["id"])
    await runner.finish_run("tidy", run["id"], "failed", "the wake ended failed")
    # review: a bot's write in a workspace whose bots' writes are proposals.
    await human.patch_workspace("proj", review="bots")
    await bot.put_document("rules.md", "# Rules\n\nBe kind.\n", 0, "seed the rules")


async def test_each_kind_of_event_reaches_each_kind_of_destination_exactly_once(
    board: Board, receiver: Receiver, mailbox: Mailbox
) -> None:
    world = await populate(board)
    fast_retries(board)
    await add_destinations(world.human, receiver, mailbox, list(outbound.KINDS))
    await _each_event(world)

    found = await settled(board, len(outbound.KINDS) * len(DESTINATIONS))
    assert {r[2] for r in found} == {"sent"}, found
    assert sorted({r[1] for r in found}) == sorted(outbound.KINDS)
    got = deliveries(receiver, mailbox)
    for kind, subjects in got.items():
        assert len(subjects) == len(outbound.KINDS) and len(set(subjects)) == len(subjects), (kind, subjects)
    assert sorted(got["webhook"]) == sorted(got["ntfy"]) == sorted(got["email"]) == sorted(got["slack"])
    assert not receiver.refused, "every webhook post carried a good signature"
    hook = receiver.at("/hook/a")[0]
    assert hook.json()["link"].startswith("http://") and hook.headers["X-Board-Delivery"] == hook.json()["id"]
    mail = mailbox.mails[0]
    assert "Open on the board: http" in mail.get_payload() and mailbox.logins[0] == b"board"
    assert any("crashed" in s for s in got["email"]) and any("awaits approval" in s for s in got["email"])


async def test_a_human_does_not_hear_of_their_own_doing(
    board: Board, receiver: Receiver, mailbox: Mailbox
) -> None:
    world = await populate(board)
    bob = await board.human("bob")
    await add_destinations(world.human, receiver, mailbox, ["mention", "routine"])
    await world.human.post("a note to self, @alice", channel="lobby", workspace="proj")
    await world.human.propose_routine("tidy", workspace="proj", schedule="0 2 * * *", bot="pb", prompt="x")
    await bob.post("@alice hello", channel="lobby", workspace="proj")
    found = await settled(board, 4)
    assert [r[1] for r in found] == ["mention"] * 4  # bob's mention only, once per destination


async def test_a_destination_failing_three_times_then_succeeding_gets_one_delivery(
    board: Board, receiver: Receiver, mailbox: Mailbox
) -> None:
    world = await populate(board)
    fast_retries(board)
    ids = await add_destinations(world.human, receiver, mailbox, ["mention"])
    receiver.fail["/hook/a"] = 3
    await world.bot.post("@alice once", channel="lobby", workspace="proj")
    found = await settled(board, 4)
    hook = [r for r in found if r[0] == f"m{found[0][0][1:].split(':')[0]}:{ids['webhook']}"]
    assert hook and hook[0][2:4] == ("sent", 4), found
    assert len(receiver.at("/hook/a")) == 1 and len(receiver.refused) == 3
    log = await world.human.destination_log(ids["webhook"])
    (entry,) = log["notifications"]
    assert (entry["state"], entry["attempts"], entry["last_error"]) == ("sent", 4, "")


async def test_a_destination_that_always_fails_ends_failed_with_its_error_in_the_log(
    board: Board, receiver: Receiver, mailbox: Mailbox
) -> None:
    world = await populate(board)
    fast_retries(board, attempts=3)
    ids = await add_destinations(world.human, receiver, mailbox, ["dm"])
    receiver.fail["/ntfy/a"] = -1
    talk = await world.bot.open_conversation(["alice"], "t", workspace="proj")
    await world.bot.post("are you there?", conversation=talk["conversation"]["id"], workspace="proj")
    await settled(board, 4)
    (entry,) = (await world.human.destination_log(ids["ntfy"]))["notifications"]
    assert (entry["state"], entry["attempts"]) == ("failed", 3)
    assert entry["last_error"] == "HTTP 500 Internal Server Error"
    assert len(receiver.refused) == 3 and not receiver.at("/ntfy/a")
    (other,) = (await world.human.destination_log(ids["slack"]))["notifications"]
    assert other["state"] == "sent"
    [(status, html)] = await pages_as(board, "alice", f"/settings/destinations/{ids['ntfy']}")
    assert status == 200
    row = html[html.index(f'id="notification-{entry["id"]}"') :].split("</tr>")[0]
    assert 'class="state-failed"' in row and "HTTP 500 Internal Server Error" in row and ">3<" in row


async def test_each_kind_of_destinations_page_opens_with_its_settings(
    board: Board, receiver: Receiver, mailbox: Mailbox
) -> None:
    """An email destination's page answered 503: its form's security choice was not given."""
    world = await populate(board)
    ids = await add_destinations(world.human, receiver, mailbox, ["mention"])
    pages = await pages_as(board, "alice", *(f"/settings/destinations/{i}" for i in ids.values()))
    for kind, (status, html) in zip(ids, pages, strict=True):
        assert status == 200 and 'id="kinds"' in html, kind
    _, mail = pages[list(ids).index("email")]
    assert f"<option selected>{mailbox.security}</option>" in mail and f'value="{mailbox.port}"' in mail
    assert "<p>An email destination," in mail


async def test_the_settings_forms_add_a_destination_choose_its_kinds_and_remove_it(
    board: Board, receiver: Receiver
) -> None:
    await populate(board)
    alice = await sign_in(board)
    await alice.get("/settings")
    form = {"name": "phone", "kind": "ntfy", "url": receiver.url("/ntfy/p")}
    status, _ = await alice.post("/settings/destinations", form)
    assert status == 303
    (made,) = db_rows(board.db_path, "SELECT id, name, kind FROM destinations")
    await alice.get(f"/settings/destinations/{made[0]}")
    status, _ = await alice.post(f"/settings/destinations/{made[0]}/kinds", {"mention": "on", "held": "on"})
    assert status == 303
    kinds = db_rows(board.db_path, "SELECT kind FROM destination_kinds ORDER BY kind")
    assert [k for (k,) in kinds] == ["held", "mention"]
    status, html = await alice.get("/settings")
    assert status == 200 and "held, mention" in html and "phone" in html
    await alice.post("/settings/quiet-hours", {"start": "22:00", "end": "07:00", "timezone": "Europe/Paris"})
    status, html = await alice.get("/settings")
    assert "From 22:00 to 07:00 (Europe/Paris)" in html
    status, _ = await alice.post(f"/settings/destinations/{made[0]}/remove", {})
    assert status == 303 and db_rows(board.db_path, "SELECT count(*) FROM destinations") == [(0,)]
    await alice.close()


async def test_a_restart_in_the_middle_of_a_retry_still_delivers_exactly_once(
    tmp_path: Path, receiver: Receiver
) -> None:
    board = await start_board(tmp_path)
    try:
        world = await populate(board)
        fast_retries(board, backoff=1.0)  # the retry is due a second later: the board stops before
        made = await world.human.create_destination(
            "hook", "webhook", url=receiver.url("/hook/a"), secret=SECRET
        )
        await world.human.set_destination_kinds(made["id"], ["mention"])
        receiver.fail["/hook/a"] = 1
        await world.bot.post("@alice across a restart", channel="lobby", workspace="proj")
        await eventually(lambda: receiver.refused, "the first attempt")
        await eventually(lambda: rows(board, "state = 'pending' AND attempts = 1"), "a retry scheduled")
    finally:
        await stop_board(board)
    assert [r[2:4] for r in rows(board)] == [("pending", 1)]
    board = await start_board(tmp_path)
    try:
        found = await settled(board, 1)
        assert [r[2:4] for r in found] == [("sent", 2)]
        assert len(receiver.at("/hook/a")) == 1
    finally:
        await stop_board(board)


async def test_a_row_left_mid_send_by_a_stopped_board_is_sent_after_the_restart(
    tmp_path: Path, receiver: Receiver
) -> None:
    board = await start_board(tmp_path)
    world = await populate(board)
    made = await world.human.create_destination("hook", "webhook", url=receiver.url("/hook/a"), secret=SECRET)
    await world.human.set_destination_kinds(made["id"], ["mention"])
    await stop_board(board)
    # What a board killed during a send leaves: the row taken, its attempt counted, nothing recorded.
    db_execute(
        board.db_path,
        """INSERT INTO notifications (idem_key, destination_id, kind, subject, text, link, state,
               attempts, next_at, created_at) VALUES ('m999:' || ?, ?, 'mention', 's', 't', '/', 'sending',
               1, '2026-01-01T00:00:00.000Z', '2026-01-01T00:00:00Z')""",
        (made["id"], made["id"]),
    )
    board = await start_board(tmp_path)
    try:
        found = await settled(board, 1)
        assert [r[2:4] for r in found] == [("sent", 2)] and len(receiver.at("/hook/a")) == 1
    finally:
        await stop_board(board)


async def test_quiet_hours_hold_a_mention_but_not_a_held_bot(
    board: Board, receiver: Receiver, mailbox: Mailbox
) -> None:
    world = await populate(board)
    now = datetime.now(UTC)
    start = (now.hour * 60 + now.minute - 60) % 1440  # the window began an hour ago, ends in two
    end = (start + 180) % 1440
    quiet = await world.human.set_quiet_hours(
        f"{start // 60:02d}:{start % 60:02d}", f"{end // 60:02d}:{end % 60:02d}"
    )
    assert quiet["quiet_hours"]["timezone"] == "UTC"
    made = await world.human.create_destination("hook", "webhook", url=receiver.url("/hook/a"), secret=SECRET)
    await world.human.set_destination_kinds(made["id"], ["mention", "held"])
    await world.bot.post("@alice at night", channel="lobby", workspace="proj")
    await world.human.set_budget("pb", budget_wakes=1)
    await world.bot.record_wake(harness="claude", started_at=iso(now), outcome="ok")
    await world.bot.wake(since=0, wait=0)
    await eventually(lambda: receiver.at("/hook/a"), "the urgent one")
    assert [r.json()["kind"] for r in receiver.at("/hook/a")] == ["held"]
    (held_back,) = rows(board, "kind = 'mention'")
    assert held_back[2:4] == ("pending", 0)
    (next_at,) = db_rows(board.db_path, "SELECT next_at FROM notifications WHERE kind = 'mention'")[0]
    assert next_at[11:16] == f"{end // 60:02d}:{end % 60:02d}"


async def test_a_bot_can_neither_read_nor_set_a_destination(world: World, receiver: Receiver) -> None:
    made = await world.human.create_destination("hook", "webhook", url=receiver.url("/hook/a"), secret=SECRET)
    before = snapshot(world.board.db_path)
    calls = [
        world.bot.destinations(),
        world.bot.create_destination("mine", "ntfy", url=receiver.url("/ntfy/b")),
        world.admin_bot.update_destination(made["id"], url=receiver.url("/ntfy/b")),
        world.bot.destination_log(made["id"]),
        world.bot.set_quiet_hours("00:00", "23:00"),
        world.admin_bot.send_test_notification(made["id"]),
    ]
    for call in calls:
        with pytest.raises(BoardAPIError) as refused:
            await call
        assert (refused.value.status, refused.value.code) == (403, "FORBIDDEN")
    assert snapshot(world.board.db_path) == before


async def test_secrets_are_never_read_back_and_another_humans_destination_is_not_found(
    world: World, receiver: Receiver, mailbox: Mailbox
) -> None:
    ids = await add_destinations(world.human, receiver, mailbox, ["dm"])
    listed = (await world.human.destinations())["destinations"]
    text = repr(listed)
    assert SECRET not in text and Mailbox.PASSWORD not in text and "/slack/" not in text
    assert all(d["secret_set"] for d in listed if d["kind"] != "ntfy")
    kept = await world.human.update_destination(ids["webhook"], name="renamed")  # the secret is kept
    assert kept["secret_set"] and kept["name"] == "renamed" and "secret" not in kept["settings"]
    bob = await world.board.human("bob")
    for call in (bob.update_destination(ids["webhook"], name="x"), bob.destination_log(ids["email"])):
        with pytest.raises(BoardAPIError) as refused:
            await call
        assert refused.value.code == "NOT_FOUND"
    with pytest.raises(BoardAPIError) as refused:
        await world.human.create_destination("bad", "webhook", url="ftp://x", secret=SECRET)
    assert refused.value.code == "INVALID_ARGUMENT"


async def test_a_test_send_reaches_the_destination_and_shows_in_its_log(
    board: Board, receiver: Receiver
) -> None:
    world = await populate(board)
    made = await world.human.create_destination("hook", "webhook", url=receiver.url("/hook/t"), secret=SECRET)
    sent = await world.human.send_test_notification(made["id"])
    assert sent["kind"] == "test" and sent["state"] == "pending"
    await eventually(lambda: receiver.at("/hook/t"), "the test notification")

    async def logged() -> list[dict[str, Any]] | None:  # marked sent after the receiver answered
        found: list[dict[str, Any]] = (await world.human.destination_log(made["id"]))["notifications"]
        return found if [e["state"] for e in found] == ["sent"] else None

    await eventually(logged, "the log to read sent")


@pytest.mark.parametrize("security", ["starttls", "tls"])
async def test_email_goes_over_starttls_or_tls_with_a_login(
    board: Board, tmp_path: Path, security: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    cert, key = self_signed(tmp_path)
    monkeypatch.setenv("SSL_CERT_FILE", str(cert))  # the board trusts the test's certificate as its CA
    mailbox = Mailbox(security, cert, key).start()
    try:
        world = await populate(board)
        made = await world.human.create_destination("mail", "email", **mailbox.settings())
        await world.human.set_destination_kinds(made["id"], ["mention"])
        await world.bot.post("@alice over TLS", channel="lobby", workspace="proj")
        ((_, _, state, attempts, error),) = await settled(board, 1)
        assert (state, attempts, error) == ("sent", 1, "")
        (mail,) = mailbox.mails
        assert "over TLS" in mail.get_payload() and mailbox.logins == [b"board"]
    finally:
        mailbox.stop()


async def test_a_send_with_no_answer_fails_at_its_timeout(board: Board) -> None:
    """A receiver that accepts the connection and never answers: the send ends at its timeout."""
    release = asyncio.Event()
    handlers: list[asyncio.Task[None]] = []

    async def hang(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        handlers.append(asyncio.current_task())  # type: ignore[arg-type]
        await release.wait()
        writer.close()
        await writer.wait_closed()

    server = await asyncio.start_server(hang, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        world = await populate(board)
        fast_retries(board, attempts=1)
        board.app[OUTBOX].timeout = 0.3
        made = await world.human.create_destination("slow", "ntfy", url=f"http://127.0.0.1:{port}/t")
        await world.human.set_destination_kinds(made["id"], ["mention"])
        await world.bot.post("@alice hello?", channel="lobby", workspace="proj")
        ((_, _, state, attempts, error),) = await settled(board, 1)
        assert (state, attempts) == ("failed", 1) and error in (
            "no answer in 0.3 s",
            "ServerTimeoutError: Timeout on reading data from socket",
        ), error
    finally:
        release.set()
        await asyncio.gather(*handlers, return_exceptions=True)
        server.close()
        await server.wait_closed()


async def test_every_change_of_a_destination_its_kinds_and_quiet_hours_is_audited_without_a_secret(
    world: World, receiver: Receiver, mailbox: Mailbox
) -> None:
    human = world.human
    ids = await add_destinations(human, receiver, mailbox, ["dm"])
    await human.update_destination(
        ids["webhook"], url=receiver.url("/hook/b?token=tok-in-url"), secret="second-secret-0123456789"
    )
    await human.update_destination(ids["slack"], active=False)
    await human.set_quiet_hours("22:00", "07:00", "Europe/Paris")
    await human.clear_quiet_hours()
    await human.delete_destination(ids["ntfy"])
    entries = (await human.audit(limit=100))["entries"]
    ours = [
        (e["action"], e["target"], e["details"])
        for e in entries
        if e["action"].split(".")[0] in ("destination", "quiet_hours")
    ]
    assert [(a, t) for a, t, _ in ours] == [
        *[("destination.create", f"destination:{ids[k]}") for k in DESTINATIONS],
        *[("destination.kinds", f"destination:{ids[k]}") for k in DESTINATIONS],
        ("destination.update", f"destination:{ids['webhook']}"),
        ("destination.update", f"destination:{ids['slack']}"),
        ("quiet_hours.set", "alice"),
        ("quiet_hours.clear", "alice"),
        ("destination.delete", f"destination:{ids['ntfy']}"),
    ]
    by_action = {(a, t): d for a, t, d in ours}
    assert by_action[("destination.kinds", f"destination:{ids['email']}")]["kinds"] == ["dm"]
    changed = by_action[("destination.update", f"destination:{ids['webhook']}")]
    assert changed == {
        "name": "hook-a",
        "kind": "webhook",
        "active": True,
        "url_set": True,
        "secret_set": True,
    }
    assert by_action[("destination.update", f"destination:{ids['slack']}")]["active"] is False
    assert by_action[("quiet_hours.set", "alice")] == {
        "start": "22:00",
        "end": "07:00",
        "timezone": "Europe/Paris",
    }
    assert by_action[("destination.create", f"destination:{ids['email']}")]["host"] == "127.0.0.1"
    logged = repr(ours) + repr(db_rows(world.board.db_path, "SELECT details FROM audit"))
    secrets = (SECRET, "second-secret-0123456789", "tok-in-url", Mailbox.PASSWORD)
    for secret in (*secrets, "/slack/", "/ntfy/", "/hook/"):
        assert secret not in logged, secret


async def test_a_board_refuses_to_send_to_loopback_unless_allowed(
    tmp_path: Path, receiver: Receiver, mailbox: Mailbox
) -> None:
    """By default nothing is sent to the board's own machine. An address written as one is
    refused when saved; a name is refused when sent, on what it resolves to, and the log says
    why and names the setting."""
    board = await start_board(tmp_path, notify_allow_local=0)
    try:
        fast_retries(board, attempts=1)
        world = await populate(board)
        literal = [
            ("by-address", "webhook", {"url": receiver.url("/hook/a"), "secret": SECRET}, "url"),
            ("metadata", "ntfy", {"url": "http://169.254.169.254/topic"}, "url"),
            ("v6", "slack", {"url": "http://[::1]:9/x"}, "url"),
            ("mail", "email", mailbox.settings(), "host"),
        ]
        for name, kind, settings, field in literal:
            with pytest.raises(BoardAPIError) as refused:
                await world.human.create_destination(name, kind, **settings)
            assert refused.value.code == "INVALID_ARGUMENT", name
            assert refused.value.details.get("field") == field, name
            assert "BOARD_NOTIFY_ALLOW_LOCAL=1" in refused.value.message
        assert (await world.human.destinations())["destinations"] == []

        at_name = receiver.url("/hook/a").replace("127.0.0.1", "localhost")
        hook = await world.human.create_destination("by-name", "webhook", url=at_name, secret=SECRET)
        with pytest.raises(BoardAPIError) as refused:
            await world.human.update_destination(hook["id"], url=receiver.url("/hook/b"))
        assert refused.value.code == "INVALID_ARGUMENT" and "loopback" in str(refused.value)
        [kept] = (await world.human.destinations())["destinations"]
        assert kept["settings"]["url"] == at_name  # unchanged

        await world.human.send_test_notification(hook["id"])
        await settled(board, 1)
        [(error,)] = db_rows(board.db_path, "SELECT last_error FROM notifications")
        assert "BOARD_NOTIFY_ALLOW_LOCAL=1" in error
        assert "localhost (127.0.0.1) is a loopback address" in error or "(::1)" in error
        assert receiver.at("/hook/a") == [] and mailbox.mails == []
        failed = (await world.human.destination_log(hook["id"]))["notifications"]
        assert failed[0]["state"] == "failed" and "loopback" in failed[0]["last_error"]
    finally:
        await stop_board(board)


async def test_mail_goes_only_to_an_address_it_may_reach_of_those_its_server_has(
    tmp_path: Path, mailbox: Mailbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A mail server's name with a loopback address beside an allowed one is not a way onto the
    board's machine: smtplib would connect to the first that answers (here the loopback one), so
    the board connects itself, to the allowed addresses only."""
    real = socket.getaddrinfo

    def resolve(host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
        if host != "mail.mixed.test":
            return real(host, port, *args, **kwargs)
        # Loopback first, as a resolver may order them; 192.0.2.1 (TEST-NET) is not reached.
        return [
            (socket.AF_INET, socket.SOCK_STREAM, 6, "", (address, int(port)))
            for address in ("127.0.0.1", "192.0.2.1")
        ]

    monkeypatch.setattr(socket, "getaddrinfo", resolve)
    board = await start_board(tmp_path, notify_allow_local=0)
    try:
        fast_retries(board, attempts=1)
        world = await populate(board)
        mail = await world.human.create_destination(
            "mail", "email", **{**mailbox.settings(), "host": "mail.mixed.test"}
        )
        await world.human.send_test_notification(mail["id"])
        [(_, _, state, _, error)] = await settled(board, 1)
        assert state == "failed" and mailbox.mails == [], error
    finally:
        await stop_board(board)


def test_a_link_names_the_board_at_an_address_a_reader_can_open() -> None:
    assert absolute_link(Settings(bind="0.0.0.0", port=8080), "/t/5") == "http://127.0.0.1:8080/t/5"
    assert absolute_link(Settings(bind="::", port=8080), "/t/5") == "http://[::1]:8080/t/5"
    public = Settings(bind="0.0.0.0", public_url="https://board.example/")
    assert absolute_link(public, "/t/5") == "https://board.example/t/5"
    assert absolute_link(public, "https://forge.example/i/1") == "https://forge.example/i/1"


async def test_a_budget_hold_names_the_bot_and_links_to_where_it_is_lifted(
    board: Board, receiver: Receiver, mailbox: Mailbox
) -> None:
    """The notice ends 'raise or lift it on /a/pb', no link in an email: its notification
    named no bot ('A bot is held in #lobby') and linked to the notice, not to the bot's page
    with its Lift button."""
    world = await populate(board)
    await add_destinations(world.human, receiver, mailbox, ["held"])
    await world.human.set_budget("pb", budget_wakes=1)
    await world.bot.record_wake(harness="claude", started_at=iso(datetime.now(UTC)), outcome="ok")
    assert "held" in await world.bot.wake(since=0, wait=0)
    await settled(board, len(DESTINATIONS))
    hook = receiver.at("/hook/a")[0].json()
    assert hook["subject"] == "pb is held: a daily budget is spent"
    assert hook["link"].startswith("http") and hook["link"].endswith("/a/pb")
    mail = mailbox.mails[0]
    assert mail["Subject"] == hook["subject"] and f"Open on the board: {hook['link']}" in mail.get_payload()


async def one_mail(board: Board, mailbox: Mailbox, body: str) -> tuple[dict[str, Any], Message]:
    """alice's mail destination, taking mentions, and the one mail pb's post of ``body`` sends."""
    world = await populate(board)
    made = await world.human.create_destination("mail", "email", **mailbox.settings())
    await world.human.set_destination_kinds(made["id"], ["mention"])
    await world.bot.post(body, channel="lobby", workspace="proj")
    await settled(board, 1)
    (mail,) = mailbox.mails
    return made, mail


async def test_a_mail_says_where_its_destination_is_changed_and_that_page_opens(
    board: Board, mailbox: Mailbox
) -> None:
    """A mail is read away from the board: it names the page that chooses what it is sent
    (or pauses it), as the one way to stop it; it ended with the message's link alone."""
    made, mail = await one_mail(board, mailbox, "@alice <b>bold</b> <script>x()</script>")
    text = mail.get_payload()
    assert mail.get_content_type() == "text/plain" and "<b>bold</b> <script>x()</script>" in text
    page = f"/settings/destinations/{made['id']}"
    assert f"Stop or change these mails: {absolute_link(board.ctx.settings, page)}" in text, text
    [(status, html)] = await pages_as(board, "alice", page)
    assert status == 200 and 'id="kinds"' in html


async def test_a_mail_is_dated_as_rfc_5322_requires(board: Board, mailbox: Mailbox) -> None:
    """A mail went out with no Date: a mail client filed it by its arrival, or in 1970, and
    a strict server may refuse it (Date is one of the two fields RFC 5322 requires)."""
    _, mail = await one_mail(board, mailbox, "@alice when was this?")
    assert abs((parsedate_to_datetime(mail["Date"]) - datetime.now(UTC)).total_seconds()) < 60, mail["Date"]


async def test_a_destination_whose_server_is_down_says_so_on_settings_until_a_send_goes_through(
    board: Board,
) -> None:
    """With the mail server down, Settings read 'active' and nothing else: only the
    destination's own log said the mail was not reaching its human."""
    mailbox = Mailbox()
    world = await populate(board)
    fast_retries(board, attempts=2)
    made = await world.human.create_destination("mail", "email", **mailbox.settings())  # not started
    await world.human.set_destination_kinds(made["id"], ["mention"])
    await world.bot.post("@alice are you there?", channel="lobby", workspace="proj")
    ((_, _, state, _, error),) = await settled(board, 1)
    assert state == "failed" and "Connection refused" in error, error
    assert (await world.human.request_object("GET", f"/api/destinations/{made['id']}"))["failing"] == error
    [(status, html)] = await pages_as(board, "alice", "/settings")
    row = html[html.index(f'id="destination-{made["id"]}"') :].split("</tr>")[0]
    assert status == 200 and "failing" in row and "Connection refused" in row, row

    mailbox.start()
    try:
        await world.human.send_test_notification(made["id"])
        await settled(board, 2)
        listed = (await world.human.destinations())["destinations"]
        assert [d["failing"] for d in listed] == [None]
        [(_, html)] = await pages_as(board, "alice", "/settings")
        assert "failing" not in html[html.index(f'id="destination-{made["id"]}"') :].split("</tr>")[0]
    finally:
        mailbox.stop()


async def test_a_thread_handed_to_a_human_reaches_their_destinations_as_a_mention(
    board: Board, receiver: Receiver, mailbox: Mailbox
) -> None:
    """A bot that hands its thread to a human names them, yet nothing went out: the handoff
    made the message theirs under a reason no kind of notification took."""
    world = await populate(board)
    await add_destinations(world.human, receiver, mailbox, ["mention"])
    root = await world.human.post("fix the parser, @pb", channel="lobby", workspace="proj")
    await world.bot.claim(int(root["id"]))
    await world.bot.handoff(int(root["id"]), "alice", note="needs a decision on the format")
    await settled(board, len(DESTINATIONS))
    got = deliveries(receiver, mailbox)
    assert got["email"] == got["webhook"] == ["pb handed you a thread in #lobby: fix the parser, @pb"], got
    hook = receiver.at("/hook/a")[0].json()
    assert hook["kind"] == "mention" and "needs a decision on the format" in hook["text"]


async def test_a_notice_names_its_thread_so_two_of_one_channel_tell_apart(
    board: Board, receiver: Receiver, mailbox: Mailbox
) -> None:
    """Two mentions in #lobby read the same ("pb mentioned you in #lobby") in a mailbox: each
    title ends with its thread's name, the root's first line as text, however deep the reply."""
    world = await populate(board)
    await add_destinations(world.human, receiver, mailbox, ["mention"])
    parser = await world.human.post(
        "**Parser** fails on `a|b`\n\nsteps below", channel="lobby", workspace="proj"
    )
    long = "The nightly build " + "takes far too long " * 6
    build = await world.human.post(long, channel="lobby", workspace="proj")
    reply = await world.bot.post("@alice look at this", reply_to=int(parser["id"]))
    await world.bot.post("@alice and this", reply_to=int(reply["id"]))  # a reply to the reply
    await world.bot.post("@alice your call", reply_to=int(build["id"]))
    await world.bot.post("# Heading only\n@alice", channel="lobby", workspace="proj")  # names itself
    await settled(board, 4 * len(DESTINATIONS))
    got = deliveries(receiver, mailbox)
    cut = "The nightly build takes far too long takes far too long tak…"
    assert (
        sorted(got["email"])
        == sorted(got["webhook"])
        == [
            "pb mentioned you in #lobby: Heading only",
            "pb mentioned you in #lobby: Parser fails on a|b",
            "pb mentioned you in #lobby: Parser fails on a|b",
            f"pb mentioned you in #lobby: {cut}",
        ]
    ), got
    assert len(cut) == 60


async def test_a_post_among_bots_reads_no_thread_name(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    """Bots hear of nothing out of band: a bot's mention of a bot, and the reply mentioning it
    back, read no thread root (nor parse one) to name a notice no one gets; a bot's mention
    of a human still names its thread."""
    named: list[int] = []
    thread_names = outbound.thread_names

    def counted(posted: list[dict[str, Any]], roots: list[Any]) -> dict[int, str]:
        named.extend(int(message["id"]) for message in posted)
        return thread_names(posted, roots)

    monkeypatch.setattr(outbound, "thread_names", counted)
    root = await world.bot.post("@pb2 the parser fails", channel="lobby", workspace="proj")
    await world.peer.post("@pb on it", reply_to=int(root["id"]))
    assert named == []
    to_human = await world.bot.post("@alice your call", reply_to=int(root["id"]))
    assert named == [int(to_human["id"])]


async def test_a_read_failing_between_passes_does_not_end_the_dispatcher(
    board: Board, receiver: Receiver, mailbox: Mailbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The database may fail a read while this process holds the duty (a reader's connection
    lost and not yet made again, the lock's still there): the read of when the next row is due
    was outside the pass's guard, and the dispatcher ended for good, sending nothing more."""
    from board.server.store.writer import DatabaseUnreachable

    world = await populate(board)
    await add_destinations(world.human, receiver, mailbox, ["mention"])
    dispatcher = board.app[OUTBOX]
    idle_for = dispatcher._idle_for
    failed: list[str] = []

    async def fails_once() -> float:
        if not failed:
            failed.append("once")
            raise DatabaseUnreachable("the server does not answer")
        return await idle_for()

    monkeypatch.setattr(dispatcher, "_idle_for", fails_once)
    await world.bot.post("@alice first", channel="lobby", workspace="proj")
    await eventually(lambda: failed, "the read to fail")
    await world.bot.post("@alice second", channel="lobby", workspace="proj")
    found = await settled(board, 2 * len(DESTINATIONS))
    assert {r[2] for r in found} == {"sent"} and dispatcher.dispatching
