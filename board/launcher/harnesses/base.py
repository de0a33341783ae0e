"""Shared types for harness adapters: what a turn asks for, what it came to, and the
parsing helpers every adapter needs.

An adapter is pure: `argv()` builds a command line and `parse()` reads what the
process printed. Running the process belongs to `board.launcher.process`, so the
adapters can be tested against recorded output without spawning anything.

The harness CLIs share a few habits that the helpers here absorb once:

- they print noise (warnings, banners, progress) around their JSON, so JSON is
  looked for line by line and anything else is skipped;
- output may have been cut in the middle by the launcher's memory cap or by a
  crash, so a missing result is reported as ``unparsed`` rather than raised;
- a failure can hide inside a zero exit, and a non-zero exit can come with a
  structured error, so each adapter says what the harness's own result carried
  (on stdout, or on stderr where the CLI writes it there);
- they colour their errors with terminal escapes even when nothing is a
  terminal, and the board refuses text with control characters, so error text
  is stripped of them;
- a resume can fail because the session no longer exists, which the loop treats
  differently (start fresh once), so each adapter lists the messages its CLI
  prints in that case.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

# Written by board.launcher.process into the middle of output it had to cut.
TRUNCATION_NOTE = "bytes dropped by the launcher"

# Linux refuses a single argv element longer than MAX_ARG_STRLEN (128 KiB) with
# E2BIG; refuse earlier, with a message that says what to change.
MAX_PROMPT_BYTES = 120_000

# TurnResult.text is for logs, and a command harness's reply: bounded by the board's
# longest message body (services/posting.MAX_BODY).
TEXT_CAP = 16_000
ERROR_CAP = 2_000

#: Why a turn failed, as the wake record and the loop tell failures apart.
ErrorKind = Literal["exit", "error_result", "timeout", "silent", "session_gone", "unparsed"]
# The kinds whose failure is the process's end: the wake record's line starts with the Exit.
ENDED_KINDS = frozenset({"exit", "timeout", "silent"})


@dataclass(frozen=True)
class TurnRequest:
    """One harness turn: the prompt, and the session to resume if any."""

    prompt: str
    session_id: str | None = None  # resume this session when set
    model: str | None = None
    flags: tuple[str, ...] = ()  # extra/override flags (from BOT_<HARNESS>_FLAGS or a profile)
    # Pre-assign the id of a new session where the CLI allows it (claude,
    # copilot and gemini --session-id), so a turn that times out leaves a
    # session the next turn can resume. Ignored when session_id is set.
    fresh_session_id: str | None = None


@dataclass(frozen=True)
class Exit:
    """How a harness process ended, kept apart from what it said (TurnResult.error), so
    that each reader words the two once: the thread's reply, the wake record's line."""

    code: int | None  # negative: killed by that signal; None: never reaped
    after: float | None = None  # seconds from spawn to the end, when the runner measured them
    # Why the launcher ended it ("timed out after 1800 s"); None when it ended on its own.
    stopped: str | None = None

    @property
    def killed(self) -> bool:
        return self.code is not None and self.code < 0

    def __str__(self) -> str:
        """'exit 1', 'killed by SIGKILL', 'timed out after 5 s (killed by SIGKILL)'."""
        how = describe_exit(self.code)
        return f"{self.stopped} ({how})" if self.stopped else how


@dataclass(frozen=True)
class TurnResult:
    """What one turn came to, as far as the harness's output tells."""

    ok: bool
    session_id: str | None
    text: str  # the final answer text, for logs
    error_kind: ErrorKind | None
    # What went wrong in the harness's words (its error record, stderr's last lines, a parse
    # failure) or the launcher's (it could not start); never how the process ended: that is `exit`.
    error: str | None
    cost_usd: float | None
    input_tokens: int | None  # every input token, the cached ones included
    output_tokens: int | None
    # Copilot bills in premium requests rather than dollars.
    premium_requests: float | None = None
    # Of input_tokens: read back from the provider's prompt cache, and written to it.
    cache_read_tokens: int | None = None
    cache_write_tokens: int | None = None
    exit: Exit | None = None  # how the process ended; None when it never started

    def error_line(self) -> str | None:
        """The failure in one line, for the wake record: how the process ended when that is
        the failure ("exit 1", "timed out after 5 s (killed by SIGKILL)"), then what it said."""
        if self.ok:
            return None
        ended = str(self.exit) if self.exit is not None and self.error_kind in ENDED_KINDS else ""
        return ": ".join(part for part in (ended, self.error) if part) or None


@dataclass
class Scan:
    """What an adapter found in stdout, before the shared classification."""

    session_id: str | None = None
    text: str = ""
    finished: bool = False  # the harness's own end-of-turn record was seen
    error: str | None = None  # an error the harness reported inside its output
    cost_usd: float | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    premium_requests: float | None = None
    cache_read_tokens: int | None = None
    cache_write_tokens: int | None = None
    # What the end-of-turn record is called, for the "unparsed" message.
    expected: str = "result"


@dataclass(frozen=True)
class FlagSpec:
    """How an adapter's default flags and a user's override flags combine.

    Flags are grouped as an option and its value (``--opt value`` or
    ``--opt=value``); a token that does not start with ``-`` is the value of the
    option before it. An override replaces a default with the same identity;
    identity is the canonical option name, plus the key before ``=`` for options
    in ``keyed`` (``-c sandbox_mode=...`` and ``-c model=...`` are different).
    """

    aliases: Mapping[str, str] = field(default_factory=dict)
    keyed: frozenset[str] = frozenset()
    # Giving the key option removes these defaults too (they would conflict).
    displaces: Mapping[str, frozenset[str]] = field(default_factory=dict)
    # The adapter owns these (its parser depends on them): overriding is refused.
    locked: frozenset[str] = frozenset()


class FlagError(ValueError):
    """Override flags that the adapter cannot accept."""


def _groups(flags: Sequence[str], spec: FlagSpec, source: str) -> list[tuple[str, list[str]]]:
    """Split flags into (identity, tokens) groups."""
    groups: list[tuple[str, list[str]]] = []
    i = 0
    while i < len(flags):
        token = flags[i]
        if not token.startswith("-") or token == "-":
            raise FlagError(f"unexpected argument {token!r} in {source}: flags only, no prompt")
        name, eq, value = token.partition("=") if token.startswith("--") else (token, "", "")
        canonical = spec.aliases.get(name, name)
        tokens = [token]
        if not eq and i + 1 < len(flags) and not flags[i + 1].startswith("-"):
            value = flags[i + 1]
            tokens.append(value)
            i += 1
        identity = canonical
        if canonical in spec.keyed:
            identity = f"{canonical}:{value.partition('=')[0]}"
        groups.append((identity, tokens))
        i += 1
    return groups


def check_flags(flags: Sequence[str], spec: FlagSpec, source: str) -> None:
    """Refuse override flags that would break the adapter, at configuration time."""
    for identity, _tokens in _groups(flags, spec, source):
        if identity.partition(":")[0] in spec.locked:
            raise FlagError(
                f"{source} may not set {identity}: the adapter sets it itself "
                "(its output parser or session handling depends on it)"
            )


def merge_flags(defaults: Sequence[str], overrides: Sequence[Sequence[str]], spec: FlagSpec) -> list[str]:
    """Defaults, then each override layer in turn; later layers replace earlier ones."""
    merged = _groups(defaults, spec, "defaults")
    for layer in overrides:
        new = _groups(layer, spec, "flags")
        gone = {identity for identity, _ in new}
        for identity, _ in new:
            gone |= spec.displaces.get(identity, frozenset())
        merged = [g for g in merged if g[0] not in gone] + new
    return [token for _identity, tokens in merged for token in tokens]


def option_values(flags: Sequence[str], spec: FlagSpec, name: str) -> list[str]:
    """The values flags give option name (canonical), in order; "" for a bare flag."""
    values = []
    for identity, tokens in _groups(flags, spec, "flags"):
        if identity.partition(":")[0] == name:
            values.append(tokens[1] if len(tokens) > 1 else tokens[0].partition("=")[2])
    return values


def safe_prompt(prompt: str) -> str:
    """Check the prompt fits in one argv element and cannot be read as a flag."""
    if not prompt.strip():
        raise ValueError("empty prompt: every CLI would wait for one on stdin")
    if "\x00" in prompt:
        raise ValueError("prompt contains a NUL byte, which cannot pass through argv")
    size = len(prompt.encode("utf-8"))
    if size > MAX_PROMPT_BYTES:
        raise ValueError(
            f"prompt is {size} bytes; argv takes at most {MAX_PROMPT_BYTES} (lower the board's prompt budget)"
        )
    # A leading "-" would be parsed as an option (and "-" alone means "read stdin").
    return " " + prompt if prompt.startswith("-") else prompt


def iter_json_objects(text: str) -> Iterator[dict[str, Any]]:
    """Every JSON object in text, one per line, skipping anything else.

    A line holding only ``{`` starts a pretty-printed object (gemini prints its
    result indented), which is decoded across lines.
    """
    decoder = json.JSONDecoder()
    pos = 0
    length = len(text)
    while pos < length:
        end = text.find("\n", pos)
        if end == -1:
            end = length
        line = text[pos:end].strip()
        next_pos = end + 1
        if line.startswith("{"):
            obj: Any = None
            try:
                obj = json.loads(line)
            except ValueError:
                if line == "{":
                    try:
                        obj, stop = decoder.raw_decode(text, text.index("{", pos))
                        next_pos = stop
                    except ValueError:
                        obj = None
            if isinstance(obj, dict):
                yield obj
        pos = next_pos


def non_json_lines(text: str) -> list[str]:
    """Lines that are not JSON objects: where CLIs print plain errors."""
    return [
        line
        for line in (raw.strip() for raw in text.splitlines())
        if line and not (line.startswith("{") and line.endswith("}"))
    ]


# Terminal escapes (CSI and OSC sequences), then any other control character.
_ESCAPES = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b.?")
_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def plain(text: str) -> str:
    """text without terminal escapes or control characters (newlines and tabs stay)."""
    return _CONTROLS.sub("", _ESCAPES.sub("", text))


def trim(text: str, max_lines: int = 20, max_chars: int = ERROR_CAP) -> str:
    """The last lines of text, plain and bounded, for a human to read in a thread."""
    lines = [line.rstrip() for line in plain(text).strip().splitlines() if line.strip()]
    out = "\n".join(lines[-max_lines:])
    if len(out) > max_chars:
        out = "..." + out[-(max_chars - 3) :]
    return out


def cap_text(text: str, limit: int = TEXT_CAP) -> str:
    """Bound the answer text kept for logs, keeping its beginning."""
    text = text.strip()
    return text if len(text) <= limit else text[: limit - 15] + " ...[truncated]"


def describe_exit(code: int | None) -> str:
    """Say how a process ended: 'exit 1', 'killed by SIGKILL'."""
    if code is None:
        return "exit status unknown"
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit {code}"


def find_marker(text: str, markers: Sequence[str]) -> str | None:
    """The first line of text that carries one of markers (case-insensitive)."""
    if not markers:
        return None
    pattern = re.compile("|".join(re.escape(m) for m in markers), re.IGNORECASE)
    for line in text.splitlines():
        if pattern.search(line):
            return line.strip()
    return None


def as_int(value: Any) -> int | None:
    """An int from a JSON number, or None (bools and junk are not counts)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return int(value)


def as_float(value: Any) -> float | None:
    """A float from a JSON number, or None."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def add(total: int | None, value: Any) -> int | None:
    """Add a JSON count to a running total that starts as None."""
    n = as_int(value)
    if n is None:
        return total
    return n if total is None else total + n


class Adapter:
    """One harness CLI: how to call it and how to read what it printed."""

    name: ClassVar[str]
    executable: str
    flag_spec: ClassVar[FlagSpec] = FlagSpec()
    # Messages the CLI prints when a resume names a session it no longer has.
    session_gone_markers: ClassVar[tuple[str, ...]] = ()
    # Whether TurnRequest.fresh_session_id is honoured.
    assigns_session_ids: ClassVar[bool] = False
    # A harness whose answer is its stdout (it has no board tools of its own to reply with):
    # the daemon posts that answer in the thread, unless the turn posted there itself.
    answers_on_stdout: ClassVar[bool] = False

    def __init__(self, flags: Sequence[str] = (), executable: str | None = None) -> None:
        self.flags = tuple(flags)
        self.executable = executable or self.name
        check_flags(self.flags, self.flag_spec, f"BOT_{self.name.upper()}_FLAGS")

    def argv(self, req: TurnRequest) -> list[str]:
        """The command line for one turn: start, or resume req.session_id."""
        raise NotImplementedError

    def env(self, req: TurnRequest) -> dict[str, str]:
        """Extra environment the CLI needs to run unattended (most need none)."""
        return {}

    def stdin(self, req: TurnRequest) -> str | None:
        """Text to write to the CLI's stdin before closing it; None: stdin is /dev/null."""
        return None

    def check_environment(self, environ: Mapping[str, str], euid: int) -> None:
        """Refuse (ValueError) an environment the CLI would refuse on every turn."""

    def check_program(self, environ: Mapping[str, str]) -> None:
        """Refuse (ValueError) a program that is not there, before the first turn: a daemon that
        started anyway would answer every wake with a post saying it could not start it.

        The program is looked up as the turn's ``exec`` will: a bare name on environ's PATH, an
        absolute path as it is. A relative path, or a PATH with a relative folder, is looked up
        from each turn's folder (the repo, a pool channel's, a worktree), so it is left alone.
        """
        program = self.executable
        var = f"BOT_{self.name.upper()}_BIN"
        fix = f"set {var} to the program's full path" if environ.get(var) else self.install_hint(var)
        if os.sep in program:
            if os.path.isabs(program) and shutil.which(program) is None:
                raise ValueError(f"cannot run {self.name}: {program} is not an executable file; {fix}")
            return
        folders = os.get_exec_path(dict(environ))
        path = os.pathsep.join(folders)
        if all(map(os.path.isabs, folders)) and shutil.which(program, path=path) is None:
            raise ValueError(f"cannot run {self.name}: no {program!r} on PATH; {fix} (PATH is {path})")

    def install_hint(self, var: str) -> str:
        """What to do when the program was not given by var and is not on PATH."""
        return f"install {self.name}, or set {var} to its full path"

    def scan(self, stdout: str, stderr: str) -> Scan:
        """Read the harness's own records out of its output (most print them on stdout)."""
        raise NotImplementedError

    def merged_flags(self, defaults: Sequence[str], req: TurnRequest) -> list[str]:
        """Defaults, then the adapter's configured flags, then the request's."""
        check_flags(req.flags, self.flag_spec, "TurnRequest.flags")
        return merge_flags(defaults, [self.flags, req.flags], self.flag_spec)

    def parse(
        self, stdout: str, stderr: str, exit_code: int | None, after: float | None = None
    ) -> TurnResult:
        """Classify a finished turn that ran for after seconds; never raises on odd output."""
        scan = self.scan(stdout, stderr)
        failed = exit_code != 0 or not scan.finished or scan.error is not None
        gone = None
        if failed:
            gone = find_marker(
                "\n".join([stderr, *non_json_lines(stdout), scan.error or ""]),
                self.session_gone_markers,
            )
        kind: ErrorKind | None = None
        error: str | None = None
        if gone:
            kind, error = "session_gone", gone
        elif exit_code != 0:
            # A line opening a record was cut off where the CLI was killed: machine noise to a reader.
            prose = [line for line in non_json_lines(stdout) if not line.startswith("{")]
            kind = "exit"
            error = scan.error or trim(stderr) or trim("\n".join(prose))
            if not (error or stdout.strip() or stderr.strip()):
                error = "it printed nothing"
        elif scan.error is not None:
            kind, error = "error_result", scan.error
        elif not scan.finished:
            kind = "unparsed"
            error = f"no {scan.expected} in {len(stdout)} characters of output"
            if TRUNCATION_NOTE in stdout:
                error += " (output was truncated by the launcher's memory cap)"
            tail = trim(stdout, max_lines=3, max_chars=400)
            if tail:
                error += f"; it ended with: {tail}"
        return TurnResult(
            ok=kind is None,
            session_id=scan.session_id,
            text=cap_text(scan.text),
            error_kind=kind,
            error=trim(error) if error else None,
            cost_usd=scan.cost_usd,
            input_tokens=scan.input_tokens,
            output_tokens=scan.output_tokens,
            premium_requests=scan.premium_requests,
            cache_read_tokens=scan.cache_read_tokens,
            cache_write_tokens=scan.cache_write_tokens,
            exit=Exit(exit_code, after),
        )
