#!/usr/bin/env python3
"""Strict stand-ins for the harness CLIs, for tests: claude, codex, opencode,
copilot and gemini, chosen by the name this script is run under (argv[0]).

Each persona parses its command line as strictly as the real CLI (unknown
options, options the real one refuses together, options a subcommand rejects),
exits 2 with a usage message on bad argv, refuses what the real one refuses
about its environment, reads piped stdin where the real one does, and prints
the real output shapes. Every call is recorded; behaviour is scripted. See
README.md next to this file for the script format. Standard library only.

Checked against the real CLIs (help texts and observed output, fresh HOME, no
credentials, no network), the versions pinned in tests/realcli/clis.py:

    claude    Claude Code 2.1.332
    codex     Codex CLI 0.171.0
    opencode  OpenCode 1.18.33
    gemini    Gemini CLI 0.61.0
    copilot   Copilot CLI 1.0.102
"""

from __future__ import annotations

import fcntl
import json
import os
import random
import re
import resource
import signal
import stat
import string
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

FAKE_DIR = os.environ.get("FAKE_HARNESS_DIR")
STEP_KINDS = {
    "ok",
    "commit",
    "fail",
    "error_result",
    "crash",
    "hang",
    "flood",
    "new_session",
    "session_gone",
    "read_stdin",
    "reply",
    "claim",
    "act",
    "logged_out",
    "mcp_reply",
}


class Usage(Exception):
    """Bad argv: the persona prints this and exits with its `usage_exit`."""


class Refusal(Exception):
    """The CLI refuses to run (environment, session): message and exit code."""

    def __init__(self, message: str, code: int = 1, stdout: str = "") -> None:
        super().__init__(message)
        self.code = code
        self.stdout = stdout


# --------------------------------------------------------------------------
# shared state under $FAKE_HARNESS_DIR, with a lock so concurrent calls are safe


@contextmanager
def locked() -> Iterator[None]:
    if not FAKE_DIR:
        yield
        return
    os.makedirs(FAKE_DIR, exist_ok=True)
    with open(os.path.join(FAKE_DIR, ".lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _read_json(name: str, default: Any) -> Any:
    path = os.path.join(FAKE_DIR or "", name)
    try:
        with open(path) as f:
            return json.load(f)
    except FileNotFoundError:
        return default


def _write_json(name: str, value: Any) -> None:
    path = os.path.join(FAKE_DIR or "", name)
    tmp = path + f".{os.getpid()}.tmp"
    with open(tmp, "w") as f:
        json.dump(value, f)
    os.replace(tmp, path)


def append_jsonl(name: str, record: dict[str, Any]) -> None:
    if not FAKE_DIR:
        return
    with locked(), open(os.path.join(FAKE_DIR, name), "a") as f:
        f.write(json.dumps(record) + "\n")


def next_step() -> dict[str, Any]:
    """Consume the next scripted step; the last one repeats; default ok."""
    if not FAKE_DIR:
        return {"do": "ok"}
    with locked():
        script = _read_json("script.json", None)
        if not script:
            return {"do": "ok"}
        if not isinstance(script, list) or not all(isinstance(s, dict) for s in script):
            raise SystemExit("fake harness: script.json must be a list of step objects")
        state = _read_json("state.json", {"next": 0})
        index = min(state["next"], len(script) - 1)
        state["next"] = state["next"] + 1
        _write_json("state.json", state)
    step = dict(script[index])
    step.setdefault("do", "ok")
    if step["do"] not in STEP_KINDS:
        raise SystemExit(f"fake harness: unknown step {step['do']!r}")
    step["index"] = index
    return step


def known_sessions(persona: str) -> dict[str, Any]:
    """The sessions a persona handed out: id -> {cwd, turns}."""
    with locked():
        sessions: dict[str, Any] = _read_json("sessions.json", {}).get(persona, {})
    return sessions


def session_known(persona: str, sid: str, cwd: str, scoped: bool) -> bool:
    if not FAKE_DIR:
        return True
    entry = known_sessions(persona).get(sid)
    return entry is not None and (not scoped or entry["cwd"] == cwd)


def remember_session(persona: str, sid: str, cwd: str) -> bool:
    """Record a session; False if the id was already taken."""
    if not FAKE_DIR:
        return True
    with locked():
        sessions = _read_json("sessions.json", {})
        mine = sessions.setdefault(persona, {})
        fresh = sid not in mine
        entry = mine.setdefault(sid, {"cwd": cwd, "turns": 0})
        entry["turns"] += 1
        _write_json("sessions.json", sessions)
    return fresh


def tokens(text: str) -> int:
    """A deterministic token count: four bytes of UTF-8 to a token, as a rough tokenizer."""
    return (len(text.encode()) + 3) // 4


@dataclass(frozen=True)
class TurnUsage:
    """One turn's tokens: the session so far read back from the cache, the new prompt
    (written to the cache for the next turn) and the answer."""

    prompt: int
    output: int
    cache_read: int

    @property
    def cache_write(self) -> int:
        return self.prompt

    @property
    def input_total(self) -> int:
        return self.cache_read + self.prompt

    def cost_usd(self) -> float:
        """Sonnet's list prices per million: input 3, cache write 3.75, cache read 0.30, output 15."""
        return round((self.prompt * 3.75 + self.cache_read * 0.30 + self.output * 15) / 1e6, 6)


def turn_usage(persona: str, sid: str, prompt: str, text: str) -> TurnUsage:
    """This turn's usage: a resumed turn re-reads every earlier turn's prompt and answer.

    The session's running total lives in sessions.json next to its turn count."""
    usage = TurnUsage(prompt=tokens(prompt), output=tokens(text), cache_read=0)
    if not FAKE_DIR:
        return usage
    with locked():
        sessions = _read_json("sessions.json", {})
        entry = sessions.get(persona, {}).get(sid)
        if entry is None:
            return usage
        usage = TurnUsage(usage.prompt, usage.output, cache_read=int(entry.get("context", 0)))
        entry["context"] = usage.input_total + usage.output
        _write_json("sessions.json", sessions)
    return usage


# --------------------------------------------------------------------------
# argv parsing shared by the personas


def parse_options(
    args: list[str],
    spec: dict[str, str],
    aliases: dict[str, str],
    *,
    subcommands: tuple[str, ...] = (),
    unknown: str = "unknown option '{}'",
) -> tuple[dict[str, list[Any]], list[str], list[str], list[str]]:
    """Options (canonical name -> values), positionals, words after '--', and
    the argv from a subcommand word on (which the caller parses itself).

    spec kinds: "flag" (no value), "value" (one value), "optional" (a value if
    the next word is not an option).
    """
    opts: dict[str, list[Any]] = {}
    positionals: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--":
            return opts, positionals, args[i + 1 :], []
        if arg.startswith("-") and arg != "-":
            name, eq, value = arg.partition("=") if arg.startswith("--") else (arg, "", "")
            canonical = aliases.get(name, name)
            kind = spec.get(canonical)
            if kind is None:
                raise Usage(unknown.format(name))
            if kind == "flag":
                if eq:
                    raise Usage(f"option '{name}' does not take a value")
                opts.setdefault(canonical, []).append(True)
            elif kind == "value":
                if not eq:
                    if i + 1 >= len(args):
                        raise Usage(f"option '{name}' argument missing")
                    i += 1
                    value = args[i]
                opts.setdefault(canonical, []).append(value)
            else:
                if not eq and i + 1 < len(args) and not args[i + 1].startswith("-"):
                    i += 1
                    value = args[i]
                opts.setdefault(canonical, []).append(value if (eq or value) else True)
        elif arg in subcommands and not positionals:
            return opts, positionals, [], args[i:]
        else:
            positionals.append(arg)
        i += 1
    return opts, positionals, [], []


def last(opts: dict[str, list[Any]], name: str) -> Any:
    values = opts.get(name)
    return values[-1] if values else None


def is_uuid(text: str) -> bool:
    try:
        uuid.UUID(text)
    except ValueError:
        return False
    return True


def stdin_kind() -> str:
    try:
        mode = os.fstat(0).st_mode
    except OSError:
        return "closed"
    if os.isatty(0):
        return "tty"
    if stat.S_ISFIFO(mode):
        return "pipe"
    if stat.S_ISSOCK(mode):
        return "socket"
    if stat.S_ISCHR(mode):
        return "devnull" if os.path.samestat(os.fstat(0), os.stat(os.devnull)) else "chardev"
    if stat.S_ISREG(mode):
        return "file"
    return "other"


def read_stdin() -> str:
    try:
        return sys.stdin.read()
    except (OSError, ValueError):
        return ""


def out(text: str) -> None:
    sys.stdout.write(text)
    sys.stdout.flush()


def line(obj: dict[str, Any]) -> None:
    out(json.dumps(obj) + "\n")


def in_git_repo(path: str) -> bool:
    path = os.path.abspath(path)
    while True:
        if os.path.exists(os.path.join(path, ".git")):
            return True
        parent = os.path.dirname(path)
        if parent == path:
            return False
        path = parent


# --------------------------------------------------------------------------
# personas


@dataclass
class Invocation:
    prompt: str
    resume: str | None = None
    fresh_id: str | None = None
    model: str | None = None
    tools_allowed: bool = True
    output: str = "json"
    details: dict[str, Any] = field(default_factory=dict)
    usage: TurnUsage = TurnUsage(0, 0, 0)  # set once the answer is known


@dataclass
class Action:
    kind: str  # reply | claim | act
    command: str
    allowed: bool
    status: int | None = None
    body: str = ""
    error: str | None = None


class Persona:
    name = ""
    version = ""  # the real CLI this persona was checked against
    usage_exit = 1  # how the real CLI exits on bad argv
    reads_piped_stdin = False
    sessions_scoped_to_cwd = False

    def parse(self, args: list[str]) -> Invocation:
        raise NotImplementedError

    def check_env(self, inv: Invocation) -> None:
        """Raise Refusal when the environment makes the real CLI refuse."""

    def new_session_id(self) -> str:
        return str(uuid.uuid4())

    def session_gone(self, inv: Invocation) -> Refusal:
        raise NotImplementedError

    def emit_ok(self, inv: Invocation, sid: str, text: str, actions: list[Action]) -> int:
        raise NotImplementedError

    def emit_error_result(self, inv: Invocation, sid: str, message: str) -> int:
        raise NotImplementedError

    def logged_out(self, inv: Invocation, sid: str) -> int:
        """What the real CLI prints without credentials; its exit code."""
        raise SystemExit(f"fake harness: {self.name} has no logged_out step")

    def partial(self, inv: Invocation, sid: str) -> str:
        """The first part of a success output, for a crash in the middle."""
        return ""


class Claude(Persona):
    name = "claude"
    version = "2.1.332"
    reads_piped_stdin = True  # it appends piped stdin to the prompt
    sessions_scoped_to_cwd = True  # sessions live under ~/.claude/projects/<cwd>
    SPEC = {
        "--print": "flag",
        "--output-format": "value",
        "--input-format": "value",
        "--permission-mode": "value",
        "--dangerously-skip-permissions": "flag",
        "--resume": "value",
        "--continue": "flag",
        "--session-id": "value",
        "--fork-session": "flag",
        "--model": "value",
        "--fallback-model": "value",
        "--verbose": "flag",
        "--debug": "flag",
        "--max-turns": "value",
        "--max-budget-usd": "value",
        "--append-system-prompt": "value",
        "--system-prompt": "value",
        "--allowedTools": "value",
        "--disallowedTools": "value",
        "--add-dir": "value",
        "--mcp-config": "value",
        "--strict-mcp-config": "flag",
        "--settings": "value",
        "--include-partial-messages": "flag",
    }
    ALIASES = {
        "-p": "--print",
        "-r": "--resume",
        "-c": "--continue",
        "-d": "--debug",
        "--allowed-tools": "--allowedTools",
        "--disallowed-tools": "--disallowedTools",
    }
    MODES = {"acceptEdits", "bypassPermissions", "default", "dontAsk", "plan"}

    def parse(self, args: list[str]) -> Invocation:
        opts, pos, rest, _ = parse_options(args, self.SPEC, self.ALIASES)
        pos += rest
        if "--print" not in opts:
            raise Usage("fake claude: interactive mode needs a terminal; use -p/--print")
        if len(pos) > 1:
            raise Usage(f"too many arguments. Expected 1 argument but got {len(pos)}.")
        fmt = last(opts, "--output-format") or "text"
        if fmt not in ("text", "json", "stream-json"):
            raise Usage(f"option '--output-format <format>' argument '{fmt}' is invalid")
        if fmt == "stream-json" and "--verbose" not in opts:
            raise Usage("Error: When using --print, --output-format=stream-json requires --verbose")
        mode = last(opts, "--permission-mode")
        if mode is not None and mode not in self.MODES:
            raise Usage(f"option '--permission-mode <mode>' argument '{mode}' is invalid")
        resume = last(opts, "--resume")
        fresh = last(opts, "--session-id")
        if (
            fresh is not None
            and (resume is not None or "--continue" in opts)
            and "--fork-session" not in opts
        ):
            raise Usage("Error: --session-id with --continue or --resume also needs --fork-session.")
        if fresh is not None and not is_uuid(fresh):
            raise Usage("Error: Invalid session ID. Must be a valid UUID.")
        if resume is not None and not is_uuid(resume):
            raise Usage(
                "Error: --resume requires a valid session ID or session title when used with --print. "
                "Usage: claude -p --resume <session-id|title>. "
                f'Provided value "{resume}" is not a UUID and does not match any session title.'
            )
        allowed = mode == "bypassPermissions" or "--dangerously-skip-permissions" in opts
        if allowed and os.geteuid() == 0 and os.environ.get("IS_SANDBOX") != "1":
            raise Usage(
                "--dangerously-skip-permissions cannot be used with root/sudo privileges for security reasons"
            )
        return Invocation(
            prompt=pos[0] if pos else "",
            resume=resume,
            fresh_id=fresh,
            model=last(opts, "--model"),
            tools_allowed=allowed,
            output=fmt,
            details={
                "permission_mode": mode,
                "mcp_config": last(opts, "--mcp-config"),
                "strict_mcp_config": "--strict-mcp-config" in opts,
            },
        )

    def check_env(self, inv: Invocation) -> None:
        if os.environ.get("CLAUDECODE"):
            raise Refusal(
                "Error: Claude Code cannot be launched inside another Claude Code session.\n"
                "Nested sessions share runtime resources and will crash all active sessions.\n"
                "To bypass this check, unset the CLAUDECODE environment variable."
            )
        if not inv.prompt.strip():
            raise Refusal(
                "Error: Input must be provided either through stdin or as a prompt "
                "argument when using --print"
            )

    def session_gone(self, inv: Invocation) -> Refusal:
        return Refusal(f"No conversation found with session ID: {inv.resume}")

    def _result(self, sid: str, turn: TurnUsage, **fields: Any) -> dict[str, Any]:
        result = {
            "type": "result",
            "subtype": "success",
            "is_error": False,
            "duration_ms": 2140,
            "duration_api_ms": 1980,
            "num_turns": 1,
            "result": "",
            "session_id": sid,
            "total_cost_usd": turn.cost_usd(),
            "usage": {
                # The new prompt is cached as it is read: no uncached input is left.
                "input_tokens": 0,
                "cache_creation_input_tokens": turn.cache_write,
                "cache_read_input_tokens": turn.cache_read,
                "output_tokens": turn.output,
                "server_tool_use": {"web_search_requests": 0},
                "service_tier": "standard",
            },
            "modelUsage": {},
            "permission_denials": [],
            "uuid": str(uuid.uuid4()),
        }
        result.update(fields)
        return result

    def _emit(self, inv: Invocation, sid: str, result: dict[str, Any]) -> None:
        if inv.output == "text":
            out(str(result.get("result", "")) + "\n")
            return
        if inv.output == "stream-json":
            line(
                {
                    "type": "system",
                    "subtype": "init",
                    "session_id": sid,
                    "cwd": os.getcwd(),
                    "model": inv.model or "claude-sonnet-4-5",
                    "permissionMode": inv.details.get("permission_mode") or "default",
                }
            )
        line(result)

    def emit_ok(self, inv: Invocation, sid: str, text: str, actions: list[Action]) -> int:
        denials = [
            {"tool_name": "Bash", "tool_use_id": f"toolu_{i}", "tool_input": {"command": a.command}}
            for i, a in enumerate(actions)
            if not a.allowed
        ]
        self._emit(inv, sid, self._result(sid, inv.usage, result=text, permission_denials=denials))
        return 0

    def emit_error_result(self, inv: Invocation, sid: str, message: str) -> int:
        # An error keeps "subtype": "success" and exits 1.
        self._emit(inv, sid, self._failure(sid, f"API Error: {message}"))
        return 1

    def logged_out(self, inv: Invocation, sid: str) -> int:
        self._emit(inv, sid, self._failure(sid, "Not logged in · Please run /login"))
        return 1

    def _failure(self, sid: str, text: str) -> dict[str, Any]:
        return self._result(
            sid,
            TurnUsage(0, 0, 0),
            is_error=True,
            result=text,
            total_cost_usd=0,
            usage={"input_tokens": 0, "output_tokens": 0},
            terminal_reason="api_error",
            stop_reason="stop_sequence",
        )

    def partial(self, inv: Invocation, sid: str) -> str:
        return json.dumps(self._result(sid, inv.usage, result="partial"))[:60]


class Codex(Persona):
    name = "codex"
    version = "0.171.0"
    usage_exit = 2
    reads_piped_stdin = True  # piped stdin is appended to the prompt
    EXEC_SPEC = {
        "--json": "flag",
        "--skip-git-repo-check": "flag",
        "--ephemeral": "flag",
        "--ignore-user-config": "flag",
        "--ignore-rules": "flag",
        "--full-auto": "flag",
        "--sandbox": "value",
        "--cd": "value",
        "--model": "value",
        "--config": "value",
        "--image": "value",
        "--profile": "value",
        "--oss": "flag",
        "--local-provider": "value",
        "--color": "value",
        "--output-last-message": "value",
        "--output-schema": "value",
        "--add-dir": "value",
        "--dangerously-bypass-approvals-and-sandbox": "flag",
    }
    ALIASES = {
        "-s": "--sandbox",
        "-C": "--cd",
        "-m": "--model",
        "-c": "--config",
        "-i": "--image",
        "-p": "--profile",
        "-o": "--output-last-message",
        "--yolo": "--dangerously-bypass-approvals-and-sandbox",
        "--experimental-json": "--json",
    }
    # resume's own options plus the exec options marked global; -s, -C and the
    # rest are not accepted after "resume".
    RESUME_SPEC = {
        "--last": "flag",
        "--all": "flag",
        "--image": "value",
        "--json": "flag",
        "--skip-git-repo-check": "flag",
        "--ephemeral": "flag",
        "--ignore-user-config": "flag",
        "--ignore-rules": "flag",
        "--full-auto": "flag",
        "--model": "value",
        "--config": "value",
        "--output-last-message": "value",
        "--dangerously-bypass-approvals-and-sandbox": "flag",
    }
    SANDBOXES = {"read-only", "workspace-write", "danger-full-access"}

    def _usage(self, what: str, where: str) -> str:
        return (
            f"error: unexpected argument '{what}' found\n\n"
            f"Usage: {where}\n\nFor more information, try '--help'."
        )

    def parse(self, args: list[str]) -> Invocation:
        if not args or args[0] not in ("exec", "e"):
            raise Usage("fake codex: the interactive TUI needs a terminal; use `codex exec`")
        opts, pos, rest, sub = parse_options(
            args[1:],
            self.EXEC_SPEC,
            self.ALIASES,
            subcommands=("resume",),
            unknown=self._usage("{}", "codex exec [OPTIONS] [PROMPT]"),
        )
        pos += rest
        resume = None
        if sub:
            ropts, rpos, rrest, _ = parse_options(
                sub[1:],
                self.RESUME_SPEC,
                self.ALIASES,
                unknown=self._usage("{}", "codex exec resume [OPTIONS] [SESSION_ID] [PROMPT]"),
            )
            rpos += rrest
            if len(rpos) > 2:
                raise Usage(self._usage(rpos[2], "codex exec resume [OPTIONS] [SESSION_ID] [PROMPT]"))
            for name, values in ropts.items():
                opts.setdefault(name, []).extend(values)
            if "--last" in ropts:
                raise Usage("fake codex: --last is not supported by this fake")
            if not rpos:
                raise Usage("fake codex: resume needs a SESSION_ID")
            resume = rpos[0]
            pos = rpos[1:]
        elif len(pos) > 1:
            raise Usage(self._usage(pos[1], "codex exec [OPTIONS] [PROMPT]"))
        sandbox = last(opts, "--sandbox")
        if sandbox is not None and sandbox not in self.SANDBOXES:
            raise Usage(f"error: invalid value '{sandbox}' for '--sandbox <SANDBOX_MODE>'")
        config = dict(str(c).partition("=")[::2] for c in opts.get("--config", []))
        if sandbox is None:
            sandbox = config.get("sandbox_mode", "read-only").strip("\"'")
        network = sandbox == "danger-full-access" or (
            sandbox == "workspace-write" and config.get("sandbox_workspace_write.network_access") == "true"
        )
        if "--dangerously-bypass-approvals-and-sandbox" in opts:
            sandbox, network = "danger-full-access", True
        prompt = pos[0] if pos else "-"
        return Invocation(
            prompt=prompt,
            resume=resume,
            model=last(opts, "--model"),
            tools_allowed=network,
            output="json" if "--json" in opts else "text",
            details={
                "sandbox": sandbox,
                "skip_git": "--skip-git-repo-check" in opts
                or "--dangerously-bypass-approvals-and-sandbox" in opts,
            },
        )

    def check_env(self, inv: Invocation) -> None:
        if not inv.details["skip_git"] and not in_git_repo(os.getcwd()):
            raise Refusal("Not inside a trusted directory and --skip-git-repo-check was not specified.")
        if not inv.prompt.strip():
            raise Refusal("No prompt provided via stdin.")

    def session_gone(self, inv: Invocation) -> Refusal:
        return Refusal(
            "Error: thread/resume: thread/resume failed: no rollout found for thread id "
            f"{inv.resume} (code -32600)"
        )

    def _start(self, inv: Invocation, sid: str) -> None:
        if inv.output == "json":
            line({"type": "thread.started", "thread_id": sid})
            line({"type": "turn.started"})
        else:
            sys.stderr.write(f"OpenAI Codex (fake)\n--------\nsession id: {sid}\n--------\n")

    def emit_ok(self, inv: Invocation, sid: str, text: str, actions: list[Action]) -> int:
        self._start(inv, sid)
        if inv.output != "json":
            out(text + "\n")
            return 0
        line(
            {
                "type": "item.completed",
                "item": {"id": "item_0", "type": "reasoning", "text": "Thinking."},
            }
        )
        for n, action in enumerate(actions, start=1):
            item = {"id": f"item_{n}", "type": "command_execution", "command": action.command}
            line(
                {
                    "type": "item.started",
                    "item": {
                        **item,
                        "aggregated_output": "",
                        "exit_code": None,
                        "status": "in_progress",
                    },
                }
            )
            if action.allowed:
                done = {"aggregated_output": action.body, "exit_code": 0, "status": "completed"}
            else:
                done = {
                    "aggregated_output": "curl: (6) Could not resolve host (network disabled by sandbox)",
                    "exit_code": 6,
                    "status": "failed",
                }
            line({"type": "item.completed", "item": {**item, **done}})
        line(
            {
                "type": "item.completed",
                "item": {"id": f"item_{len(actions) + 1}", "type": "agent_message", "text": text},
            }
        )
        line(
            {
                "type": "turn.completed",
                # input_tokens counts the cached ones too.
                "usage": {
                    "input_tokens": inv.usage.input_total,
                    "cached_input_tokens": inv.usage.cache_read,
                    "output_tokens": inv.usage.output,
                },
            }
        )
        return 0

    def emit_error_result(self, inv: Invocation, sid: str, message: str) -> int:
        self._start(inv, sid)
        if inv.output != "json":
            sys.stderr.write(f"ERROR: {message}\n")
            return 0
        line({"type": "error", "message": message})
        line({"type": "turn.failed", "error": {"message": message}})
        return 0

    def partial(self, inv: Invocation, sid: str) -> str:
        return json.dumps({"type": "thread.started", "thread_id": sid}) + '\n{"type": "item.comp'


# yargs, which parses opencode's argv, turns a word that looks like a number
# into a number (its isNumber: hex, or a decimal without a leading zero); run
# then fails on it.
NUMBER_WORD = re.compile(r"0x[0-9a-fA-F]+|(?!0[^.])-?(?:\d+(?:\.\d*)?|\.\d+)(?:e[-+]?\d+)?")
OPENCODE_ERROR = "\x1b[91m\x1b[1mError: \x1b[0m"


class Opencode(Persona):
    name = "opencode"
    version = "1.18.33"
    reads_piped_stdin = True  # run reads the message from stdin whenever it is not a TTY
    sessions_scoped_to_cwd = True  # sessions belong to the project
    SPEC = {
        "--command": "value",
        "--continue": "flag",
        "--session": "value",
        "--fork": "flag",
        "--share": "flag",
        "--model": "value",
        "--agent": "value",
        "--format": "value",
        "--file": "value",
        "--title": "value",
        "--attach": "value",
        "--password": "value",
        "--username": "value",
        "--dir": "value",
        "--port": "value",
        "--variant": "value",
        "--thinking": "flag",
        "--interactive": "flag",
        "--auto": "flag",
        "--yolo": "flag",
        "--dangerously-skip-permissions": "flag",
        "--print-logs": "flag",
        "--log-level": "value",
        "--pure": "flag",
    }
    ALIASES = {
        "-c": "--continue",
        "-s": "--session",
        "-m": "--model",
        "-f": "--file",
        "-p": "--password",
        "-u": "--username",
        "-i": "--interactive",
    }

    def parse(self, args: list[str]) -> Invocation:
        if not args or args[0] != "run":
            raise Usage("fake opencode: the TUI needs a terminal; use `opencode run`")
        opts, pos, rest, _ = parse_options(args[1:], self.SPEC, self.ALIASES, unknown="Unknown argument: {}")
        fmt = last(opts, "--format") or "default"
        if fmt not in ("default", "json"):
            raise Usage(f'Invalid values:\n  Argument: format, Given: "{fmt}", Choices: "default", "json"')
        numbers = [w for w in pos + rest if NUMBER_WORD.fullmatch(w)]
        if numbers:
            raise Refusal(
                OPENCODE_ERROR + "Unexpected error\n\n"
                "G.includes is not a function. (In 'G.includes(\" \")', 'G.includes' is undefined)"
            )
        # run joins its words with spaces, quoting any word that holds a space.
        words = [f'"{w.replace(chr(34), chr(92) + chr(34))}"' if " " in w else w for w in pos + rest]
        auto = any(k in opts for k in ("--auto", "--yolo", "--dangerously-skip-permissions"))
        return Invocation(
            prompt=" ".join(words),
            resume=last(opts, "--session"),
            model=last(opts, "--model"),
            tools_allowed=auto,
            output=fmt,
            details={"fork": "--fork" in opts, "continue": "--continue" in opts},
        )

    def check_env(self, inv: Invocation) -> None:
        if not inv.prompt.strip():
            raise Refusal(OPENCODE_ERROR + "You must provide a message or a command")
        if inv.details["fork"] and not (inv.resume or inv.details["continue"]):
            raise Refusal(OPENCODE_ERROR + "--fork requires --continue or --session")

    def new_session_id(self) -> str:
        return "ses_" + "".join(random.choices(string.ascii_letters + string.digits, k=26))

    def session_gone(self, inv: Invocation) -> Refusal:
        return Refusal(OPENCODE_ERROR + "Session not found")

    def _event(self, sid: str, kind: str, **data: Any) -> None:
        line({"type": kind, "timestamp": int(time.time() * 1000), "sessionID": sid, **data})

    def _part(self, sid: str, kind: str, **data: Any) -> dict[str, Any]:
        return {
            "id": "prt_" + uuid.uuid4().hex[:20],
            "sessionID": sid,
            "messageID": "msg_1",
            "type": kind,
            **data,
        }

    def emit_ok(self, inv: Invocation, sid: str, text: str, actions: list[Action]) -> int:
        if inv.output != "json":
            out(text + "\n")
            return 0
        self._event(sid, "step_start", part=self._part(sid, "step-start"))
        for action in actions:
            if action.allowed:
                state = {
                    "status": "completed",
                    "input": {"command": action.command},
                    "output": action.body,
                }
            else:
                sys.stderr.write(f"! permission requested: bash ({action.command}); auto-rejecting\n")
                state = {
                    "status": "error",
                    "input": {"command": action.command},
                    "error": "The user rejected permission to use this specific tool call.",
                }
            self._event(sid, "tool_use", part=self._part(sid, "tool", tool="bash", state=state))
        usage = inv.usage
        # input counts only what the cache did not hold; the new prompt is cached as it is read.
        tokens = {
            "input": 0,
            "output": usage.output,
            "reasoning": 0,
            "cache": {"read": usage.cache_read, "write": usage.cache_write},
        }
        if actions:
            # The whole turn's usage is on its last step; the tool step's share is left at 0.
            idle = {"input": 0, "output": 0, "reasoning": 0, "cache": {"read": 0, "write": 0}}
            self._event(
                sid,
                "step_finish",
                part=self._part(sid, "step-finish", reason="tool-calls", cost=0, tokens=idle),
            )
            self._event(sid, "step_start", part=self._part(sid, "step-start"))
        self._event(sid, "text", part=self._part(sid, "text", text=text, time={"start": 1, "end": 2}))
        self._event(
            sid,
            "step_finish",
            part=self._part(sid, "step-finish", reason="stop", cost=usage.cost_usd(), tokens=tokens),
        )
        return 0

    def emit_error_result(self, inv: Invocation, sid: str, message: str) -> int:
        # An error ends the run at once, with exit 1 (no "done" event in this version).
        if inv.output != "json":
            sys.stderr.write(OPENCODE_ERROR + message + "\n")
            return 1
        self._event(
            sid, "error", error={"name": "UnknownError", "data": {"message": message, "ref": "err_1"}}
        )
        return 1

    def partial(self, inv: Invocation, sid: str) -> str:
        return json.dumps({"type": "step_start", "sessionID": sid}) + '\n{"type": "te'


class Copilot(Persona):
    name = "copilot"
    version = "1.0.102"
    SPEC = {
        "--prompt": "value",
        "--silent": "flag",
        "--output-format": "value",
        "--allow-all-tools": "flag",
        "--allow-all-paths": "flag",
        "--allow-all-urls": "flag",
        "--allow-all": "flag",
        "--allow-tool": "value",
        "--deny-tool": "value",
        "--model": "value",
        "--resume": "optional",
        "--session-id": "value",
        "--continue": "flag",
        "--no-ask-user": "flag",
        "--add-dir": "value",
        "--agent": "value",
        "--log-level": "value",
        "--log-dir": "value",
        "--no-color": "flag",
        "--screen-reader": "flag",
        "--banner": "flag",
        "--disable-builtin-mcps": "flag",
        "--additional-mcp-config": "value",
        "--no-custom-instructions": "flag",
        "--autopilot": "flag",
        "--experimental": "flag",
    }
    ALIASES = {"-p": "--prompt", "-s": "--silent", "--yolo": "--allow-all"}

    def parse(self, args: list[str]) -> Invocation:
        opts, pos, rest, _ = parse_options(
            args, self.SPEC, self.ALIASES, unknown="error: unexpected argument '{}' found"
        )
        if pos or rest:
            raise Usage(
                "error: Invalid command format.\n\n"
                "It looks like your prompt was not quoted, so the extra words were treated as "
                "separate arguments."
            )
        prompt = last(opts, "--prompt")
        if prompt is None:
            raise Usage("fake copilot: interactive mode needs a terminal; use -p")
        fmt = last(opts, "--output-format") or "text"
        if fmt not in ("text", "json"):
            raise Usage(f"error: option '--output-format <format>' argument '{fmt}' is invalid.")
        resume = last(opts, "--resume")
        if resume is True:
            raise Usage("fake copilot: --resume needs a session id with -p")
        fresh = last(opts, "--session-id")
        if fresh is not None and resume is not None:
            raise Usage("error: the argument '--resume [<value>]' cannot be used with '--session-id <id>'")
        if fresh is not None and not is_uuid(fresh):
            raise Usage(f"error: invalid value '{fresh}' for '--session-id <id>': not a valid UUID")
        if fresh is not None and session_known(self.name, fresh, os.getcwd(), False):
            resume, fresh = fresh, None  # --session-id names an existing session: resume it
        tools = opts.get("--allow-tool", [])
        allowed = (
            "--allow-all-tools" in opts or "--allow-all" in opts or any("shell" in str(t) for t in tools)
        )
        return Invocation(
            prompt=prompt,
            resume=resume,
            fresh_id=fresh,
            model=last(opts, "--model"),
            tools_allowed=allowed,
            output=fmt,
            details={"silent": "--silent" in opts},
        )

    def session_gone(self, inv: Invocation) -> Refusal:
        return Refusal(
            f"Error: No session, task, or name matched '{inv.resume}'.\n\n"
            "To resume by session or task ID:  copilot --resume=<id>\n"
            "To start a new session with ID:   copilot --session-id=<valid-uuid>"
        )

    def logged_out(self, inv: Invocation, sid: str) -> int:
        sys.stderr.write(
            "Error: No authentication information found.\n\n"
            "Copilot can be authenticated with GitHub using an OAuth Token or a Fine-Grained "
            "Personal Access Token.\n\n"
            "To authenticate, you can use any of the following methods:\n"
            "  • Start 'copilot' and run the '/login' command\n"
            "  • Set the COPILOT_GITHUB_TOKEN, GH_TOKEN, or GITHUB_TOKEN environment variable\n"
        )
        return 1

    def _event(self, kind: str, **data: Any) -> None:
        line(
            {
                "type": kind,
                "id": str(uuid.uuid4()),
                "timestamp": time.strftime("%Y-%m-%dT%H:%M:%SZ"),
                "data": data,
            }
        )

    def _result(self, sid: str, code: int) -> None:
        line(
            {
                "type": "result",
                "timestamp": time.strftime("%Y-%m-%dT%H:%M:%SZ"),
                "sessionId": sid,
                "exitCode": code,
                "usage": {
                    "premiumRequests": 1,
                    "totalApiDurationMs": 1800,
                    "sessionDurationMs": 2600,
                    "codeChanges": {"linesAdded": 0, "linesRemoved": 0, "filesModified": []},
                },
            }
        )

    def emit_ok(self, inv: Invocation, sid: str, text: str, actions: list[Action]) -> int:
        if inv.output != "json":
            out(text + "\n")
            if not inv.details["silent"]:
                out("\nTotal usage est:       1 Premium request\n")
            return 0
        self._event("user.message", content=inv.prompt)
        self._event("assistant.turn_start", turnId="0")
        for n, action in enumerate(actions):
            self._event(
                "tool.execution_start",
                toolCallId=f"call_{n}",
                toolName="bash",
                arguments={"command": action.command},
            )
            if action.allowed:
                self._event(
                    "tool.execution_complete",
                    toolCallId=f"call_{n}",
                    success=True,
                    result={"content": action.body},
                )
            else:
                self._event(
                    "tool.execution_complete",
                    toolCallId=f"call_{n}",
                    success=False,
                    error={"message": "Permission denied and could not request permission from user"},
                )
        self._event("assistant.message", messageId="m1", content=text)
        self._event("assistant.turn_end", turnId="0")
        self._result(sid, 0)
        return 0

    def emit_error_result(self, inv: Invocation, sid: str, message: str) -> int:
        if inv.output != "json":
            sys.stderr.write(f"Error: {message}\n")
            return 0
        self._event("user.message", content=inv.prompt)
        self._event("session.error", errorType="model", message=message)
        self._result(sid, 1)
        return 0

    def partial(self, inv: Invocation, sid: str) -> str:
        return json.dumps({"type": "user.message", "data": {"content": "x"}}) + '\n{"type": "assis'


class Gemini(Persona):
    name = "gemini"
    version = "0.61.0"
    # -o json writes its error object to stderr: bare before the run (auth),
    # after "[ERROR] " during it; the exit code says what failed.
    EXIT_AUTH = 41
    EXIT_RESUME = 42
    EXIT_UNTRUSTED = 55
    sessions_scoped_to_cwd = True  # ~/.gemini/tmp/<project>/chats
    SPEC = {
        "--prompt": "value",
        "--prompt-interactive": "value",
        "--output-format": "value",
        "--model": "value",
        "--resume": "value",
        "--session-id": "value",
        "--session-file": "value",
        "--approval-mode": "value",
        "--yolo": "flag",
        "--sandbox": "flag",
        "--debug": "flag",
        "--include-directories": "value",
        "--allowed-tools": "value",
        "--allowed-mcp-server-names": "value",
        "--extensions": "value",
        "--skip-trust": "flag",
        "--screen-reader": "flag",
        "--checkpointing": "flag",
    }
    ALIASES = {
        "-p": "--prompt",
        "-i": "--prompt-interactive",
        "-o": "--output-format",
        "-m": "--model",
        "-r": "--resume",
        "-y": "--yolo",
        "-s": "--sandbox",
        "-d": "--debug",
        "-e": "--extensions",
    }
    MODES = {"default", "auto_edit", "yolo", "plan"}

    def parse(self, args: list[str]) -> Invocation:
        opts, pos, rest, _ = parse_options(args, self.SPEC, self.ALIASES, unknown="Unknown arguments: {}")
        pos += rest
        prompt = last(opts, "--prompt")
        if prompt is not None and pos:
            raise Usage("Cannot use both a positional prompt and the --prompt (-p) flag together")
        if prompt is None:
            if not pos:
                raise Usage("fake gemini: interactive mode needs a terminal; use -p")
            prompt = " ".join(pos)
        if "--prompt-interactive" in opts:
            raise Usage("fake gemini: --prompt-interactive needs a terminal")
        fmt = last(opts, "--output-format") or "text"
        if fmt not in ("text", "json", "stream-json"):
            raise Usage(
                f'Invalid values:\n  Argument: output-format, Given: "{fmt}", '
                'Choices: "text", "json", "stream-json"'
            )
        mode = last(opts, "--approval-mode")
        if mode is not None and "--yolo" in opts:
            raise Usage(
                "Cannot use both --yolo (-y) and --approval-mode together. Use --approval-mode=yolo instead."
            )
        if mode is not None and mode not in self.MODES:
            raise Usage(f'Invalid values:\n  Argument: approval-mode, Given: "{mode}"')
        if sum(k in opts for k in ("--resume", "--session-id", "--session-file")) > 1:
            raise Usage(
                "The flags --resume, --session-id, and --session-file are mutually exclusive. "
                "Please provide only one."
            )
        yolo = "--yolo" in opts or mode == "yolo"
        trusted = "--skip-trust" in opts or os.environ.get("GEMINI_CLI_TRUST_WORKSPACE") == "true"
        return Invocation(
            prompt=prompt,
            resume=last(opts, "--resume"),
            fresh_id=last(opts, "--session-id"),
            model=last(opts, "--model"),
            tools_allowed=yolo and trusted,
            output=fmt,
            details={"trusted": trusted, "yolo": yolo},
        )

    def check_env(self, inv: Invocation) -> None:
        if inv.details["yolo"]:
            sys.stderr.write("YOLO mode is enabled. All tool calls will be automatically approved.\n")
        if not inv.details["trusted"]:
            note = (
                'Approval mode overridden to "default" because the current folder is not trusted.\n'
                if inv.details["yolo"]
                else ""
            )
            raise Refusal(
                note + "\x1b[31mGemini CLI is not running in a trusted directory. To proceed, either use "
                "`--skip-trust`, set the `GEMINI_CLI_TRUST_WORKSPACE=true` environment variable, "
                "or trust this directory in interactive mode.\x1b[0m",
                code=self.EXIT_UNTRUSTED,
            )

    def session_gone(self, inv: Invocation) -> Refusal:
        if not any(entry["cwd"] == os.getcwd() for entry in known_sessions(self.name).values()):
            return Refusal(
                "Error resuming session: No previous sessions found for this project.", code=self.EXIT_RESUME
            )
        return Refusal(
            f'Error resuming session: Invalid session identifier "{inv.resume}".\n'
            "  Use --list-sessions to see available sessions, then use --resume {number}, "
            "--resume {uuid}, or --resume latest.",
            code=self.EXIT_RESUME,
        )

    def _stats(self, calls: int, usage: TurnUsage) -> dict[str, Any]:
        # prompt counts the cached tokens too; input is what the cache did not hold.
        tokens = {
            "input": usage.prompt,
            "prompt": usage.input_total,
            "candidates": usage.output,
            "total": usage.input_total + usage.output,
            "cached": usage.cache_read,
            "thoughts": 0,
            "tool": 0,
        }
        return {
            "models": {
                "gemini-2.5-pro": {
                    "api": {"totalRequests": 1, "totalErrors": 0, "totalLatencyMs": 1500},
                    "tokens": tokens,
                }
            },
            "tools": {"totalCalls": calls, "totalSuccess": calls, "totalFail": 0, "byName": {}},
            "files": {"totalLinesAdded": 0, "totalLinesRemoved": 0},
        }

    def emit_ok(self, inv: Invocation, sid: str, text: str, actions: list[Action]) -> int:
        if inv.output == "text":
            out(text + "\n")
            return 0
        out(
            json.dumps(
                {"session_id": sid, "response": text, "stats": self._stats(len(actions), inv.usage)}, indent=2
            )
            + "\n"
        )
        return 0

    def emit_error_result(self, inv: Invocation, sid: str, message: str) -> int:
        if inv.output == "text":
            sys.stderr.write(f"Error: {message}\n")
            return 1
        error = {"session_id": sid, "error": {"type": "ApiError", "message": message, "code": 500}}
        sys.stderr.write("[ERROR] " + json.dumps(error, indent=2) + "\n")
        return 1

    def logged_out(self, inv: Invocation, sid: str) -> int:
        message = (
            f"Please set an Auth method in your {os.path.expanduser('~')}/.gemini/settings.json or "
            "specify one of the following environment variables before running: GEMINI_API_KEY, "
            "GOOGLE_GENAI_USE_VERTEXAI, GOOGLE_GENAI_USE_GCA"
        )
        error = {"session_id": sid, "error": {"type": "Error", "message": message, "code": self.EXIT_AUTH}}
        sys.stderr.write(json.dumps(error, indent=2) + "\n")
        return self.EXIT_AUTH

    def partial(self, inv: Invocation, sid: str) -> str:
        return '{\n  "session_id": "' + sid + '",\n  "response": "par'


PERSONAS: dict[str, type[Persona]] = {p.name: p for p in (Claude, Codex, Opencode, Copilot, Gemini)}


# --------------------------------------------------------------------------
# board actions, as the model's own curl would make them


def board_action(kind: str, step: dict[str, Any], allowed: bool) -> Action:
    base = os.environ.get("BOARD_URL", "").rstrip("/")
    token = os.environ.get("BOARD_TOKEN", "")
    ids = [i for i in os.environ.get("BOARD_WAKE_IDS", "").split(",") if i.strip()]
    last_id = int(ids[-1]) if ids else None
    if kind == "reply":
        url = f"{base}/api/messages"
        payload: dict[str, Any] = {
            "reply_to": step.get("reply_to", last_id),
            "body": step.get("text", "done"),
        }
        if "tags" in step:
            payload["tags"] = step["tags"]
    else:
        thread = step.get("thread", last_id)
        url = f"{base}/api/threads/{thread}/claim"
        payload = {}
    action = Action(kind=kind, command=f"curl -sS -X POST {url}", allowed=allowed)
    if not allowed:
        action.error = "blocked: the harness ran without its unattended flags"
    elif not base:
        action.error = "BOARD_URL is not set"
    else:
        request = urllib.request.Request(
            url,
            data=json.dumps(payload).encode(),
            method="POST",
            headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
        )
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                action.status = response.status
                action.body = response.read(65536).decode("utf-8", "replace")
        except urllib.error.HTTPError as exc:
            action.status = exc.code
            action.body = exc.read(65536).decode("utf-8", "replace")
            action.error = f"HTTP {exc.code}"
        except (OSError, ValueError) as exc:
            action.error = str(exc)
    return record_action(action, url=url, payload=payload, allowed=allowed, status=action.status)


def record_action(action: Action, **fields: Any) -> Action:
    """Note a board action in actions.jsonl (and its error on stderr, as the model's tool would)."""
    append_jsonl(
        "actions.jsonl",
        {
            "pid": os.getpid(),
            "action": action.kind,
            **fields,
            "response": action.body[:2000],
            "error": action.error,
            "time": time.time(),
        },
    )
    if action.error:
        sys.stderr.write(f"fake {action.kind}: {action.error}\n")
    return action


def commit(step: dict[str, Any]) -> str:
    """Write step's ``path`` (``text``) in the working directory and commit it there, as a
    model editing a checkout would; returns the new commit's sha."""
    target = os.path.join(os.getcwd(), str(step["path"]))
    os.makedirs(os.path.dirname(target), exist_ok=True)
    with open(target, "w") as f:
        f.write(str(step.get("text", "")))
    git = ["git", "-c", "user.name=Fake Model", "-c", "user.email=fake@example.invalid"]
    for argv in (
        [*git, "add", "--", str(step["path"])],
        [*git, "commit", "--quiet", "-m", str(step.get("message", f"edit {step['path']}"))],
    ):
        subprocess.run(argv, check=True, capture_output=True, timeout=60)
    done = subprocess.run(
        ["git", "rev-parse", "HEAD"], check=True, capture_output=True, text=True, timeout=60
    )
    return done.stdout.strip()


def act(step: dict[str, Any], prompt: str, allowed: bool) -> Action:
    """The model's own program: ``step["program"]`` reads the prompt on stdin and calls the
    board with the run's BOARD_URL and BOARD_TOKEN, as a model with a shell would. Its
    stdout is the answer; without the unattended flags it does not run."""
    program = str(step["program"])
    action = Action(kind="act", command=f"python {program}", allowed=allowed)
    if not allowed:
        action.error = "blocked: the harness ran without its unattended flags"
    else:
        done = subprocess.run(
            [sys.executable, program], input=prompt, capture_output=True, text=True, timeout=120
        )
        action.status = done.returncode
        action.body = done.stdout
        if done.returncode != 0:
            action.error = f"exit {done.returncode}: {done.stderr[-2000:]}"
    return record_action(
        action, url=program, payload={"prompt_chars": len(prompt)}, allowed=allowed, status=action.status
    )


def mcp_action(step: dict[str, Any], inv: Invocation) -> Action:
    """Reply through the board's MCP server, as claude does with --mcp-config.

    Like claude: the config's ``mcpServers`` entry is started as a child with
    this process's environment plus the entry's ``env``, and spoken to in
    newline-delimited JSON-RPC with the initialize handshake of 2025-06-18.
    """
    ids = [i for i in os.environ.get("BOARD_WAKE_IDS", "").split(",") if i.strip()]
    arguments = {
        "reply_to": step.get("reply_to", int(ids[-1]) if ids else None),
        "body": step.get("text", "done"),
    }
    action = Action(kind="mcp_reply", command="mcp board post", allowed=inv.tools_allowed)
    tools: list[str] = []
    path = inv.details.get("mcp_config")
    try:
        if not inv.tools_allowed:
            raise RuntimeError("blocked: the harness ran without its unattended flags")
        if not path:
            raise RuntimeError("no MCP server: the run had no --mcp-config")
        with open(path, encoding="utf-8") as handle:
            server = json.load(handle)["mcpServers"][step.get("server", "board")]
        child = subprocess.Popen(
            [server["command"], *server.get("args", [])],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env={**os.environ, **server.get("env", {})},
            text=True,
        )
        assert child.stdin is not None and child.stdout is not None
        try:

            def rpc(ident: int | None, method: str, params: dict[str, Any]) -> Any:
                message: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "params": params}
                if ident is not None:
                    message["id"] = ident
                child.stdin.write(json.dumps(message) + "\n")  # type: ignore[union-attr]
                child.stdin.flush()  # type: ignore[union-attr]
                while ident is not None:
                    answer = json.loads(child.stdout.readline() or "null")  # type: ignore[union-attr]
                    if answer is None:
                        raise RuntimeError("the MCP server closed its output")
                    if answer.get("id") == ident:
                        if "error" in answer:
                            raise RuntimeError(f"MCP error: {answer['error']}")
                        return answer["result"]
                return None

            client = {"name": "fake-claude", "version": "0"}
            rpc(1, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": client})
            rpc(None, "notifications/initialized", {})
            tools = [t["name"] for t in rpc(2, "tools/list", {})["tools"]]
            result = rpc(3, "tools/call", {"name": "post", "arguments": arguments})
            action.body = "".join(c.get("text", "") for c in result.get("content", []))
            action.status = 200
            if result.get("isError"):
                action.error = f"tool error: {action.body[:500]}"
        finally:
            child.stdin.close()
            child.wait(timeout=10)
    except (OSError, ValueError, KeyError, RuntimeError, subprocess.TimeoutExpired) as exc:
        action.error = action.error or str(exc)
    return record_action(action, mcp_config=path, tools=tools, arguments=arguments)


# --------------------------------------------------------------------------


def spawn_grandchild(seconds: float, escape: bool = False) -> int:
    """A child holding our stdout that outlives a kill of us alone; in our
    process group unless it escapes to its own session."""
    child = subprocess.Popen(
        [sys.executable, "-c", f"import time; time.sleep({seconds!r})"],
        stdin=subprocess.DEVNULL,
        start_new_session=escape,
    )
    return child.pid


def main() -> int:
    name = os.path.basename(sys.argv[0])
    persona_cls = PERSONAS.get(name)
    if persona_cls is None:
        sys.stderr.write(f"fake harness: run me as one of {', '.join(PERSONAS)}, not {name!r}\n")
        return 2
    persona = persona_cls()
    record: dict[str, Any] = {
        "persona": name,
        "argv": sys.argv,
        "cwd": os.getcwd(),
        "stdin": stdin_kind(),
        "env_keys": sorted(os.environ),
        "BOARD_WAKE_IDS": os.environ.get("BOARD_WAKE_IDS"),
        "BOT_HANDLE": os.environ.get("BOT_HANDLE"),
        "pid": os.getpid(),
        "pgid": os.getpgid(0),
        "sid": os.getsid(0),
        "time": time.time(),
    }
    try:
        inv = persona.parse(sys.argv[1:])
    except Usage as exc:
        append_jsonl("calls.jsonl", {**record, "argv_error": str(exc)})
        sys.stderr.write(f"{exc}\n")
        return persona.usage_exit
    except Refusal as exc:
        append_jsonl("calls.jsonl", {**record, "refused": str(exc)})
        sys.stderr.write(f"{exc}\n")
        return exc.code
    if persona.reads_piped_stdin and record["stdin"] not in ("tty", "closed"):
        piped = read_stdin()  # blocks until EOF, as the real CLI does
        record["stdin_bytes"] = len(piped)
        if piped.strip():
            inv.prompt = (inv.prompt + "\n" + piped).strip() if inv.prompt != "-" else piped
    if inv.prompt == "-":
        inv.prompt = ""
    try:
        persona.check_env(inv)
    except Refusal as exc:
        append_jsonl("calls.jsonl", {**record, "refused": str(exc)})
        sys.stderr.write(f"{exc}\n")
        return exc.code

    step = next_step()
    record.update(
        step=step,
        prompt=inv.prompt,
        model=inv.model,
        resume=inv.resume,
        tools_allowed=inv.tools_allowed,
    )
    if step["do"] == "read_stdin":
        record["stdin_bytes"] = len(read_stdin())  # with an open pipe this never returns

    cwd = os.getcwd()
    scoped = persona.sessions_scoped_to_cwd
    if inv.resume is not None:
        if step["do"] == "session_gone" or not session_known(name, inv.resume, cwd, scoped):
            refusal = persona.session_gone(inv)
            append_jsonl("calls.jsonl", {**record, "refused": str(refusal)})
            sys.stderr.write(f"{refusal}\n")
            return refusal.code
        sid = inv.resume
        if step["do"] == "new_session":
            sid = persona.new_session_id()
        remember_session(name, sid, cwd)
    else:
        sid = inv.fresh_id or persona.new_session_id()
        if not remember_session(name, sid, cwd):
            message = f"Error: Session ID {sid} is already in use."
            append_jsonl("calls.jsonl", {**record, "refused": message})
            sys.stderr.write(message + "\n")
            return 1
    record["session"] = sid

    if step.get("ignore_term"):
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # inherited by the grandchild too
    if step["do"] == "hang":
        seconds = float(step.get("seconds", 300))
        record["grandchild_pid"] = spawn_grandchild(seconds)
        append_jsonl("calls.jsonl", record)
        time.sleep(seconds)
    else:
        if step.get("linger"):
            linger = float(step["linger"])
            record["grandchild_pid"] = spawn_grandchild(linger, escape=bool(step.get("escape")))
        append_jsonl("calls.jsonl", record)

    if step.get("delay"):
        time.sleep(float(step["delay"]))
    if step.get("noise"):
        out(str(step["noise"]) + "\n")
    text = str(step.get("text", f"fake {name} answer"))
    kind = step["do"]
    if kind == "fail":
        sys.stderr.write(str(step.get("stderr", f"fake {name}: simulated failure")) + "\n")
        return int(step.get("exit", 1))
    if kind == "error_result":
        return persona.emit_error_result(inv, sid, str(step.get("message", "simulated model error")))
    if kind == "logged_out":
        return persona.logged_out(inv, sid)
    if kind == "crash":
        if step.get("stderr"):
            sys.stderr.write(str(step["stderr"]) + "\n")
            sys.stderr.flush()
        out(persona.partial(inv, sid))
        sig = signal.SIGSEGV if step.get("signal") == "SEGV" else signal.SIGKILL
        if sig == signal.SIGSEGV:
            resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # no core file in the test dir
            signal.signal(signal.SIGSEGV, signal.SIG_DFL)
        os.kill(os.getpid(), sig)
        time.sleep(5)
        return 1
    if kind == "flood":
        remaining = int(step.get("bytes", 10 * 1024 * 1024))
        chunk = ("flood " + "x" * 1017 + "\n").encode()  # 1 KiB lines of noise
        while remaining > 0:
            piece = chunk[: min(remaining, len(chunk))]
            sys.stdout.buffer.write(piece)
            remaining -= len(piece)
        sys.stdout.buffer.write(b"\n")
        sys.stdout.flush()
    if kind == "commit":
        sha = commit(step)
        append_jsonl("commits.jsonl", {"cwd": os.getcwd(), "sha": sha, "path": step["path"]})
        if step.get("then") == "hang":  # committed, then still working: a crash can come now
            time.sleep(float(step.get("seconds", 300)))
    actions: list[Action] = []
    if kind == "act":
        done = act(step, inv.prompt, inv.tools_allowed)
        actions.append(done)
        if done.error and done.allowed:  # the program failed; a blocked one is a denial
            return persona.emit_error_result(inv, sid, done.error)
        text = done.body.strip() or text
    if kind in ("reply", "claim", "mcp_reply"):
        actions.append(
            mcp_action(step, inv) if kind == "mcp_reply" else board_action(kind, step, inv.tools_allowed)
        )
        then = step.get("then", "ok")
        if then == "error_result":
            return persona.emit_error_result(inv, sid, str(step.get("message", "simulated model error")))
        if then == "fail":
            sys.stderr.write(str(step.get("stderr", f"fake {name}: simulated failure")) + "\n")
            return int(step.get("exit", 1))
        if kind in ("reply", "mcp_reply") and "text" not in step:
            text = "replied on the board"
    inv.usage = turn_usage(name, sid, inv.prompt, text)
    return persona.emit_ok(inv, sid, text, actions)


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BrokenPipeError:
        # Our stdout was closed under us: die as the real CLIs do.
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGPIPE)
