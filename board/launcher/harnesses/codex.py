"""OpenAI Codex CLI (``codex exec``).

Start::

    codex exec --json --skip-git-repo-check --sandbox workspace-write
               -c sandbox_workspace_write.network_access=true [--model M] [flags] PROMPT

Resume::

    codex exec <the same flags> resume ID PROMPT

``--json`` prints one event per line::

    {"type": "thread.started", "thread_id": "..."}
    {"type": "turn.started"}
    {"type": "item.completed", "item": {"id": "...", "type": "agent_message", "text": "..."}}
    {"type": "turn.completed", "usage": {"input_tokens": 1, "cached_input_tokens": 0,
                                         "output_tokens": 1}}

or ``{"type": "turn.failed", "error": {"message": "..."}}`` and
``{"type": "error", "message": "..."}`` when the turn fails.

Pitfalls handled here:

- every flag goes before ``resume``: the subcommand rejects ``-s``/``--sandbox``,
  ``-C``/``--cd`` and other exec-only options after it;
- exec never asks for approval, but its default sandbox is read-only with no
  network, so a bot could neither edit its repo nor reach the board with curl:
  workspace-write with network access is the default here (override it with
  ``-s``, ``-c sandbox_mode=...`` or ``--dangerously-bypass-approvals-and-sandbox``);
- ``turn.failed`` is a failure whatever the exit code;
- the session id is the ``thread_id`` of ``thread.started``; the latest one wins;
- a resumed thread that is gone ends with "no rollout found for thread id"
  (older versions: "No saved session found with ID") and exit 1;
- codex reports tokens, not cost.
"""

from __future__ import annotations

from typing import ClassVar

from .base import Adapter, FlagSpec, Scan, TurnRequest, add, iter_json_objects, safe_prompt

_NETWORK = "sandbox_workspace_write.network_access"


class CodexAdapter(Adapter):
    """Codex in exec mode with JSONL events."""

    name = "codex"
    flag_spec: ClassVar[FlagSpec] = FlagSpec(
        aliases={
            "-s": "--sandbox",
            "-C": "--cd",
            "-m": "--model",
            "-c": "--config",
            "-i": "--image",
            "-p": "--profile",
            "-o": "--output-last-message",
            "--yolo": "--dangerously-bypass-approvals-and-sandbox",
            "--experimental-json": "--json",
        },
        keyed=frozenset({"--config"}),
        displaces={
            "--config:sandbox_mode": frozenset({"--sandbox"}),
            "--dangerously-bypass-approvals-and-sandbox": frozenset({"--sandbox", f"--config:{_NETWORK}"}),
        },
        locked=frozenset({"--json"}),
    )
    session_gone_markers: ClassVar[tuple[str, ...]] = (
        "no rollout found for thread id",
        "No saved session found with ID",
    )

    def argv(self, req: TurnRequest) -> list[str]:
        prompt = safe_prompt(req.prompt)
        defaults = [
            "--json",
            "--skip-git-repo-check",
            "--sandbox",
            "workspace-write",
            "-c",
            f"{_NETWORK}=true",
        ]
        if req.model:
            defaults += ["--model", req.model]
        argv = [self.executable, "exec", *self.merged_flags(defaults, req)]
        if req.session_id:
            argv += ["resume", req.session_id]
        return [*argv, prompt]

    def scan(self, stdout: str, stderr: str) -> Scan:
        scan = Scan(expected="turn.completed or turn.failed event")
        stream_error: str | None = None
        for obj in iter_json_objects(stdout):
            kind = obj.get("type")
            if kind == "thread.started":
                thread_id = obj.get("thread_id")
                if isinstance(thread_id, str) and thread_id:
                    scan.session_id = thread_id
            elif kind == "item.completed":
                item = obj.get("item")
                if isinstance(item, dict) and item.get("type") == "agent_message":
                    text = item.get("text")
                    if isinstance(text, str):
                        scan.text = text
            elif kind == "turn.completed":
                scan.finished = True
                usage = obj.get("usage")
                if isinstance(usage, dict):
                    # input_tokens counts the cached ones too.
                    scan.input_tokens = add(scan.input_tokens, usage.get("input_tokens"))
                    scan.cache_read_tokens = add(scan.cache_read_tokens, usage.get("cached_input_tokens"))
                    scan.output_tokens = add(scan.output_tokens, usage.get("output_tokens"))
            elif kind == "turn.failed":
                scan.finished = True
                error = obj.get("error")
                message = error.get("message") if isinstance(error, dict) else None
                scan.error = f"codex turn failed: {message or 'no message'}"
            elif kind == "error":
                message = obj.get("message")
                stream_error = str(message) if message else "unknown error"
        if stream_error is not None and scan.error is None and not scan.finished:
            # A stream error with no turn.completed after it ended the turn.
            scan.error = f"codex error: {stream_error}"
        return scan
