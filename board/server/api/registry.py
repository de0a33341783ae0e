"""Registry routes: skills, profiles, and the composed prompt of a bot's turn."""

from __future__ import annotations

from typing import Any

from ..services import prompt, registry
from .discovery import board_url
from .responses import INT, STR, array, nullable, obj, page, ref
from .route import Answer, Call, Route


async def skills(call: Call) -> Any:
    return await registry.list_skills(call.ctx, call.p, call.query)


async def create_skill(call: Call) -> Any:
    return await registry.create_skill(call.ctx, call.p, call.body)


async def skill(call: Call) -> Any:
    return await registry.get_skill(call.ctx, call.p, call.arg("name"), call.query)


async def update_skill(call: Call) -> Any:
    return await registry.update_skill(call.ctx, call.p, call.arg("name"), call.body)


async def profiles(call: Call) -> Any:
    return await registry.list_profiles(call.ctx, call.p, call.query)


async def create_profile(call: Call) -> Any:
    return await registry.create_profile(call.ctx, call.p, call.body)


async def profile(call: Call) -> Any:
    return await registry.get_profile(call.ctx, call.p, call.arg("name"))


async def update_profile(call: Call) -> Any:
    return await registry.update_profile(call.ctx, call.p, call.arg("name"), call.body)


async def bot_prompt(call: Call) -> Any:
    return await prompt.compose(call.ctx, call.p, call.arg("handle"), call.query, board_url(call.request))


ROUTES = [
    Route(
        "GET",
        "/api/skills",
        skills,
        "Skills of the board, without their text.",
        answer=Answer(page("skills", ref("Skill"))),
        query=registry.SkillList,
    ),
    Route(
        "POST",
        "/api/skills",
        create_skill,
        "Add a skill: name, description, source, SKILL.md text (humans, admin bots).",
        answer=Answer(ref("Skill")),
        body=registry.NewSkill,
        status=201,
    ),
    Route(
        "GET",
        "/api/skills/{name}",
        skill,
        "One skill with its SKILL.md text; version=N for an earlier one.",
        answer=Answer(ref("Skill")),
        query=registry.SkillQuery,
    ),
    Route(
        "PUT",
        "/api/skills/{name}",
        update_skill,
        "Write a new version of a skill (humans, admin bots).",
        answer=Answer(ref("Skill")),
        body=registry.SkillUpdate,
    ),
    Route(
        "GET",
        "/api/profiles",
        profiles,
        "Launch profiles; a bot sees its own workspace's.",
        answer=Answer(page("profiles", ref("Profile"))),
        query=registry.ProfileList,
    ),
    Route(
        "POST",
        "/api/profiles",
        create_profile,
        "Add a launch profile to a workspace (humans).",
        answer=Answer(ref("Profile")),
        body=registry.NewProfile,
        status=201,
    ),
    Route(
        "GET",
        "/api/profiles/{name}",
        profile,
        "One launch profile with its identity text.",
        answer=Answer(ref("Profile")),
    ),
    Route(
        "PUT",
        "/api/profiles/{name}",
        update_profile,
        "Change a launch profile; fields left out keep their value (humans).",
        answer=Answer(ref("Profile")),
        body=registry.ProfileUpdate,
    ),
    Route(
        "GET",
        "/api/bots/{handle}/prompt",
        bot_prompt,
        "The composed prompt of a bot's next turn (the bot, humans, admin bots).",
        answer=Answer(
            obj(
                {
                    "bot": STR,
                    "turn": STR,
                    "first_turn": nullable(STR),
                    "handoff": nullable(STR),
                    "bytes": INT,
                    "budget_bytes": INT,
                    "handoff_bytes": INT,
                    "covers": array(INT),
                    "omitted": array(INT),
                }
            )
        ),
        query=prompt.PromptQuery,
    ),
]
