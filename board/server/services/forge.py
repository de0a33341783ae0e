"""What GitHub and Forgejo (and Gitea) send to a webhook, read once, before anything is written.

The signature is an HMAC-SHA256 of the raw body under the source's secret: GitHub sends it
as ``X-Hub-Signature-256: sha256=<hex>``, Forgejo as bare hex in ``X-Forgejo-Signature``
(and, for Gitea's clients, the same in ``X-Gitea-Signature``); a Forgejo source also takes
the GitHub form, which Forgejo and Gitea send beside their own. The signature covers no
time and forges send no timestamp header, so a delivery's freshness is read from the
``updated_at`` of the issue or comment it carries (services/intake.py refuses a stale one).
"""

from __future__ import annotations

import hashlib
import hmac
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from ..errors import InvalidArgument, Unauthenticated

FORGES = ("github", "forgejo")
#: The headers each forge names its event and delivery id in, the forge's own first.
EVENT_HEADERS = {
    "github": ("X-GitHub-Event",),
    "forgejo": ("X-Forgejo-Event", "X-Gitea-Event", "X-GitHub-Event"),
}
DELIVERY_HEADERS = {
    "github": ("X-GitHub-Delivery",),
    "forgejo": ("X-Forgejo-Delivery", "X-Gitea-Delivery", "X-GitHub-Delivery"),
}
CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
#: The largest issue number taken (both stores' integers hold it; no forge comes near).
MAX_NUMBER = 2**31 - 1
#: One answer for a bad signature, a missing one and an unknown source: it says nothing of which exists.
NOT_JSON = "The delivery's body is not a JSON object; set the webhook's content type to application/json."
REFUSAL = "The delivery's signature does not match this source's secret (or there is no such source)."


def sign(secret: str, body: bytes) -> str:
    """The hex HMAC-SHA256 of ``body`` under ``secret``, as every forge computes it."""
    return hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def _sent_signatures(forge: str, headers: Mapping[str, str]) -> list[str]:
    """The hex signatures the request carries, in the forms its forge sends."""
    sent = []
    github = headers.get("X-Hub-Signature-256", "")
    if github.startswith("sha256="):
        sent.append(github.removeprefix("sha256="))
    if forge == "forgejo":
        own = headers.get("X-Forgejo-Signature")
        if own is not None:  # Forgejo's own header, when sent, is the one checked
            return [own]
        sent += [headers[name] for name in ("X-Gitea-Signature",) if name in headers]
    return sent


def verify(forge: str, secret: str, headers: Mapping[str, str], body: bytes) -> None:
    """UNAUTHENTICATED unless the request is signed with ``secret`` (compared in constant time)."""
    expected = sign(secret, body)
    sent = _sent_signatures(forge, headers)
    if not secret or not sent or not all(hmac.compare_digest(expected, s.strip().lower()) for s in sent):
        raise Unauthenticated(REFUSAL)


def _header(headers: Mapping[str, str], names: tuple[str, ...], what: str) -> str:
    for name in names:
        value = text(headers.get(name), 129).strip()
        if value:
            if len(value) > 128:
                raise InvalidArgument(f"The {what} header is longer than 128 characters.")
            return value
    raise InvalidArgument(f"The delivery has no {what} header ({' or '.join(names)}).")


@dataclass(frozen=True)
class Delivery:
    """A signed delivery, read: its event, id and what it says about which issue."""

    event: str
    delivery: str
    action: str
    payload: dict[str, Any]

    @property
    def repository(self) -> str:
        repo = self.payload.get("repository")
        return text(repo.get("full_name"), 201) if isinstance(repo, dict) else ""

    @property
    def issue(self) -> dict[str, Any]:
        issue = self.payload.get("issue")
        return issue if isinstance(issue, dict) else {}

    @property
    def comment(self) -> dict[str, Any]:
        comment = self.payload.get("comment")
        return comment if isinstance(comment, dict) else {}

    @property
    def number(self) -> int | None:
        number = self.issue.get("number")
        if isinstance(number, int) and not isinstance(number, bool) and 0 < number <= MAX_NUMBER:
            return number
        return None

    @property
    def labels(self) -> list[str]:
        """The issue's labels, and the one just added (GitHub's ``labeled`` names it apart)."""
        labels = self.issue.get("labels")
        names = (
            [text(label.get("name"), 64) for label in labels if isinstance(label, dict)]
            if isinstance(labels, list)
            else []
        )
        if self.added_label:
            names.append(self.added_label)
        return sorted({name for name in names if name})

    @property
    def added_label(self) -> str | None:
        added = self.payload.get("label")
        return (text(added.get("name"), 64) or None) if isinstance(added, dict) else None

    def updated_at(self) -> datetime | None:
        """When the thing the delivery is about last changed: the comment, else the issue."""
        thing = self.comment if self.event == "issue_comment" else self.issue
        value = thing.get("updated_at") or thing.get("created_at")
        if not isinstance(value, str):
            return None
        try:
            moment = datetime.fromisoformat(value)
        except ValueError:
            return None
        return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def text(value: Any, limit: int) -> str:
    """A payload's string as the board can store it, cut to ``limit`` characters; anything else
    is empty. Control characters but tab and newlines go (PostgreSQL stores no NUL), and so do
    lone surrogates (JSON may escape one; no UTF-8 holds it)."""
    if not isinstance(value, str):
        return ""
    clean = CONTROL.sub("", value).encode("utf-8", "replace").decode("utf-8")
    return clean if len(clean) <= limit else clean[: limit - 1] + "…"


def login(thing: dict[str, Any]) -> str:
    user = thing.get("user")
    name = user.get("login") if isinstance(user, dict) else None
    return text(name, 64) or "someone"


def read(forge: str, headers: Mapping[str, str], payload: Any) -> Delivery:
    """The delivery's event, id and payload; INVALID_ARGUMENT when a header or the JSON object is missing."""
    event = _header(headers, EVENT_HEADERS[forge], "event")
    delivery = _header(headers, DELIVERY_HEADERS[forge], "delivery id")
    if not isinstance(payload, dict):
        raise InvalidArgument(
            "The delivery's body is not a JSON object; set the content type to application/json."
        )
    return Delivery(event, delivery, text(payload.get("action"), 64), payload)
