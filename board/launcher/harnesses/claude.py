"""Claude Code (``claude``).

Start::

    claude --output-format json --permission-mode bypassPermissions
           [--model M] [--session-id UUID] [flags] -p PROMPT

Resume::

    claude --output-format json --permission-mode bypassPermissions
           [--model M] [flags] -p --resume ID PROMPT

``--output-format json`` prints one result object when the turn ends::

    {"type": "result", "subtype": "success", "is_error": false, "result": "...",
     "session_id": "...", "total_cost_usd": 0.01, "usage": {...},
     "permission_denials": [], ...}

Pitfalls handled here:

- the permission mode is not kept with the session, so bypassPermissions is
  passed on every run, resume included;
- ``--session-id`` names a new session and is refused together with
  ``--resume``, so it is only sent on a first run;
- ``is_error: true`` is a failure whatever ``subtype`` says: 2.1.332 reports
  "Not logged in" and API errors as ``"subtype": "success"``, ``is_error: true``,
  exit 1; ``subtype`` can also be ``error_during_execution`` or
  ``error_max_turns`` with ``is_error`` false, which is a failure too;
- as root, ``bypassPermissions`` (and ``--dangerously-skip-permissions``) is
  refused unless ``IS_SANDBOX=1`` says the machine is a disposable sandbox. The
  launcher does not set that for the user: it refuses to start instead, saying
  why (`check_environment`);
- a tool call refused for lack of permission does not fail the run; it only
  shows in ``permission_denials``, which is treated as a failure because the
  bot could not do what it was asked;
- a resume can come back under a different ``session_id`` (older versions fork
  on resume), so the id in the result always wins;
- a resumed session that is gone prints "No conversation found with session ID"
  on stderr and exits 1.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from .base import (
    Adapter,
    FlagSpec,
    Scan,
    TurnRequest,
    add,
    as_float,
    iter_json_objects,
    merge_flags,
    option_values,
    safe_prompt,
)


class ClaudeAdapter(Adapter):
    """Claude Code in print mode with a JSON result."""

    name = "claude"
    flag_spec: ClassVar[FlagSpec] = FlagSpec(
        aliases={
            "-p": "--print",
            "-r": "--resume",
            "-c": "--continue",
            "-d": "--debug",
            "--allowed-tools": "--allowedTools",
            "--disallowed-tools": "--disallowedTools",
        },
        locked=frozenset({"--print", "--output-format", "--resume", "--session-id", "--continue"}),
    )
    session_gone_markers: ClassVar[tuple[str, ...]] = ("No conversation found with session ID",)
    assigns_session_ids: ClassVar[bool] = True

    def check_environment(self, environ: Mapping[str, str], euid: int) -> None:
        if euid != 0 or environ.get("IS_SANDBOX") == "1":
            return
        flags = merge_flags(self._defaults(None), [self.flags], self.flag_spec)
        modes = option_values(flags, self.flag_spec, "--permission-mode")
        bypass = modes[-1:] == ["bypassPermissions"] or bool(
            option_values(flags, self.flag_spec, "--dangerously-skip-permissions")
        )
        if bypass:
            raise ValueError(
                "claude refuses --permission-mode bypassPermissions as root, and a bot cannot work "
                "unattended without it: run the bot as an unprivileged user, or set IS_SANDBOX=1 "
                "if this machine is a disposable sandbox"
            )

    def _defaults(self, model: str | None) -> list[str]:
        defaults = ["--output-format", "json", "--permission-mode", "bypassPermissions"]
        return [*defaults, "--model", model] if model else defaults

    def argv(self, req: TurnRequest) -> list[str]:
        prompt = safe_prompt(req.prompt)
        argv = [self.executable, *self.merged_flags(self._defaults(req.model), req)]
        if req.session_id:
            return [*argv, "-p", "--resume", req.session_id, prompt]
        if req.fresh_session_id:
            argv += ["--session-id", req.fresh_session_id]
        return [*argv, "-p", prompt]

    def scan(self, stdout: str, stderr: str) -> Scan:
        scan = Scan(expected="result object")
        for obj in iter_json_objects(stdout):
            session_id = obj.get("session_id")
            if isinstance(session_id, str) and session_id:
                scan.session_id = session_id
            if obj.get("type") != "result":
                continue
            scan.finished = True
            result = obj.get("result")
            scan.text = result if isinstance(result, str) else ""
            scan.cost_usd = as_float(obj.get("total_cost_usd"))
            usage = obj.get("usage")
            if isinstance(usage, dict):
                tokens_in = None
                for key in (
                    "input_tokens",
                    "cache_creation_input_tokens",
                    "cache_read_input_tokens",
                ):
                    tokens_in = add(tokens_in, usage.get(key))
                scan.input_tokens = tokens_in
                scan.cache_read_tokens = add(None, usage.get("cache_read_input_tokens"))
                scan.cache_write_tokens = add(None, usage.get("cache_creation_input_tokens"))
                scan.output_tokens = add(None, usage.get("output_tokens"))
            scan.error = _result_error(obj)
        return scan


def _result_error(obj: dict[str, object]) -> str | None:
    """The failure a result object reports, if any."""
    subtype = obj.get("subtype")
    failed_subtype = subtype is not None and subtype != "success"
    if obj.get("is_error") is True or failed_subtype:
        errors = obj.get("errors")
        details = [str(e) for e in errors] if isinstance(errors, list) else []
        result = obj.get("result")
        if isinstance(result, str) and result.strip():
            details.insert(0, result.strip())
        reason = f"claude reported {subtype}" if failed_subtype else "claude reported an error"
        return reason + (": " + "; ".join(details) if details else "")
    denials = obj.get("permission_denials")
    if isinstance(denials, list) and denials:
        tools = sorted({str(d.get("tool_name", "?")) for d in denials if isinstance(d, dict)} or {"?"})
        return (
            f"claude was refused permission for {', '.join(tools)}; "
            "it needs --permission-mode bypassPermissions to work unattended"
        )
    return None
