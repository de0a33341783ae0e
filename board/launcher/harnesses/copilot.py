"""GitHub Copilot CLI (``copilot``), checked against 1.0.102.

Start::

    copilot -p PROMPT -s --output-format json --allow-all-tools --no-ask-user
            [--model M] [flags] --session-id=UUID

Resume ends with ``--resume=ID`` instead (the ``=`` form, since the option's
value is optional); copilot refuses ``--session-id`` together with ``--resume``.

``--output-format json`` prints JSONL events and ends with a result line::

    {"type": "assistant.message", "data": {"messageId": "...", "content": "..."}, ...}
    {"type": "result", "sessionId": "...", "exitCode": 0,
     "usage": {"premiumRequests": 1, "totalApiDurationMs": 1, "sessionDurationMs": 1,
               "codeChanges": {...}}}

Pitfalls handled here:

- a non-zero ``result.exitCode`` is a failure even when the process exits 0;
- the session id is ``sessionId`` on the result line (or inside an event's
  ``data``); the latest one wins;
- copilot bills premium requests, not dollars: they go to
  ``TurnResult.premium_requests`` and ``cost_usd`` stays None;
- ``--no-ask-user`` keeps it from stopping to ask a question nobody will answer;
- a new session takes the id the launcher gives it (``--session-id``), so a
  turn that dies before its result line still leaves a session to resume;
- without credentials it prints "Error: No authentication information found."
  on stderr and exits 1, before anything on stdout;
- an unknown ``--resume`` id prints "No session, task, or name matched" and
  exits 1.
"""

from __future__ import annotations

from typing import ClassVar

from .base import (
    Adapter,
    FlagSpec,
    Scan,
    TurnRequest,
    as_float,
    as_int,
    iter_json_objects,
    safe_prompt,
)


class CopilotAdapter(Adapter):
    """Copilot CLI in prompt mode with JSONL output."""

    name = "copilot"
    flag_spec: ClassVar[FlagSpec] = FlagSpec(
        aliases={"-p": "--prompt", "-s": "--silent", "--yolo": "--allow-all"},
        locked=frozenset({"--prompt", "--output-format", "--resume", "--continue", "--session-id"}),
    )
    session_gone_markers: ClassVar[tuple[str, ...]] = ("No session, task, or name matched",)
    assigns_session_ids: ClassVar[bool] = True

    def argv(self, req: TurnRequest) -> list[str]:
        prompt = safe_prompt(req.prompt)
        defaults = [
            "-s",
            "--output-format",
            "json",
            "--allow-all-tools",
            "--no-ask-user",
        ]
        if req.model:
            defaults += ["--model", req.model]
        argv = [self.executable, "-p", prompt, *self.merged_flags(defaults, req)]
        if req.session_id:
            argv.append(f"--resume={req.session_id}")
        elif req.fresh_session_id:
            argv.append(f"--session-id={req.fresh_session_id}")
        return argv

    def scan(self, stdout: str, stderr: str) -> Scan:
        scan = Scan(expected="result line")
        last_error: str | None = None
        for obj in iter_json_objects(stdout):
            data = obj.get("data")
            data = data if isinstance(data, dict) else {}
            for holder in (obj, data):
                session_id = holder.get("sessionId")
                if isinstance(session_id, str) and session_id:
                    scan.session_id = session_id
            kind = obj.get("type")
            if kind == "assistant.message":
                content = data.get("content")
                if isinstance(content, str) and content.strip():
                    scan.text = content
            elif kind in ("session.error", "error"):
                message = data.get("message") or obj.get("message")
                last_error = str(message) if message else "unknown error"
            elif kind == "result":
                scan.finished = True
                usage = obj.get("usage")
                if isinstance(usage, dict):
                    scan.premium_requests = as_float(usage.get("premiumRequests"))
                code = as_int(obj.get("exitCode"))
                if code:
                    scan.error = f"copilot reported exitCode {code}" + (
                        f": {last_error}" if last_error else ""
                    )
        if not scan.finished and last_error is not None:
            scan.error = f"copilot error: {last_error}"
        return scan
