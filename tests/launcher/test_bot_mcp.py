"""A bot whose harness gets the board as an MCP server: a real ``bot run --mcp``, the fake
claude reading its per-run MCP config, starting ``board mcp`` and replying through it."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from board.launcher.config import ConfigError, Options, resolve
from board.launcher.mcp import McpSetup
from tests.launcher.botrun import BotProcess, mention, one_reply, wakes
from tests.launcher.fakeharness import Fake
from tests.support.boardtest import World, eventually


async def test_a_reply_through_the_mcp_tools_lands_and_the_wake_is_recorded(
    world: World, fake: Fake, make_bot: Callable[..., BotProcess]
) -> None:
    fake.script({"do": "mcp_reply", "text": "answered with the board tools"})
    bot = await make_bot("claude", args=["--mcp"]).start().started()

    first = await mention(world)
    reply = await one_reply(world, first)
    assert reply["body"] == "answered with the board tools"

    action = (await eventually(fake.actions, "the fake's record of its MCP call"))[-1]
    assert action["action"] == "mcp_reply" and action["error"] is None
    assert "post" in action["tools"] and "knowledge" in action["tools"]
    call = fake.last_call()
    config = json.loads((bot.state_dir / "mcp-claude.json").read_text())
    assert call["argv"][call["argv"].index("--mcp-config") + 1] == action["mcp_config"]
    assert "--strict-mcp-config" in call["argv"]
    assert world.bot.token is not None
    assert world.bot.token not in json.dumps(config), "the token stays out of the config file"
    assert (bot.state_dir / "mcp-claude.json").stat().st_mode & 0o077 == 0

    recorded = await eventually(lambda: wakes(world.human, "pb"), "the wake record")
    assert recorded[0]["trigger_ids"] == [first] and recorded[0]["outcome"] == "ok"
    # With the tools, the prompt names them instead of carrying the HTTP recipe.
    prompt = call["prompt"]
    assert 'post(reply_to=<id>, body="...")' in prompt and "/api/messages" not in prompt


async def test_a_harness_without_a_per_run_mcp_config_is_refused_at_start(
    make_bot: Callable[..., BotProcess],
) -> None:
    bot = make_bot("opencode", args=["--mcp"]).start()
    assert await bot.wait_exit() == 2
    assert "takes no per-run MCP configuration" in bot.output()


def test_mcp_comes_from_the_flag_the_environment_or_the_profile(tmp_path: Path) -> None:
    environ = {"BOT_STATE_DIR": str(tmp_path)}
    profile = {"harness": "claude", "repo": str(tmp_path), "mcp": True}

    def setup(options: Options, **env: str) -> McpSetup | None:
        return resolve(options, {**environ, **env}, token="t", handle="pb", profile=profile).mcp

    from_profile = setup(Options())
    assert from_profile is not None and "--strict-mcp-config" in from_profile.flags
    assert setup(Options(), BOT_MCP="0") is None
    assert setup(Options(mcp=False)) is None
    codex = setup(Options(harness="codex"))
    assert codex is not None and 'mcp_servers.board.bearer_token_env_var="BOARD_TOKEN"' in codex.flags
    with pytest.raises(ConfigError, match="BOT_MCP must be 1 or 0"):
        setup(Options(), BOT_MCP="maybe")
    with pytest.raises(ConfigError, match="no per-run MCP configuration"):
        setup(Options(harness="copilot"))
