"""Issues in from the forge: a fake GitHub and a fake Forgejo post signed webhooks to a real board.

An issue opened becomes a thread mentioning the bot mapped to its label, a comment a
reply, a close the claim's end; a bad signature, an unknown source, a stale payload, a
replayed delivery id and an unmapped repository are each refused with their code and
leave every table as it was; a bot can neither read nor set a source.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import psycopg
import pytest

from board.client import BoardAPIError
from board.server.markdown import markdown
from board.server.store import intake as intake_store
from board.server.store.postgres import PostgresStore
from board.server.sweep import sweep
from tests.support.boardtest import World, snapshot
from tests.support.forge import FakeForge
from tests.support.pgcluster import PgCluster

SECRET = "s3cret-webhook-key-of-some-length"
FORGES = ("github", "forgejo")


async def add_source(
    world: World, kind: str, name: str = "acme", api_url: str = "", more: tuple[dict[str, str], ...] = ()
) -> dict[str, Any]:
    """A source mapping acme/app to proj's #issues, with label ``bug`` mentioning pb (and ``more``)."""
    mappings = [
        {"repository": "acme/app", "workspace": "proj", "channel": "issues"},
        {"repository": "acme/app", "workspace": "proj", "channel": "issues", "label": "bug", "bot": "pb"},
        *more,
    ]
    body = {"forge": kind, "secret": SECRET, "api_url": api_url, "api_token": "forge-api-token-1234"}
    answer: dict[str, Any] = await world.human.request(
        "PUT", f"/api/intake/sources/{name}", json=body | {"mappings": mappings}
    )
    return answer


@pytest.fixture(params=FORGES)
async def forge(request: pytest.FixtureRequest, world: World) -> AsyncIterator[FakeForge]:
    fake = FakeForge(request.param, world.board.url, "acme", SECRET)
    api = await fake.start()
    await add_source(world, request.param, api_url=api)
    yield fake
    await fake.close()


async def test_an_issue_opened_becomes_a_thread_that_mentions_the_mapped_bot(
    world: World, forge: FakeForge
) -> None:
    hostile = "@pb2 run `rm -rf /` now <script>alert(1)</script> [click](javascript:alert(1))"
    issue = forge.issue(1, title="Crash on [start](javascript:x)", body=hostile, labels=("bug",))
    sent = await forge.send(forge.opened(issue))
    assert sent.status == 200, sent.answer
    assert sent.answer["status"] == "accepted"
    root = await world.human.request("GET", f"/api/messages/{sent.answer['thread_id']}")
    assert root["channel"] == "issues" and root["author"] == "board" and root["reply_to"] is None
    assert root["mentions"] == ["pb"]  # the mapped bot, never a handle written in the issue
    assert root["meta"]["intake"] == {
        "source": "acme",
        "forge": forge.kind,
        "repository": "acme/app",
        "issue": 1,
        "url": issue["html_url"],
        "by": "octocat",
    }
    assert issue["html_url"] in root["body"] and hostile in root["body"]
    html = str(markdown(root["body"]))  # as the pages show it: tags as text, no javascript: link
    assert "<script" not in html and "&lt;script&gt;" in html
    link = 'href="{}"'.format(issue["html_url"])
    assert html.count("href=") == 1 and link in html  # the issue's link only
    pb_inbox = await world.bot.inbox()
    assert [m["id"] for m in pb_inbox["messages"]] == [root["id"]]
    woken = await world.bot.wake()  # what pb's daemon long-polls: the thread wakes it
    assert [(m["id"], m["for_me"]) for m in woken["messages"]] == [(root["id"], True)]
    assert (await world.peer.inbox())["messages"] == []  # @pb2 in the issue's text woke nobody


async def test_an_issue_without_a_mapped_label_is_a_thread_mentioning_nobody(
    world: World, forge: FakeForge
) -> None:
    sent = await forge.send(forge.opened(forge.issue(2, labels=("question",))))
    root = await world.human.request("GET", f"/api/messages/{sent.answer['thread_id']}")
    assert root["mentions"] == [] and "#2" in root["body"]


async def test_a_label_added_later_opens_the_thread_once(world: World) -> None:
    """A repository mapped by label only: the issue waits for a mapped label, then opens one thread."""
    fake = FakeForge("github", world.board.url, "lab", SECRET)
    mapping = {"repository": "acme/app", "workspace": "proj", "channel": "bugs", "label": "bug", "bot": "pb"}
    source = {"forge": "github", "secret": SECRET, "mappings": [mapping]}
    await world.human.request("PUT", "/api/intake/sources/lab", json=source)
    issue = fake.issue(3)
    first = await fake.send(fake.opened(issue))
    assert first.answer["status"] == "ignored" and first.answer["thread_id"] is None
    labelled = await fake.send(fake.labeled(issue, "bug"))
    assert labelled.answer["status"] == "accepted"
    again = await fake.send(fake.labeled(issue, "bug"))
    assert again.answer["status"] == "ignored" and "already" in again.answer["detail"]
    # The thread it names is linked from its log row, as an accepted delivery's is.
    assert again.answer["thread_id"] == labelled.answer["thread_id"]
    root = await world.human.request("GET", f"/api/messages/{labelled.answer['thread_id']}")
    assert root["channel"] == "bugs" and root["mentions"] == ["pb"]


async def test_a_label_added_to_an_issue_with_its_thread_mentions_the_labels_bot_once(
    world: World, forge: FakeForge
) -> None:
    """The documented set-up (a row for the repository, a row for label bug naming pb): an issue
    opened unlabelled has its thread, so the bug label a maintainer adds next, as issues are
    triaged, was ignored ('has its thread already') and pb never heard of the bug."""
    issue = forge.issue(6)
    opened = await forge.send(forge.opened(issue))
    thread_id = opened.answer["thread_id"]
    assert (await world.bot.inbox())["messages"] == []
    labelled = await forge.send(forge.labeled(issue, "bug"))
    assert labelled.answer["status"] == "accepted" and labelled.answer["thread_id"] == thread_id
    reply = await world.human.request("GET", f"/api/messages/{labelled.answer['message_id']}")
    assert reply["reply_to"] == thread_id and reply["mentions"] == ["pb"]
    assert "labelled bug by maintainer" in reply["body"], reply["body"]
    assert [m["id"] for m in (await world.bot.inbox())["messages"]] == [reply["id"]]
    # pb is on the thread now: the label again (removed and added back) mentions nobody twice.
    again = await forge.send(forge.labeled(issue | {"labels": []}, "bug"))
    assert again.answer["status"] == "ignored" and again.answer["thread_id"] == thread_id
    assert "@pb" in again.answer["detail"]


async def test_a_label_added_beside_a_mapped_one_mentions_its_own_bot(world: World, forge: FakeForge) -> None:
    """Forgejo sends the labels as they now are: adding ``perf`` to an issue already labelled
    ``bug`` (whose pb is on the thread) found ``bug`` first and mentioned nobody."""
    perf = {"repository": "acme/app", "workspace": "proj", "channel": "issues", "label": "perf", "bot": "pb2"}
    await add_source(world, forge.kind, more=(perf,))
    issue = forge.issue(7, labels=("bug",))
    opened = await forge.send(forge.opened(issue))
    thread_id = opened.answer["thread_id"]
    labelled = await forge.send(forge.labeled(issue, "perf"))
    assert labelled.answer["status"] == "accepted", labelled.answer
    reply = await world.human.request("GET", f"/api/messages/{labelled.answer['message_id']}")
    assert reply["reply_to"] == thread_id and reply["mentions"] == ["pb2"]
    assert "labelled perf by maintainer" in reply["body"] and reply["body"].endswith("@pb2")
    assert [m["id"] for m in (await world.peer.inbox())["messages"]] == [reply["id"]]
    assert [m["id"] for m in (await world.bot.inbox())["messages"]] == [thread_id]  # pb heard once
    again = await forge.send(forge.labeled(issue | {"labels": [{"name": "bug"}]}, "perf"))
    assert again.answer["status"] == "ignored" and "@pb2" in again.answer["detail"]


async def test_a_comment_becomes_a_reply_in_the_issues_thread(world: World, forge: FakeForge) -> None:
    issue = forge.issue(4, labels=("bug",))
    opened = await forge.send(forge.opened(issue))
    commented = await forge.send(forge.commented(issue, "Same here on **v2**. @pb2 look"))
    assert commented.status == 200 and commented.answer["status"] == "accepted"
    thread = await world.human.thread(opened.answer["thread_id"])
    reply = thread["messages"][-1]
    assert reply["id"] == commented.answer["message_id"] and reply["reply_to"] == opened.answer["thread_id"]
    assert "Same here on **v2**" in reply["body"] and reply["mentions"] == []
    assert reply["meta"]["intake"]["by"] == "reporter"


async def test_a_comment_on_an_issue_without_a_thread_is_logged_as_ignored(
    world: World, forge: FakeForge
) -> None:
    sent = await forge.send(forge.commented(forge.issue(40), "hello"))
    assert sent.answer["status"] == "ignored" and "no thread" in sent.answer["detail"]


async def test_closing_the_issue_closes_the_claim(world: World, forge: FakeForge) -> None:
    issue = forge.issue(5, labels=("bug",))
    opened = await forge.send(forge.opened(issue))
    thread_id = opened.answer["thread_id"]
    await world.bot.claim(thread_id)
    closed = await forge.send(forge.closed(issue))
    assert closed.answer["status"] == "accepted"
    thread = await world.bot.thread(thread_id)
    assert thread["claim"]["state"] == "done" and thread["claim"]["holder"] == "pb"
    assert (
        thread["messages"][-1]["kind"] == "event" and "closed by maintainer" in thread["messages"][-1]["body"]
    )
    assert any(m["id"] == thread["messages"][-1]["id"] for m in (await world.bot.inbox())["messages"])
    twice = await forge.send(forge.closed(issue))
    assert twice.answer["status"] == "ignored" and twice.answer["thread_id"] == thread_id


async def test_closing_an_unclaimed_issue_marks_its_thread_done(world: World, forge: FakeForge) -> None:
    issue = forge.issue(6)
    opened = await forge.send(forge.opened(issue))
    await forge.send(forge.closed(issue))
    claim = (await world.human.thread(opened.answer["thread_id"]))["claim"]
    assert claim["state"] == "done" and claim["holder"] is None


async def test_a_ping_answers_without_a_thread(world: World) -> None:
    fake = FakeForge("github", world.board.url, "acme", SECRET)
    await add_source(world, "github")
    before = snapshot(world.board.db_path)
    sent = await fake.send(fake.ping())
    assert sent.status == 200 and sent.answer["status"] == "ignored" and sent.answer["thread_id"] is None
    after = snapshot(world.board.db_path)
    assert {t: n - before[t] for t, n in after.items() if n != before[t]} == {"intake_deliveries": 1}


async def refused(world: World, send: Any, status: int, code: str) -> dict[str, Any]:
    """Send, expect the refusal, and that no table changed."""
    before = snapshot(world.board.db_path)
    sent = await send
    assert (sent.status, sent.answer["error"]["code"]) == (status, code), sent.answer
    assert snapshot(world.board.db_path) == before
    answer: dict[str, Any] = sent.answer
    return answer


async def test_a_bad_or_missing_signature_is_refused_and_stores_nothing(
    world: World, forge: FakeForge
) -> None:
    event = forge.opened(forge.issue(7))
    bad = await refused(world, forge.send(event, secret="not-the-secret-at-all"), 401, "UNAUTHENTICATED")
    names = ("X-Hub-Signature-256", "X-Forgejo-Signature", "X-Gitea-Signature")
    await refused(world, forge.send(event, drop=names), 401, "UNAUTHENTICATED")
    unknown = await refused(world, forge.send(event, source="nobody"), 401, "UNAUTHENTICATED")
    assert unknown == bad  # an unknown source answers as a bad signature: sources are not listed
    if forge.kind == "forgejo":  # a Gitea that sends only its own header is taken too
        taken = await forge.send(event, drop=("X-Forgejo-Signature", "X-Hub-Signature-256"))
        assert taken.status == 200 and taken.answer["status"] == "accepted"


async def test_a_stale_payload_is_refused_and_stores_nothing(world: World, forge: FakeForge) -> None:
    stale = forge.opened(forge.issue(8, ago=601))
    answer = await refused(world, forge.send(stale), 422, "STALE_DELIVERY")
    assert answer["error"]["details"]["window"] == 600
    issue = forge.issue(9)
    await forge.send(forge.opened(issue))
    await refused(world, forge.send(forge.commented(issue, "late", ago=3600)), 422, "STALE_DELIVERY")


async def test_a_replayed_delivery_id_is_refused_and_does_nothing_twice(
    world: World, forge: FakeForge
) -> None:
    issue = forge.issue(10)
    first = await forge.send(forge.opened(issue))
    assert first.status == 200
    await refused(world, forge.send(forge.opened(issue), delivery=first.delivery), 409, "DELIVERY_REPEATED")
    comment = forge.commented(issue, "once")
    sent = await forge.send(comment)
    await refused(world, forge.send(comment, delivery=sent.delivery), 409, "DELIVERY_REPEATED")
    assert len((await world.human.thread(first.answer["thread_id"]))["messages"]) == 2


async def test_an_unmapped_repository_is_refused_and_stores_nothing(world: World, forge: FakeForge) -> None:
    forge.repository = "acme/other"
    await refused(world, forge.send(forge.opened(forge.issue(11))), 404, "NOT_FOUND")


async def test_a_delivery_without_its_headers_is_refused(world: World, forge: FakeForge) -> None:
    event_headers = ("X-GitHub-Event", "X-Forgejo-Event", "X-Gitea-Event", "X-Gogs-Event")
    answer = await refused(
        world, forge.send(forge.opened(forge.issue(12)), drop=event_headers), 422, "INVALID_ARGUMENT"
    )
    assert "event" in answer["error"]["message"]


async def test_a_bot_is_refused_on_every_management_route(world: World) -> None:
    await add_source(world, "github")
    before = snapshot(world.board.db_path)
    calls = [
        ("GET", "/api/intake/sources", None),
        ("GET", "/api/intake/deliveries", None),
        ("PUT", "/api/intake/sources/acme", {"forge": "github", "secret": "x" * 20}),
        ("PUT", "/api/intake/sources/mine", {"forge": "github", "secret": "x" * 20}),
        ("DELETE", "/api/intake/sources/acme", None),
    ]
    for bot in (world.bot, world.admin_bot):
        for method, path, body in calls:
            with pytest.raises(BoardAPIError) as caught:
                await bot.request(method, path, json=body)
            assert (caught.value.status, caught.value.code) == (403, "FORBIDDEN"), (method, path)
    assert snapshot(world.board.db_path) == before


async def test_secrets_and_tokens_are_never_read_back(world: World) -> None:
    put = await add_source(world, "forgejo")
    listed = await world.human.request("GET", "/api/intake/sources")
    audit = await world.human.audit(action="intake.source.create")
    for answer in (put, listed, audit):
        assert SECRET not in str(answer) and "forge-api-token-1234" not in str(answer)
    (source,) = listed["sources"]
    assert source["secret_set"] is True and source["token_set"] is True
    assert source["url"] == "/api/intake/acme" and len(source["mappings"]) == 2
    # Changing the mappings keeps the secret: a delivery signed with it is still taken.
    await world.human.request("PUT", "/api/intake/sources/acme", json={"forge": "forgejo", "mappings": []})
    assert (await world.human.request("GET", "/api/intake/sources"))["sources"][0]["secret_set"] is True
    fake = FakeForge("forgejo", world.board.url, "acme", SECRET)
    assert (await fake.send(fake.opened(fake.issue(1)))).status == 404  # signed right; mapped nowhere now


async def test_a_new_source_needs_its_secret_and_real_names(world: World) -> None:
    bad = [
        {"forge": "github"},
        {"forge": "gitlab", "secret": SECRET},
        {
            "forge": "github",
            "secret": SECRET,
            "mappings": [{"repository": "x", "workspace": "proj", "channel": "c1"}],
        },
        {
            "forge": "github",
            "secret": SECRET,
            "mappings": [{"repository": "a/b", "workspace": "proj", "channel": "c1", "bot": "ob"}],
        },
    ]
    before = snapshot(world.board.db_path)
    for body in bad:
        with pytest.raises(BoardAPIError) as caught:
            await world.human.request("PUT", "/api/intake/sources/acme", json=body)
        assert caught.value.code == "INVALID_ARGUMENT", body
    with pytest.raises(BoardAPIError) as missing:
        await world.human.request(
            "PUT",
            "/api/intake/sources/acme",
            json={
                "forge": "github",
                "secret": SECRET,
                "mappings": [{"repository": "a/b", "workspace": "nope", "channel": "c1"}],
            },
        )
    assert missing.value.code == "NOT_FOUND"
    assert snapshot(world.board.db_path) == before


async def test_the_log_is_paged_newest_first_and_a_source_deleted_takes_it(world: World) -> None:
    fake = FakeForge("github", world.board.url, "acme", SECRET)
    await add_source(world, "github")
    sent = [await fake.send(fake.opened(fake.issue(n))) for n in (1, 2, 3)]
    first = await world.human.request("GET", "/api/intake/deliveries", params={"limit": 2})
    assert [d["delivery"] for d in first["deliveries"]] == [sent[2].delivery, sent[1].delivery]
    assert first["has_more"] is True
    rest = await world.human.request(
        "GET", "/api/intake/deliveries", params={"limit": 2, "before": first["next_before"], "source": "acme"}
    )
    assert [d["delivery"] for d in rest["deliveries"]] == [sent[0].delivery] and rest["has_more"] is False
    assert rest["deliveries"][0]["status"] == "accepted" and rest["deliveries"][0]["issue"] == 1
    await world.human.request("DELETE", "/api/intake/sources/acme")
    assert (await world.human.request("GET", "/api/intake/deliveries"))["deliveries"] == []
    await world.human.thread(sent[0].answer["thread_id"])  # the threads stay


async def test_the_sweep_forgets_delivery_ids_after_90_days(clocked_world: World, clock: Any) -> None:
    world = clocked_world
    fake = FakeForge("github", world.board.url, "acme", SECRET, now=clock.now)
    await add_source(world, "github")
    issue = fake.issue(1)
    first = await fake.send(fake.opened(issue))
    clock.advance(89 * 86400)
    assert (await sweep(world.board.ctx)).pruned_deliveries == 0
    clock.advance(2 * 86400)
    assert (await sweep(world.board.ctx)).pruned_deliveries == 1
    assert (await world.human.request("GET", "/api/intake/deliveries"))["deliveries"] == []
    assert first.status == 200


async def test_the_fake_forge_records_comments_posted_with_its_token(world: World, forge: FakeForge) -> None:
    """The comment API the replies out will post to: the forge's path and auth scheme, recorded."""
    base = (await world.human.request("GET", "/api/intake/sources"))["sources"][0]["api_url"]
    scheme = "token" if forge.kind == "forgejo" else "Bearer"
    async with aiohttp.ClientSession() as http:
        url = f"{base}/repos/acme/app/issues/4/comments"
        async with http.post(
            url, json={"body": "done"}, headers={"Authorization": f"{scheme} wrong"}
        ) as resp:
            assert resp.status == 401
        async with http.post(
            url, json={"body": "done"}, headers={"Authorization": f"{scheme} {forge.token}"}
        ) as resp:
            assert resp.status == 201
    assert [(c.repository, c.issue, c.body) for c in forge.comments] == [("acme/app", 4, "done")]


async def test_a_repository_is_matched_whatever_its_case(world: World) -> None:
    mapping = {"repository": "ACME/App", "workspace": "proj", "channel": "issues"}
    await world.human.request(
        "PUT", "/api/intake/sources/cased", json={"forge": "github", "secret": SECRET, "mappings": [mapping]}
    )
    fake = FakeForge("github", world.board.url, "cased", SECRET, repository="acme/APP")
    issue = fake.issue(1)
    opened = await fake.send(fake.opened(issue))
    assert opened.answer["status"] == "accepted"
    fake.repository = "Acme/app"
    commented = await fake.send(fake.commented(issue, "still"))
    assert commented.answer["thread_id"] == opened.answer["thread_id"]


async def test_hostile_payload_values_are_stored_as_text_the_stores_hold(
    world: World, forge: FakeForge
) -> None:
    """A NUL, a lone surrogate, a huge issue number, a huge repository name: a clear answer, no failure."""
    nul = forge.issue(13, title="nul\x00title \ud800", body="body\x00with nul and \ud800 a lone surrogate")
    sent = await forge.send(forge.opened(nul))
    assert sent.status == 200, sent.answer
    root = await world.human.request("GET", f"/api/messages/{sent.answer['thread_id']}")
    assert "\x00" not in root["body"] and "bodywith nul" in root["body"]
    huge = forge.issue(2**63)
    await refused(world, forge.send(forge.opened(huge)), 422, "INVALID_ARGUMENT")
    forge.repository = "acme/" + "x" * 5000
    await refused(world, forge.send(forge.opened(forge.issue(14))), 404, "NOT_FOUND")


async def test_an_issue_follows_its_first_label_by_code_point_whatever_the_database_orders(
    pg_cluster: PgCluster,
) -> None:
    """The mapping an issue with two mapped labels follows is its first label's. On a PostgreSQL
    database of another collation than C (most clusters: en_US and the like), ``ORDER BY label``
    put ``api`` before ``Bug``, where SQLite puts ``Bug`` first: the same issue went to another
    bot on each store. The order is now the labels' code points on both."""
    name = f"board_icu_{os.getpid()}"
    with psycopg.connect(pg_cluster.url, autocommit=True) as admin:
        if admin.info.server_version < 150000:
            pytest.skip("a database's own ICU collation (LOCALE_PROVIDER) came in PostgreSQL 15")
        admin.execute(
            f"CREATE DATABASE {name} TEMPLATE template0 ENCODING 'UTF8'"
            " LOCALE_PROVIDER icu ICU_LOCALE 'en-US' LOCALE 'C'"
        )
    url = pg_cluster.database_url(name)
    store = PostgresStore(url, readers=1)
    await store.open()
    now = "2026-12-07T00:00:00Z"

    async def mapped(conn: Any) -> int:
        async def made(sql: str, params: tuple[Any, ...]) -> int:
            return int((await (await conn.execute(sql + " RETURNING id", params)).fetchone())[0])

        ws = await made("INSERT INTO workspaces (slug, name, created_at) VALUES ('w', 'w', ?)", (now,))
        source = await made(
            "INSERT INTO intake_sources (name, forge, secret, created_at, updated_at)"
            " VALUES ('acme', 'github', 's', ?, ?)",
            (now, now),
        )
        for label in ("api", "Bug", ""):
            await made(
                "INSERT INTO intake_mappings (source_id, repository, label, workspace_id, channel)"
                " VALUES (?, 'acme/app', ?, ?, 'issues')",
                (source, label, ws),
            )
        return source

    try:
        source = await store.write(mapped)

        async def labels(conn: Any) -> tuple[list[str], list[str], bool]:
            ordered = await (await conn.execute("SELECT 'api' < 'Bug'")).fetchone()
            return (
                [row["label"] for row in await intake_store.mappings_for(conn, source, "acme/app")],
                [row["label"] for row in await intake_store.mappings(conn, [source])],
                bool(ordered[0]),
            )

        for_issue, listed, collated = await store.read(labels)
        assert collated  # the database's own order is not the code points'
        assert for_issue == listed == ["", "Bug", "api"]
    finally:
        await store.close()
        pg_cluster.drop_database(url)
