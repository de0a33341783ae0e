"""OpenCode (``opencode run``).

Start::

    opencode run --format json --auto [--model PROVIDER/MODEL] [flags] -- WORDS...

Resume::

    opencode run --format json --auto [--model ...] [flags] --session ID -- WORDS...

``--format json`` prints one event per line, each carrying ``sessionID``::

    {"type": "step_start", "sessionID": "ses_...", "part": {...}}
    {"type": "text", "sessionID": "ses_...", "part": {"type": "text", "text": "..."}}
    {"type": "step_finish", "sessionID": "ses_...",
     "part": {"type": "step-finish", "reason": "stop", "cost": 0.001,
              "tokens": {"input": 1, "output": 1, "reasoning": 0,
                         "cache": {"read": 0, "write": 0}}}}
    {"type": "done", "sessionID": "ses_...", "reason": "idle", "rejected": []}

and ``{"type": "error", "error": {"name": "...", "data": {"message": "..."}}}``.

Pitfalls handled here:

- without ``--auto`` every permission request is auto-rejected and the run
  still ends normally; rejections show in ``done.rejected`` and count as a
  failure;
- ``run`` joins its message words with spaces but wraps any word containing a
  space in quotes (escaping the quotes inside), so the prompt is passed as
  space-separated words after ``--``: it arrives verbatim, and a word starting
  with ``-`` is not taken for an option;
- ``run`` reads stdin to EOF when it is not a terminal, so stdin must be closed;
- an ``error`` event is a failure even with exit 0 (older versions exit 0);
- cost is the sum of ``part.cost`` over ``step_finish`` events;
- an unknown ``--session`` prints "Session not found" and exits 1.
"""

from __future__ import annotations

from typing import ClassVar

from .base import (
    Adapter,
    FlagSpec,
    Scan,
    TurnRequest,
    add,
    as_float,
    iter_json_objects,
    safe_prompt,
)


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
        safe_prompt(req.prompt)  # size and content checks; "--" below keeps a dash harmless
        defaults = ["--format", "json", "--auto"]
        if req.model:
            defaults += ["--model", req.model]
        argv = [self.executable, "run", *self.merged_flags(defaults, req)]
        if req.session_id:
            argv += ["--session", req.session_id]
        return [*argv, "--", *req.prompt.split(" ")]

    def scan(self, stdout: str) -> Scan:
        scan = Scan(expected="done or final step_finish event")
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
                    scan.output_tokens = add(scan.output_tokens, tokens.get("output"))
                    scan.output_tokens = add(scan.output_tokens, tokens.get("reasoning"))
            elif kind == "error":
                scan.error = f"opencode error: {_error_message(obj.get('error'))}"
            elif kind == "done":
                scan.finished = True
                rejected = obj.get("rejected")
                if isinstance(rejected, list) and rejected and scan.error is None:
                    scan.error = (
                        "opencode auto-rejected permission for "
                        f"{', '.join(sorted({str(r) for r in rejected}))}; "
                        "it needs --auto to work unattended"
                    )
        if not scan.finished and last_reason is not None and last_reason != "tool-calls":
            # Versions without the "done" event end on a final step_finish.
            scan.finished = True
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
