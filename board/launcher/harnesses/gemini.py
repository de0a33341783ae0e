"""Gemini CLI (``gemini``), checked against 0.61.0.

Start::

    gemini --session-id UUID -p PROMPT -o json --approval-mode yolo [--model M] [flags]

Resume::

    gemini -r ID -p PROMPT -o json --approval-mode yolo [--model M] [flags]

with ``GEMINI_CLI_TRUST_WORKSPACE=true`` in the environment.

``-o json`` prints one indented JSON object on stdout at the end::

    {
      "session_id": "...",
      "response": "...",
      "stats": {"models": {"gemini-2.5-pro": {"api": {...},
                "tokens": {"prompt": 1, "candidates": 1, "total": 2, "cached": 0,
                           "thoughts": 0, "tool": 0}}}, "tools": {...}, "files": {...}}
    }

A failure is ``{"session_id": "...", "error": {"type": "...", "message": "...",
"code": ...}}`` on **stderr**: bare when the run could not start (no
credentials), after ``[ERROR] `` when it failed during the run, with a non-zero
exit: 41 for authentication, 42 when a resume fails, 55 for an untrusted
folder, 1 for bad arguments.

Pitfalls handled here:

- in a folder it has not been told to trust, gemini downgrades yolo to the
  default approval mode and (recent versions) exits 55 before doing anything;
  headless runs cannot answer the trust prompt, so the workspace is trusted
  through the environment variable (older versions ignore it; ``--skip-trust``
  is not used because older versions reject it);
- ``--yolo``/``-y`` and ``--approval-mode`` together are refused by gemini, so
  an override with ``-y`` replaces the default ``--approval-mode``;
- an ``error`` object is a failure even with exit 0 (older versions);
- a new session takes the id the launcher gives it (``--session-id``), so a
  turn that dies before printing anything still leaves a session to resume;
  ``--session-id`` is refused together with ``-r``, so it is only sent first;
- some versions report a new session id after a resume; the latest one wins;
- an unknown ``-r`` id prints "Invalid session identifier" (or "No previous
  sessions found" when the project has none) and exits 42.
"""

from __future__ import annotations

import re
from typing import ClassVar

from .base import Adapter, FlagSpec, Scan, TurnRequest, add, iter_json_objects, plain, safe_prompt

# How a failure during the run is written to stderr: "[ERROR] " and the object.
_ERROR_PREFIX = re.compile(r"^\[ERROR\] ", re.MULTILINE)


class GeminiAdapter(Adapter):
    """Gemini CLI in prompt mode with a JSON result."""

    name = "gemini"
    flag_spec: ClassVar[FlagSpec] = FlagSpec(
        aliases={
            "-p": "--prompt",
            "-o": "--output-format",
            "-r": "--resume",
            "-m": "--model",
            "-y": "--yolo",
            "-s": "--sandbox",
            "-d": "--debug",
            "-i": "--prompt-interactive",
        },
        displaces={"--yolo": frozenset({"--approval-mode"})},
        locked=frozenset(
            {
                "--prompt",
                "--output-format",
                "--resume",
                "--prompt-interactive",
                "--session-id",
                "--session-file",
            }
        ),
    )
    session_gone_markers: ClassVar[tuple[str, ...]] = (
        "Invalid session identifier",
        "No previous sessions found",
    )
    assigns_session_ids: ClassVar[bool] = True

    def argv(self, req: TurnRequest) -> list[str]:
        prompt = safe_prompt(req.prompt)
        defaults = ["--approval-mode", "yolo"]
        if req.model:
            defaults += ["--model", req.model]
        argv = [self.executable]
        if req.session_id:
            argv += ["-r", req.session_id]
        elif req.fresh_session_id:
            argv += ["--session-id", req.fresh_session_id]
        return [*argv, "-p", prompt, "-o", "json", *self.merged_flags(defaults, req)]

    def env(self, req: TurnRequest) -> dict[str, str]:
        return {"GEMINI_CLI_TRUST_WORKSPACE": "true"}

    def scan(self, stdout: str, stderr: str) -> Scan:
        scan = Scan(expected="JSON result object")
        errors = _ERROR_PREFIX.sub("", plain(stderr))
        for obj in [*iter_json_objects(stdout), *iter_json_objects(errors)]:
            if not ({"session_id", "response", "error", "stats"} & obj.keys()):
                continue
            session_id = obj.get("session_id")
            if isinstance(session_id, str) and session_id:
                scan.session_id = session_id
            response = obj.get("response")
            if isinstance(response, str):
                scan.text = response
                scan.finished = True
            error = obj.get("error")
            if error:
                scan.finished = True
                scan.error = f"gemini error: {_error_message(error)}"
            stats = obj.get("stats")
            models = stats.get("models") if isinstance(stats, dict) else None
            if isinstance(models, dict):
                tokens_in = tokens_out = cached = None
                for model in models.values():
                    tokens = model.get("tokens") if isinstance(model, dict) else None
                    if isinstance(tokens, dict):
                        tokens_in = add(tokens_in, tokens.get("prompt"))  # the cached ones included
                        cached = add(cached, tokens.get("cached"))
                        tokens_out = add(tokens_out, tokens.get("candidates"))
                        tokens_out = add(tokens_out, tokens.get("thoughts"))
                scan.input_tokens, scan.output_tokens = tokens_in, tokens_out
                scan.cache_read_tokens = cached
        return scan


def _error_message(error: object) -> str:
    """type: message (code) from gemini's error object."""
    if isinstance(error, dict):
        message = str(error.get("message") or "no message")
        kind = error.get("type")
        code = error.get("code")
        out = f"{kind}: {message}" if kind else message
        return out + (f" (code {code})" if code not in (None, "") else "")
    return str(error)
