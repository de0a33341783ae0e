"""The composed prompt of a bot's turn: first-turn parts, the batch, the byte budget, who may ask."""

from __future__ import annotations

from typing import Any

from tests.support.boardtest import World
from tests.support.refusals import refused


def fits(prompt: dict[str, Any], budget: int) -> None:
    """The turn is within its budget, and every trigger is either shown or listed by id."""
    assert len(prompt["turn"].encode()) <= budget
    whole = prompt["turn"] if prompt["first_turn"] is None else f"{prompt['first_turn']}\n\n{prompt['turn']}"
    assert prompt["bytes"] == len(whole.encode())


async def test_a_turn_shows_the_batch_compactly_with_what_to_do(world: World) -> None:
    mention = await world.human.post("@pb please fix the build", channel="builds", workspace="proj")
    reply = await world.peer.post("I can help", reply_to=mention["id"])
    prompt = await world.bot.bot_prompt("pb", [mention["id"], reply["id"]])
    assert prompt["first_turn"] is None
    assert prompt["covers"] == [mention["id"], reply["id"]]
    assert prompt["omitted"] == []
    turn = prompt["turn"]
    assert f"This turn covers messages: {mention['id']}, {reply['id']}." in turn
    assert f"## Thread {mention['id']} in #builds: open" in turn
    assert f"- #{mention['id']} by alice (human) at {mention['created_at']}: for you (mention)" in turn
    assert "> @pb please fix the build" in turn
    assert f"- #{reply['id']} by pb2 (bot)" in turn and "watched" in turn
    assert f"POST {world.board.url}/api/threads/<thread id>/claim" in turn
    assert "Leave FYIs alone" in turn
    assert "do not answer it again" in turn
    fits(prompt, 12_000)


async def test_the_claim_state_of_each_thread_is_one_line(world: World) -> None:
    mine = await world.human.post("task one", channel="builds", workspace="proj")
    theirs = await world.human.post("task two", channel="builds", workspace="proj")
    closed = await world.human.post("task three", channel="builds", workspace="proj")
    await world.bot.claim(mine["id"])
    await world.peer.claim(theirs["id"])
    await world.human.done(closed["id"])
    turn = (await world.human.bot_prompt("pb", [mine["id"], theirs["id"], closed["id"]]))["turn"]
    assert f"## Thread {mine['id']} in #builds: claimed by you until " in turn
    assert f"## Thread {theirs['id']} in #builds: claimed by pb2 until " in turn
    assert "leave it to them" in turn
    assert f"## Thread {closed['id']} in #builds: done (alice)" in turn


async def test_a_reply_without_its_root_shows_where_the_thread_started(world: World) -> None:
    root = await world.human.post("Plan for release 2", channel="plan", workspace="proj")
    reply = await world.peer.post("step two is done", reply_to=root["id"])
    turn = (await world.bot.bot_prompt("pb", [reply["id"]]))["turn"]
    assert "Started by alice: Plan for release 2" in turn


async def test_a_long_body_is_cut_with_the_rest_fetchable_by_id(world: World) -> None:
    long = await world.human.post("@pb " + "word " * 1_000, channel="builds", workspace="proj")
    turn = (await world.bot.bot_prompt("pb", [long["id"]]))["turn"]
    rest = len(long["body"]) - 2_000
    assert f"(… {rest} more characters: GET {world.board.url}/api/messages/{long['id']})" in turn


async def test_the_budget_is_never_exceeded_and_what_does_not_fit_is_listed(world: World) -> None:
    ids = []
    for n in range(12):
        body = f"@pb job {n} " + ("ünïcode " if n % 2 else "ascii ") * 300
        ids.append((await world.human.post(body, channel="builds", workspace="proj"))["id"])
    watched = await world.peer.post("fyi " * 400, channel="builds", workspace="proj")
    ids.append(watched["id"])
    for budget in (2_000, 3_000, 5_000, 12_000, 30_000):
        prompt = await world.bot.bot_prompt("pb", ids, budget_bytes=budget)
        fits(prompt, budget)
        assert sorted(prompt["covers"] + prompt["omitted"]) == sorted(ids)
        assert not set(prompt["covers"]) & set(prompt["omitted"])
        if prompt["omitted"]:
            listed = ", ".join(str(i) for i in prompt["omitted"])
            assert f"Not shown for lack of room: {listed}." in prompt["turn"]
        for shown in prompt["covers"]:
            assert f"- #{shown} by" in prompt["turn"]
    small = await world.bot.bot_prompt("pb", ids, budget_bytes=3_000)
    assert small["omitted"], "3,000 bytes cannot hold 13 long messages"
    assert watched["id"] in small["omitted"], "messages for the bot come before watched ones"
    big = await world.bot.bot_prompt("pb", ids, budget_bytes=30_000)
    assert big["omitted"] == [] and big["covers"] == sorted(ids)


async def test_a_budget_too_small_for_the_id_list_is_refused(world: World) -> None:
    posted = await world.human.post("@pb hi", channel="builds", workspace="proj")
    await refused(
        world.bot.bot_prompt("pb", [posted["id"]], budget_bytes=1_999),
        "INVALID_ARGUMENT",
        unchanged=world.board,
    )
    await refused(
        world.bot.bot_prompt("pb", [posted["id"]], budget_bytes=100_001),
        "INVALID_ARGUMENT",
        unchanged=world.board,
    )


async def test_first_turn_parts_come_only_when_asked(world: World) -> None:
    await world.human.create_skill("review", "Review it.\n", description="Review a diff before merge.")
    await world.human.create_channel(
        "builds", workspace="proj", refs=[{"path": "build/howto.md", "mandatory": True}]
    )
    goal = await world.human.post("Ship wordsnap 1.0", channel="plan", workspace="proj")
    await world.human.create_profile(
        "proj-dev",
        "proj",
        "claude",
        model="opus",
        watch=["builds"],
        goal=goal["id"],
        skills=["review"],
        identity="You keep the wordsnap build green.",
        bots=["pb"],
    )
    mention = await world.human.post("@pb hello", channel="builds", workspace="proj")
    later = await world.bot.bot_prompt("pb", [mention["id"]])
    assert later["first_turn"] is None
    prompt = await world.bot.bot_prompt("pb", [mention["id"]], first=True)
    first = prompt["first_turn"]
    assert first.startswith("# House rules for bots on this board")
    assert f"This board is at {world.board.url}." in first
    assert "{{BOARD_URL}}" not in first
    assert "You are @pb, a bot in workspace proj" in first
    assert "You run with profile proj-dev (harness claude, model opus)." in first
    assert "You watch #builds" in first
    assert f"Your goal is thread {goal['id']}: Ship wordsnap 1.0" in first
    assert "You keep the wordsnap build green." in first
    assert "- #builds: build/howto.md" in first
    assert "- review (version 1): Review a diff before merge. — ~/.claude/skills/review/SKILL.md" in first
    assert "Knowledge index" not in first, "no knowledge index until the knowledge base provides one"
    assert prompt["turn"] == later["turn"]
    fits(prompt, 12_000)


async def test_first_turn_without_a_profile_says_so(world: World) -> None:
    first = (await world.peer.bot_prompt("pb2", [], first=True))["first_turn"]
    assert "No profile names you yet" in first
    assert "No channel of your workspace names a mandatory document." in first
    assert "# Your skills" not in first


async def test_the_prompt_carries_the_knowledge_index_and_a_pack_per_thread(world: World) -> None:
    first = await world.bot.bot_prompt("pb", [], first=True)
    assert "Knowledge index" not in first["first_turn"]  # nothing written yet: nothing invented
    await world.bot.put_document("INDEX.md", "# Index\n\n- build/howto.md: how to build\n", 0, "start")
    await world.bot.put_document(
        "build/howto.md", "# Building\n\nRun the flibbertigibbet target to build.\n", 0, "how we build"
    )
    await world.other.put_document("INDEX.md", "# Other index\n\nsecret other things\n", 0, "theirs")
    posted = await world.human.post("@pb the flibbertigibbet build fails", channel="builds", workspace="proj")
    shown_before = (await world.bot.knowledge_stats())["shown"]
    prompt = await world.bot.bot_prompt("pb", [posted["id"]], first=True)
    assert "- build/howto.md: how to build" in prompt["first_turn"]
    assert "secret other things" not in prompt["first_turn"]
    assert "Knowledge pack for this thread:" in prompt["turn"]
    assert "Run the flibbertigibbet target" in prompt["turn"]
    assert (await world.bot.knowledge_stats())["shown"] > shown_before  # a pack in a prompt is shown


async def test_who_may_ask_for_a_bots_prompt(world: World) -> None:
    posted = await world.human.post("@pb hi", channel="builds", workspace="proj")
    for caller in (world.bot, world.human, world.admin_bot):
        assert (await caller.bot_prompt("pb", [posted["id"]]))["covers"] == [posted["id"]]
    peer = await refused(world.peer.bot_prompt("pb", [posted["id"]]), "NOT_FOUND", unchanged=world.board)
    other = await refused(world.other.bot_prompt("pb", [posted["id"]]), "NOT_FOUND", unchanged=world.board)
    absent = await refused(world.human.bot_prompt("ghost", []), "NOT_FOUND", unchanged=world.board)
    assert peer.message == other.message == absent.message
    await refused(world.human.bot_prompt("alice", []), "NOT_FOUND", unchanged=world.board)
    await refused(world.human.bot_prompt("board", []), "NOT_FOUND", unchanged=world.board)
    await refused(world.anon.bot_prompt("pb", []), "UNAUTHENTICATED", unchanged=world.board)


async def test_trigger_ids_must_be_messages_the_bot_can_see(world: World) -> None:
    elsewhere = await world.human.post("other workspace", channel="lobby", workspace="other")
    room = await world.human.open_conversation(["pb2"], workspace="proj")
    private = await world.human.post("just for pb2", conversation=room["conversation"]["id"])
    mine = await world.human.post("@pb hi", channel="builds", workspace="proj")
    for bad in (elsewhere["id"], private["id"], 10**9):
        await refused(world.human.bot_prompt("pb", [mine["id"], bad]), "NOT_FOUND", unchanged=world.board)
    await refused(
        world.bot.request("GET", "/api/bots/pb/prompt", params={"trigger": "12,x"}),
        "INVALID_ARGUMENT",
        unchanged=world.board,
    )
    shown = await world.peer.bot_prompt("pb2", [private["id"]])
    assert shown["covers"] == [private["id"]]
    assert f"## Thread {private['id']} in conversation {room['conversation']['id']}: open" in shown["turn"]
    assert "for you (conversation)" in shown["turn"]


async def test_an_admin_bot_sees_every_workspace_but_not_others_conversations(world: World) -> None:
    elsewhere = await world.human.post("@ab look", channel="lobby", workspace="other")
    room = await world.human.open_conversation(["pb2"], workspace="proj")
    private = await world.human.post("just for pb2", conversation=room["conversation"]["id"])
    assert (await world.admin_bot.bot_prompt("ab", [elsewhere["id"]]))["covers"] == [elsewhere["id"]]
    await refused(world.admin_bot.bot_prompt("ab", [private["id"]]), "NOT_FOUND", unchanged=world.board)


async def test_a_handoff_names_the_claim_last_messages_and_cited_documents_within_its_cap(
    world: World,
) -> None:
    await world.bot.put_document(
        "build/howto.md", "# Building\n\nRun the flibbertigibbet target to build.\n", 0, "how we build"
    )
    root = await world.human.post("@pb the flibbertigibbet build fails", channel="builds", workspace="proj")
    await world.bot.claim(root["id"])
    for n in range(12):
        await world.bot.post(f"tried fix {n}: " + "still red " * 20, reply_to=root["id"])
    last = await world.human.post("@pb any luck?", reply_to=root["id"])

    plain = await world.bot.bot_prompt("pb", [last["id"]])
    assert plain["handoff"] is None  # only when asked
    prompt = await world.bot.bot_prompt("pb", [last["id"]], handoff=True)
    handoff = prompt["handoff"]
    assert handoff.startswith("# Handoff") and prompt["handoff_bytes"] == 4_000
    assert len(handoff.encode()) <= 4_000
    assert f"## Thread {root['id']} in #builds: claimed by you until" in handoff
    assert "Documents it cites: build/howto.md (revision 1)" in handoff
    assert f"- #{last['id']} by alice" in handoff and "tried fix 11" in handoff  # the newest kept
    assert "tried fix 0:" not in handoff  # eight at most, the oldest left out
    assert prompt["bytes"] == len(f"{handoff}\n\n{prompt['turn']}".encode())

    small = (await world.bot.bot_prompt("pb", [last["id"]], handoff=True, handoff_bytes=600))["handoff"]
    assert len(small.encode()) <= 600 and "any luck?" in small  # the newest message outlasts the rest
    await refused(
        world.bot.bot_prompt("pb", [last["id"]], handoff=True, handoff_bytes=100),
        "INVALID_ARGUMENT",
        message="handoff_bytes",
    )
