"""OpenCode (``opencode run``), checked against 1.18.33.

Start::

    opencode run --format json --auto [--model PROVIDER/MODEL] [flags]   (prompt on stdin)

Resume::

    opencode run --format json --auto [--model ...] [flags] --session ID   (prompt on stdin)

``--format json`` prints one event per line, each carrying ``sessionID``:
``step_start``, ``text``, ``reasoning``, ``tool_use``, ``step_finish`` and
``error``::

    {"type": "step_start", "sessionID": "ses_...", "part": {...}}
    {"type": "text", "sessionID": "ses_...", "part": {"type": "text", "text": "..."}}
    {"type": "step_finish", "sessionID": "ses_...",
     "part": {"type": "step-finish", "reason": "stop", "cost": 0.001,
              "tokens": {"input": 1, "output": 1, "reasoning": 0,
                         "cache": {"read": 0, "write": 0}}}}
    {"type": "error", "sessionID": "ses_...",
     "error": {"name": "UnknownError", "data": {"message": "..."}}}

Pitfalls handled here:

- the prompt goes on stdin, which ``run`` reads to EOF when it is not a
  terminal, and which the launcher closes right after it: opencode's option
  parser turns any message word that looks like a number (``42``, ``3.50``) into
  a number and ``run`` then dies on it ("G.includes is not a function"), and the
  board's prompts name message ids;
- there is no end-of-run event: the turn is over at a ``step_finish`` whose
  reason is not ``tool-calls``;
- without ``--auto`` every permission request is auto-rejected and the run
  still ends normally; a rejection shows only as a stderr line
  ``! permission requested: PERM (PATTERNS); auto-rejecting``, which counts as
  a failure;
- an ``error`` event is a failure (this version then exits 1; older ones exit 0);
- errors on stderr are coloured with terminal escapes even without a terminal;
- cost is the sum of ``part.cost`` over ``step_finish`` events;
- an unknown ``--session`` prints "Session not found" and exits 1;
- without a network it retries the model provider forever and prints nothing,
  which the launcher's no-output watchdog ends.
"""

from __future__ import annotations

import re
from typing import ClassVar

from .base import (
    Adapter,
    FlagSpec,
    Scan,
    TurnRequest,
    add,
    as_float,
    iter_json_objects,
    plain,
    safe_prompt,
)

# The only trace of a permission that run refused on its own.
_REJECTED = re.compile(r"^! permission requested: (.*); auto-rejecting$", re.MULTILINE)


class OpencodeAdapter(Adapter):
    """OpenCode's run command with JSON events."""

    name = "opencode"
    flag_spec: ClassVar[FlagSpec] = FlagSpec(
        aliases={
            "-m": "--model",
            "-s": "--session",
            "-c": "--continue",
            "-f": "--file",
            "--yolo": "--dangerously-skip-permissions",
        },
        locked=frozenset({"--format", "--session", "--continue", "--fork", "--command"}),
    )
    session_gone_markers: ClassVar[tuple[str, ...]] = ("Session not found",)

    def argv(self, req: TurnRequest) -> list[str]:
        defaults = ["--format", "json", "--auto"]
        if req.model:
            defaults += ["--model", req.model]
        argv = [self.executable, "run", *self.merged_flags(defaults, req)]
        if req.session_id:
            argv += ["--session", req.session_id]
        return argv

    def stdin(self, req: TurnRequest) -> str:
        safe_prompt(req.prompt)  # the same size and content checks as an argv prompt
        return req.prompt

    def scan(self, stdout: str, stderr: str) -> Scan:
        scan = Scan(expected="final step_finish event")
        last_reason: str | None = None
        for obj in iter_json_objects(stdout):
            session_id = obj.get("sessionID")
            if isinstance(session_id, str) and session_id:
                scan.session_id = session_id
            kind = obj.get("type")
            part = obj.get("part")
            if not isinstance(part, dict):
                part = {}
            if kind == "text":
                text = part.get("text")
                if isinstance(text, str) and text.strip():
                    scan.text = text
            elif kind == "step_finish":
                reason = part.get("reason")
                last_reason = reason if isinstance(reason, str) else None
                cost = as_float(part.get("cost"))
                if cost is not None:
                    scan.cost_usd = (scan.cost_usd or 0.0) + cost
                tokens = part.get("tokens")
                if isinstance(tokens, dict):
                    scan.input_tokens = add(scan.input_tokens, tokens.get("input"))
                    cache = tokens.get("cache")
                    if isinstance(cache, dict):
                        scan.input_tokens = add(scan.input_tokens, cache.get("read"))
                        scan.input_tokens = add(scan.input_tokens, cache.get("write"))
                        scan.cache_read_tokens = add(scan.cache_read_tokens, cache.get("read"))
                        scan.cache_write_tokens = add(scan.cache_write_tokens, cache.get("write"))
                    scan.output_tokens = add(scan.output_tokens, tokens.get("output"))
                    scan.output_tokens = add(scan.output_tokens, tokens.get("reasoning"))
            elif kind == "error":
                scan.error = f"opencode error: {_error_message(obj.get('error'))}"
        scan.finished = last_reason is not None and last_reason != "tool-calls"
        rejected = [m.group(1) for m in _REJECTED.finditer(plain(stderr))]
        if rejected and scan.error is None:
            scan.error = (
                f"opencode auto-rejected permission for {'; '.join(rejected)}; "
                "it needs --auto to work unattended"
            )
        return scan


def _error_message(error: object) -> str:
    """The message inside an opencode error object (name, data.message)."""
    if isinstance(error, dict):
        data = error.get("data")
        if isinstance(data, dict) and data.get("message"):
            return str(data["message"])
        if error.get("message"):
            return str(error["message"])
        if error.get("name"):
            return str(error["name"])
    return str(error) if error else "no message"
