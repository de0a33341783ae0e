"""The shapes a bot's turn prompt is made of: how it names a board call, the messages of the
batch and the threads they are in. The turn (:mod:`.prompt`) and a rotated session's handoff
(:mod:`.handoff`) both render them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

BODY_CAP = 2_000  # characters of a body shown; the rest is fetched by id
PREVIEW = 120


@dataclass(frozen=True)
class Calls:
    """How the prompt tells the bot to make a board call: over HTTP, or with the board's MCP tools."""

    url: str
    tools: bool = False

    def message(self, id: object) -> str:
        return f'read(action="message", id={id})' if self.tools else f"GET {self.url}/api/messages/{id}"

    def thread(self, id: object) -> str:
        return f'read(action="thread", id={id})' if self.tools else f"GET {self.url}/api/threads/{id}"

    def reply(self) -> str:
        if self.tools:
            return 'post(reply_to=<id>, body="...")'
        return f'POST {self.url}/api/messages {{"reply_to": <id>, "body": "..."}}'

    def claim(self) -> str:
        if self.tools:
            return 'claim(action="claim", id=<thread id>, note="what you will do")'
        return f'POST {self.url}/api/threads/<thread id>/claim {{"note": "what you will do"}}'

    def document(self) -> str:
        return (
            'knowledge(action="read", path=<path>)' if self.tools else f"GET {self.url}/api/knowledge/<path>"
        )

    def me(self) -> str:
        return 'catch_up(action="me")' if self.tools else f"GET {self.url}/api/me"


def one_line(text: str, limit: int = PREVIEW) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


@dataclass
class Item:
    """One message of the batch, as the turn shows it."""

    id: int
    thread_id: int
    author: str
    author_kind: str
    where: str
    created_at: str
    reply_to: int | None
    tags: list[str]
    body: str
    mark: str  # "for you (mention)", "watched", "your own post"
    rank: int  # 0 for you, 1 watched, 2 your own

    def render(self, calls: Calls, cap: int = BODY_CAP) -> str:
        who = "the board" if self.author_kind == "system" else f"{self.author} ({self.author_kind})"
        extra = f", reply to #{self.reply_to}" if self.reply_to not in (None, self.thread_id) else ""
        if self.tags:
            extra += f", tags {' '.join(self.tags)}"
        head = f"- #{self.id} by {who} at {self.created_at}{extra}: {self.mark}\n"
        shown = self.body[:cap]
        quoted = "".join(f"> {line}".rstrip() + "\n" for line in shown.split("\n"))
        rest = len(self.body) - len(shown)
        more = f"  (… {rest} more characters: {calls.message(self.id)})\n" if rest else ""
        return head + quoted + more


@dataclass
class Thread:
    id: int
    where: str
    claim: dict[str, Any]
    root: Item | None  # for its preview when the root is not in the batch
    pack: str | None = None
    items: list[tuple[Item, str]] = field(default_factory=list)
    documents: list[dict[str, Any]] = field(default_factory=list)  # those its knowledge pack names

    def header(self, you: str, in_batch: bool) -> str:
        claim = self.claim
        state = claim.get("state", "open")
        if state == "claimed" and claim.get("holder") == you:
            line = f"claimed by you until {claim.get('lease_until')}"
        elif state == "claimed":
            line = f"claimed by {claim.get('holder')} until {claim.get('lease_until')}: leave it to them"
        elif state == "done":
            line = f"done ({claim.get('holder')})"
        else:
            line = "open"
        text = f"\n## Thread {self.id} in {self.where}: {line}\n"
        if self.root is not None and not in_batch:
            text += f"Started by {self.root.author}: {one_line(self.root.body)}\n"
        return text
