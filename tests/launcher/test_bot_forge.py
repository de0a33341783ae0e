"""From an issue on the forge to its answer, through a real ``bot run``: the forge's webhook opens
a thread mentioning the mapped bot, its daemon wakes a harness turn, the reply it marks for the
issue lands on the forge as one comment, and the human it mentions hears of it on their webhook,
once each; the forge's echo of that comment adds nothing to the thread."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from tests.launcher.botrun import BotProcess, LiveBoard, one_reply
from tests.launcher.fakeharness import Fake
from tests.support.boardtest import World, eventually
from tests.support.forge import FakeForge
from tests.support.notify_support import SECRET as HOOK_SECRET
from tests.support.notify_support import Receiver

FORGE_SECRET = "the-forge-webhook-secret"
TOKEN = "forge-token-for-replies"


async def test_an_issue_is_answered_on_the_forge_and_its_human_is_told(
    live: LiveBoard, world: World, fake: Fake, make_bot: Callable[..., BotProcess]
) -> None:
    forge = FakeForge("forgejo", live.url, "acme", FORGE_SECRET)
    forge.token = TOKEN  # the one its comments API takes
    api = await forge.start()
    receiver = await Receiver().start()
    try:
        mapping = {"repository": "acme/app", "workspace": "proj", "channel": "issues"}
        await world.human.request(
            "PUT",
            "/api/intake/sources/acme",
            json={
                "forge": "forgejo",
                "secret": FORGE_SECRET,
                "api_url": api,
                "api_token": TOKEN,
                "mappings": [mapping | {"label": "bug", "bot": "pb", "reply_out": True}],
            },
        )
        hook = await world.human.create_destination(
            "alice's hook", "webhook", url=receiver.url("/hook/alice"), secret=HOOK_SECRET
        )
        await world.human.set_destination_kinds(hook["id"], ["mention"])
        fake.script({"do": "reply", "text": "@alice fixed on main in a1b2c3", "tags": ["forge"]})
        await make_bot().start().started()

        sent = await forge.send(forge.opened(forge.issue(3, title="Crash on start", labels=("bug",))))
        assert sent.status == 200 and sent.answer["status"] == "accepted", sent.answer
        thread_id = int(sent.answer["thread_id"])
        reply = await one_reply(world, thread_id)
        assert reply["tags"] == ["forge"] and reply["mentions"] == ["alice"]

        await eventually(lambda: forge.comments or None, "the comment on the issue")
        await eventually(lambda: receiver.at("/hook/alice") or None, "alice's notification")
        await asyncio.sleep(1)  # nothing more follows: one comment, one notification
        (comment,) = forge.comments
        assert (comment.repository, comment.issue) == ("acme/app", 3)
        assert comment.body.startswith("@alice fixed on main in a1b2c3") and "Posted by pb" in comment.body
        assert comment.authorization == f"token {TOKEN}"
        (told,) = receiver.at("/hook/alice")
        assert told.json()["kind"] == "mention" and f"/t/{thread_id}" in told.json()["link"]

        before = len((await world.human.thread(thread_id))["messages"])
        echoed = await forge.send(forge.echo(forge.issue(3, labels=("bug",)), comment))
        assert echoed.status == 200 and echoed.answer["status"] == "ignored", echoed.answer
        assert len((await world.human.thread(thread_id))["messages"]) == before
        assert len([c for c in fake.calls() if c.get("step")]) == 1  # one turn of the harness
    finally:
        await receiver.close()
        await forge.close()
