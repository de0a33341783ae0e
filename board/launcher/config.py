"""What one bot daemon runs with: flags, then the environment, then its profile.

Precedence is the usual one for a command: a flag on the command line wins over
an environment variable, which wins over the profile on the board, which wins
over the defaults here. The token never comes from a flag (it would show in
``ps``): ``BOARD_TOKEN``, or the file ``token`` in the bot's state directory,
which must be private to its owner.
"""

from __future__ import annotations

import os
import re
import shlex
import stat
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..local_board import BOARD_VAR, own_url
from .harnesses import ADAPTERS, Adapter, adapter_from_env
from .mcp import McpSetup, setup_for
from .process import silent_timeout, turn_timeout
from .worktrees import GitError, Repo, check_branch_name

DEFAULT_JITTER = 20.0  # BOT_JITTER, seconds
DEFAULT_STOP_GRACE = 10.0  # BOT_STOP_GRACE: how long SIGTERM lets a running turn finish
DEFAULT_MAX_WORKTREES = 4  # BOT_MAX_WORKTREES, else the profile's max_worktrees
MAX_WORKTREES = 32  # the most BOT_MAX_WORKTREES may ask for
HANDLE = re.compile(r"[A-Za-z0-9._-]{2,32}")
CHANNEL = re.compile(r"[a-z0-9._-]{2,64}")


class ConfigError(ValueError):
    """Configuration the daemon cannot start with; the message says what to change."""


def state_root(environ: Mapping[str, str]) -> Path:
    """Where every bot's state directory lives: ``BOT_STATE_DIR``, else the XDG state home."""
    override = environ.get("BOT_STATE_DIR", "").strip()
    if override:
        return Path(override).expanduser()
    xdg = environ.get("XDG_STATE_HOME", "").strip()
    base = Path(xdg).expanduser() if xdg else Path.home() / ".local" / "state"
    return base / "bot-board" / "bots"


def state_dir(environ: Mapping[str, str], handle: str) -> Path:
    """One bot's state directory (token, state.json, pid, log)."""
    check_handle(handle)
    return state_root(environ) / handle


def check_handle(handle: str) -> str:
    if not HANDLE.fullmatch(handle):
        raise ConfigError(f"handle {handle!r} must be 2-32 of [A-Za-z0-9._-]")
    return handle


def read_token_file(path: Path) -> str:
    """The token in path; refused when others may read it (a token is a login)."""
    try:
        info = path.stat()
    except FileNotFoundError:
        raise ConfigError(f"no token: set BOARD_TOKEN or write it to {path} (mode 0600)") from None
    if info.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise ConfigError(
            f"{path} is readable by others (mode {stat.S_IMODE(info.st_mode):04o}); run: chmod 600 {path}"
        )
    if info.st_uid != os.getuid():
        raise ConfigError(f"{path} belongs to another user; the token file must be yours")
    token = path.read_text().strip()
    if not token:
        raise ConfigError(f"{path} is empty")
    return token


def parse_list(value: Any) -> tuple[str, ...]:
    """A comma-separated string or a list, as a tuple of non-empty words."""
    if value is None:
        return ()
    items = value.split(",") if isinstance(value, str) else [str(v) for v in value]
    return tuple(item.strip() for item in items if item.strip())


def parse_flags(value: Any) -> tuple[str, ...]:
    """Harness flags from a shell-quoted string or a list."""
    if value is None:
        return ()
    if isinstance(value, str):
        return tuple(shlex.split(value))
    return tuple(str(v) for v in value)


def parse_seconds(name: str, raw: Any, default: float) -> float:
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return default
    try:
        value = float(raw)
    except (TypeError, ValueError):
        raise ConfigError(f"{name} must be a number of seconds, not {raw!r}") from None
    if value < 0:
        raise ConfigError(f"{name} must not be negative, not {raw!r}")
    return value


@dataclass(frozen=True)
class Options:
    """What the command line said; None means "not given"."""

    handle: str | None = None
    harness: str | None = None
    repo: str | None = None
    watch: str | None = None
    goal: int | None = None
    profile: str | None = None
    board: str | None = None
    pool: str | None = None
    skills: tuple[str, ...] = ()
    jitter: float | None = None
    model: str | None = None
    mcp: bool | None = None
    worktrees: bool | None = None
    max_worktrees: int | None = None
    base_branch: str | None = None


@dataclass(frozen=True)
class BotConfig:
    """Everything the loop needs, resolved and checked."""

    handle: str
    harness: str
    board_url: str
    token: str
    repo: Path
    state_dir: Path
    watch: tuple[str, ...] = ()
    goal: int | None = None
    profile: str | None = None
    model: str | None = None
    flags: tuple[str, ...] = ()
    jitter: float = DEFAULT_JITTER
    turn_timeout: float = 1800.0
    silent_timeout: float = 300.0
    stop_grace: float = DEFAULT_STOP_GRACE
    pool: Path | None = None
    skills: tuple[str, ...] = ()  # --skill sources
    profile_skills: tuple[str, ...] = ()  # the profile's skills, by name on the board
    command: tuple[str, str] = ("", "")  # the profile's command template and session field
    mcp: McpSetup | None = None  # the board's MCP server for the harness, when MCP is on
    # Start a fresh harness session after this many turns of one, or once a turn of it read
    # this many tokens (None: never); see docs/bots.md "Session rotation".
    rotate_after_turns: int | None = None
    rotate_after_tokens: int | None = None
    # A worktree and a session per thread (docs/bots.md "Worktrees"); base is resolved at start.
    worktrees: bool = False
    max_worktrees: int = DEFAULT_MAX_WORKTREES
    base_branch: str = ""
    environ: Mapping[str, str] = field(default_factory=dict, repr=False)


def board_url(options: Options, environ: Mapping[str, str]) -> str:
    """``--board``, else BOARD_URL, else this machine's own board (its settings' port)."""
    if options.board or environ.get(BOARD_VAR):
        return str(options.board or environ[BOARD_VAR]).rstrip("/")
    try:
        return own_url(environ)
    except ValueError as exc:
        raise ConfigError(f"{exc}; or name the board with --board or {BOARD_VAR}") from None


def token_for(handle: str | None, environ: Mapping[str, str]) -> str:
    """BOARD_TOKEN, else the bot's token file."""
    token = environ.get("BOARD_TOKEN", "").strip()
    if token:
        return token
    if not handle:
        raise ConfigError("no token: set BOARD_TOKEN, or give --handle so the token file can be found")
    return read_token_file(state_dir(environ, handle) / "token")


def wake_filters(
    options: Options, environ: Mapping[str, str], profile: Mapping[str, Any]
) -> tuple[tuple[str, ...], int | None]:
    """The channels and the goal thread the wake feed is asked for: each the flag's, else the
    environment's, else the profile's. Read again once the board holds each wake stream
    (``Bot.read_stream``), so a running bot follows its profile's watch and goal."""
    watch = parse_list(options.watch if options.watch is not None else environ.get("BOT_WATCH"))
    if options.watch is None and not environ.get("BOT_WATCH"):
        watch = parse_list(profile.get("watch"))
    for slug in watch:
        if not CHANNEL.fullmatch(slug):
            raise ConfigError(f"watch: {slug!r} is not a channel slug")
    goal_raw = options.goal if options.goal is not None else environ.get("BOT_GOAL") or profile.get("goal")
    try:
        goal = int(goal_raw) if goal_raw not in (None, "") else None
    except (TypeError, ValueError):
        raise ConfigError(f"goal must be a thread id, not {goal_raw!r}") from None
    return watch, goal


def resolve(
    options: Options,
    environ: Mapping[str, str],
    *,
    token: str,
    handle: str,
    profile: Mapping[str, Any] | None = None,
) -> BotConfig:
    """Merge flags, environment and profile into a checked configuration."""
    prof = dict(profile or {})
    check_handle(handle)
    harness = options.harness or environ.get("BOT_HARNESS") or prof.get("harness")
    if not harness:
        raise ConfigError("no harness: give --harness (claude, codex, opencode, copilot, gemini, command)")
    if harness not in ADAPTERS:
        raise ConfigError(f"unknown harness {harness!r}; known: {', '.join(sorted(ADAPTERS))}")
    pool = options.pool or environ.get("BOT_POOL")
    repo_raw = options.repo or environ.get("BOT_REPO") or prof.get("repo") or (pool or os.getcwd())
    repo = Path(str(repo_raw)).expanduser().resolve()
    if not repo.is_dir():
        raise ConfigError(f"repo {repo} is not a directory")
    watch, goal = wake_filters(options, environ, prof)
    jitter = (
        options.jitter
        if options.jitter is not None
        else parse_seconds("BOT_JITTER", environ.get("BOT_JITTER"), DEFAULT_JITTER)
    )
    try:
        timeout = turn_timeout(environ)
        silence = silent_timeout(environ)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    pool_path = None
    if pool:
        pool_path = Path(pool).expanduser().resolve()
        pool_path.mkdir(parents=True, exist_ok=True)
    model = options.model or environ.get("BOT_MODEL") or prof.get("model") or None
    mcp = None
    if _mcp_on(options, environ, prof):
        mcp = setup_for(harness, board_url(options, environ), state_dir(environ, handle))
        if mcp is None:
            raise ConfigError(
                f"harness {harness} takes no per-run MCP configuration here; "
                "run it without --mcp (BOT_MCP, the profile's mcp), or use claude, codex or gemini"
            )
    worktrees, max_worktrees, base = _worktrees(options, environ, prof, repo, pool_path)
    return BotConfig(
        handle=handle,
        harness=harness,
        board_url=board_url(options, environ),
        token=token,
        repo=repo,
        state_dir=state_dir(environ, handle),
        watch=watch,
        goal=goal,
        profile=options.profile or environ.get("BOT_PROFILE") or None,
        model=str(model) if model else None,
        flags=parse_flags(prof.get("flags")),
        jitter=jitter,
        turn_timeout=timeout,
        silent_timeout=silence,
        stop_grace=parse_seconds("BOT_STOP_GRACE", environ.get("BOT_STOP_GRACE"), DEFAULT_STOP_GRACE),
        pool=pool_path,
        skills=tuple(options.skills),
        profile_skills=parse_list(prof.get("skills")),
        command=(str(prof.get("command_template") or ""), str(prof.get("command_session_field") or "")),
        mcp=mcp,
        rotate_after_turns=_rotation(environ, prof, "rotate_after_turns"),
        rotate_after_tokens=_rotation(environ, prof, "rotate_after_tokens"),
        worktrees=worktrees,
        max_worktrees=max_worktrees,
        base_branch=base,
        environ=dict(environ),
    )


def _worktrees(
    options: Options, environ: Mapping[str, str], profile: Mapping[str, Any], repo: Path, pool: Path | None
) -> tuple[bool, int, str]:
    """Whether each thread gets its own worktree, how many at once, and from which base.

    The base must exist now: a daemon that would fail at its first thread fails at start.
    """
    on = options.worktrees
    if on is None:
        on = _flag("BOT_WORKTREES", environ.get("BOT_WORKTREES", ""), bool(profile.get("worktrees")))
    raw: Any = options.max_worktrees
    if raw is None:
        raw = environ.get("BOT_MAX_WORKTREES") or profile.get("max_worktrees") or DEFAULT_MAX_WORKTREES
    try:
        most = int(str(raw))
    except ValueError:
        raise ConfigError(f"max worktrees must be a whole number, not {raw!r}") from None
    if not 1 <= most <= MAX_WORKTREES:
        raise ConfigError(f"max worktrees must be 1..{MAX_WORKTREES}, not {most}")
    if not on:
        return False, most, ""
    wanted = options.base_branch or environ.get("BOT_BASE_BRANCH") or profile.get("base_branch") or None
    if pool is not None:  # the checkouts come later (cloned per channel): each is checked when first used
        try:
            return True, most, check_branch_name(str(wanted)) if wanted else ""
        except ValueError as exc:
            raise ConfigError(str(exc)) from None
    try:
        base = Repo(repo).base(str(wanted) if wanted else None)
    except (ValueError, GitError) as exc:
        raise ConfigError(str(exc)) from None
    return True, most, base


def _flag(name: str, raw: str, default: bool) -> bool:
    """A 1/0 environment switch; unset: default."""
    raw = raw.strip().lower()
    if not raw:
        return default
    if raw not in ("1", "true", "yes", "0", "false", "no"):
        raise ConfigError(f"{name} must be 1 or 0, not {raw!r}")
    return raw in ("1", "true", "yes")


def _rotation(environ: Mapping[str, str], profile: Mapping[str, Any], key: str) -> int | None:
    """BOT_ROTATE_AFTER_TURNS / _TOKENS, else the profile's; 0 or nothing: never rotate."""
    name = f"BOT_{key.upper()}"
    raw = environ.get(name) or profile.get(key)
    if raw in (None, ""):
        return None
    try:
        value = int(str(raw))
    except ValueError:
        raise ConfigError(f"{name} must be a whole number of {key.rsplit('_', 1)[1]}, not {raw!r}") from None
    if value < 0:
        raise ConfigError(f"{name} must be 0 (never) or more, not {value}")
    return value or None


def _mcp_on(options: Options, environ: Mapping[str, str], profile: Mapping[str, Any]) -> bool:
    if options.mcp is not None:
        return options.mcp
    return _flag("BOT_MCP", environ.get("BOT_MCP", ""), bool(profile.get("mcp")))


def make_adapter(cfg: BotConfig) -> Adapter:
    """The harness adapter: BOT_<HARNESS>_FLAGS and BOT_COMMAND_* when set, else the profile's."""
    env = dict(cfg.environ)
    key = f"BOT_{cfg.harness.upper()}_FLAGS"
    if not env.get(key, "").strip() and cfg.flags:
        env[key] = shlex.join(cfg.flags)
    for name, value in zip(("BOT_COMMAND_TEMPLATE", "BOT_COMMAND_SESSION_FIELD"), cfg.command, strict=True):
        if not env.get(name, "").strip() and value:
            env[name] = value  # the environment wins over the profile, as everywhere
    try:
        adapter = adapter_from_env(cfg.harness, env)
        adapter.check_program(env)
        adapter.check_environment(env, os.geteuid())
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    return adapter
