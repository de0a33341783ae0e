"""Any command, from an argv template.

The template is a list of words; ``{prompt}``, ``{session}`` and ``{model}``
are replaced inside any word. When there is no session (a first run) or no
model, every word holding that placeholder is dropped, and so is an option
right before a bare placeholder word, so one template serves start and
resume::

    ["mybot", "--json", "--resume", "{session}", "{prompt}"]
    start:  mybot --json PROMPT
    resume: mybot --json --resume ID PROMPT

Override flags go where the word ``{flags}`` stands, or right after the
program when the template has no such word.

The answer is the command's stdout: after a successful turn the daemon posts
it as the bot's reply in the thread that woke it, unless the command posted in
that thread itself during the turn (then nothing more is posted). With ``session_field`` set (a JSON
field name, dotted for nesting: ``"result.session_id"``), the session id is
read from the last JSON object in stdout that has it; without it the command
has no sessions and every turn starts fresh. Success is exit 0: a plain
command has no error flag of its own to look for.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from .base import (
    Adapter,
    Scan,
    TurnRequest,
    check_flags,
    iter_json_objects,
    non_json_lines,
    safe_prompt,
)

PLACEHOLDERS = ("{prompt}", "{session}", "{model}")
_PLACEHOLDER = re.compile("|".join(re.escape(p) for p in PLACEHOLDERS))


class CommandAdapter(Adapter):
    """A command line built from a template."""

    name = "command"
    answers_on_stdout = True

    def __init__(
        self,
        template: Sequence[str],
        flags: Sequence[str] = (),
        session_field: str | None = None,
        executable: str | None = None,
    ) -> None:
        if not template:
            raise ValueError("the command harness needs a template (BOT_COMMAND_TEMPLATE)")
        if not any("{prompt}" in word for word in template):
            raise ValueError("the command template must contain {prompt}")
        if "{" in template[0]:
            raise ValueError("the command template must start with the program, not a placeholder")
        self.template = tuple(template)
        self.session_field = session_field
        super().__init__(flags, executable or template[0])

    def install_hint(self, var: str) -> str:
        return (
            "start BOT_COMMAND_TEMPLATE (or the profile's command template) with a program on PATH "
            f"or its full path, or set {var}"
        )

    def argv(self, req: TurnRequest) -> list[str]:
        values = {
            "{prompt}": safe_prompt(req.prompt),
            "{session}": req.session_id,
            "{model}": req.model,
        }
        check_flags(req.flags, self.flag_spec, "TurnRequest.flags")
        flags = [*self.flags, *req.flags]
        words = list(self.template[1:])
        if "{flags}" not in words:
            words.insert(0, "{flags}")
        out: list[str] = [self.executable]
        start = len(out)
        for word in words:
            if word == "{flags}":
                out += flags
                start = len(out)
                continue
            missing = [p for p in PLACEHOLDERS if p in word and values[p] is None]
            if missing:
                # Drop the word, and the option that was to carry it.
                if word in missing and len(out) > start and out[-1].startswith("-") and "=" not in out[-1]:
                    out.pop()
                continue
            # One pass, so a prompt that mentions "{session}" stays as written.
            out.append(_PLACEHOLDER.sub(lambda m: values[m.group(0)] or "", word))
        return out

    def scan(self, stdout: str, stderr: str) -> Scan:
        scan = Scan(finished=True)
        if self.session_field:
            for obj in iter_json_objects(stdout):
                value = _lookup(obj, self.session_field)
                if isinstance(value, str | int) and not isinstance(value, bool) and str(value):
                    scan.session_id = str(value)
            # The JSON records carry the session; the answer is the prose around them.
            scan.text = "\n".join(non_json_lines(stdout))
        else:
            scan.text = stdout
        return scan


def _lookup(obj: dict[str, Any], path: str) -> Any:
    """obj["a"]["b"] for path "a.b", or None."""
    current: Any = obj
    for key in path.split("."):
        if not isinstance(current, dict):
            return None
        current = current.get(key)
    return current
