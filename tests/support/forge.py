"""A small fake forge: GitHub's or Forgejo's side of an issue webhook, over loopback.

It builds the payloads and headers its forge documents for the events the board takes
(GitHub: docs.github.com "Webhook events and payloads" and "Validating webhook
deliveries", as of API version 2022-11-28; Forgejo: its "Webhooks" documentation as of
v9, whose headers carry the Gitea and GitHub names beside its own), signs them as the
forge does, and POSTs them to a real board. It also serves the forge's issue-comment
API (GitHub ``POST /repos/{owner}/{repo}/issues/{n}/comments`` with ``Authorization:
Bearer <token>``; Forgejo ``POST /api/v1/repos/{owner}/{repo}/issues/{n}/comments`` with
``Authorization: token <token>``) and records what is posted there, for replies out.
"""

from __future__ import annotations

import hashlib
import hmac
import itertools
import json
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import aiohttp
from aiohttp import web
from aiohttp.test_utils import TestServer


@dataclass
class Comment:
    """A comment the board posted to the fake forge's API."""

    repository: str
    issue: int
    body: str
    authorization: str
    accept: str = ""
    id: int = 0


@dataclass
class Sent:
    """What the board answered a delivery."""

    status: int
    answer: dict[str, Any]
    delivery: str


@dataclass
class FakeForge:
    """One forge (``github`` or ``forgejo``) with one repository and a webhook to a board's source."""

    kind: str
    board_url: str
    source: str
    secret: str
    repository: str = "acme/app"
    token: str = "forge-api-token-1234"
    #: Forgejo writes times in its server's zone, with the offset; GitHub in UTC with Z.
    now: Any = field(default=lambda: datetime.now(UTC))
    comments: list[Comment] = field(default_factory=list)
    #: Answer 500 to the next this many comment posts (-1: to every one).
    fail: int = 0
    failed: int = 0
    _ids: Any = field(default_factory=lambda: itertools.count(1))
    _server: TestServer | None = None

    # -- the API side: comments posted by the board --------------------------------

    async def start(self) -> str:
        """Serve the issue-comment API on loopback; its base URL."""
        app = web.Application()
        prefix = "/api/v1" if self.kind == "forgejo" else ""
        app.router.add_post(prefix + "/repos/{owner}/{repo}/issues/{n}/comments", self._comment)
        self._server = TestServer(app, host="127.0.0.1")
        await self._server.start_server()
        return str(self._server.make_url(prefix)).rstrip("/")

    async def close(self) -> None:
        if self._server is not None:
            await self._server.close()

    async def _comment(self, request: web.Request) -> web.Response:
        scheme = "token" if self.kind == "forgejo" else "Bearer"
        authorization = request.headers.get("Authorization", "")
        if authorization != f"{scheme} {self.token}":
            return web.json_response({"message": "Bad credentials"}, status=401)
        if self.fail:
            self.fail -= 1 if self.fail > 0 else 0
            self.failed += 1
            return web.json_response({"message": "Server Error"}, status=500)
        body = await request.json()
        repository = f"{request.match_info['owner']}/{request.match_info['repo']}"
        issue = int(request.match_info["n"])
        number = next(self._ids)
        accept = request.headers.get("Accept", "")
        self.comments.append(
            Comment(repository, issue, str(body.get("body", "")), authorization, accept, number)
        )
        return web.json_response(
            {"id": number, "body": body.get("body", ""), "html_url": self._url(issue, comment=number)},
            status=201,
        )

    # -- the webhook side: payloads as the forge sends them -----------------------------

    def _time(self, ago: float = 0) -> str:
        moment = self.now() - timedelta(seconds=ago)
        if self.kind == "forgejo":
            return moment.astimezone(timezone(timedelta(hours=1))).isoformat(timespec="seconds")
        return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")

    def _url(self, number: int, comment: int | None = None) -> str:
        host = "https://github.com" if self.kind == "github" else "https://codeberg.example"
        url = f"{host}/{self.repository}/issues/{number}"
        return url + (f"#issuecomment-{comment}" if comment is not None else "")

    def _user(self, login: str) -> dict[str, Any]:
        user: dict[str, Any] = {"login": login, "id": 1000 + len(login)}
        if self.kind == "forgejo":
            user["username"] = login
        else:
            user["type"] = "User"
        return user

    def _repository(self) -> dict[str, Any]:
        owner, name = self.repository.split("/")
        return {
            "id": 42,
            "name": name,
            "full_name": self.repository,
            "owner": self._user(owner),
            "html_url": f"https://example.invalid/{self.repository}",
            "private": False,
        }

    def issue(
        self,
        number: int,
        title: str = "The build fails",
        body: str = "It fails on main.",
        labels: tuple[str, ...] = (),
        user: str = "octocat",
        ago: float = 0,
        state: str = "open",
    ) -> dict[str, Any]:
        return {
            "id": 9000 + number,
            "number": number,
            "title": title,
            "body": body,
            "user": self._user(user),
            "labels": [{"id": i, "name": name, "color": "d73a4a"} for i, name in enumerate(labels)],
            "state": state,
            "html_url": self._url(number),
            "created_at": self._time(ago),
            "updated_at": self._time(ago),
        }

    def _event(self, action: str, issue: dict[str, Any], sender: str, **extra: Any) -> dict[str, Any]:
        payload = {"action": action, "issue": issue, "repository": self._repository()}
        payload["sender"] = self._user(sender)
        if self.kind == "forgejo":
            payload["number"] = issue["number"]
            payload["commit_id"] = ""
        return payload | extra

    def opened(self, issue: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        return "issues", self._event("opened", issue, issue["user"]["login"])

    def labeled(
        self, issue: dict[str, Any], label: str, sender: str = "maintainer"
    ) -> tuple[str, dict[str, Any]]:
        labels = [*issue["labels"], {"id": 99, "name": label, "color": "0e8a16"}]
        issue = issue | {"labels": labels, "updated_at": self._time()}
        if self.kind == "forgejo":  # Forgejo sends the labels as they now are, under label_updated
            return "issues", self._event("label_updated", issue, sender)
        return "issues", self._event("labeled", issue, sender, label=labels[-1])

    def closed(self, issue: dict[str, Any], sender: str = "maintainer") -> tuple[str, dict[str, Any]]:
        issue = issue | {"state": "closed", "updated_at": self._time(), "closed_at": self._time()}
        return "issues", self._event("closed", issue, sender)

    def commented(
        self, issue: dict[str, Any], body: str, user: str = "reporter", ago: float = 0
    ) -> tuple[str, dict[str, Any]]:
        number = next(self._ids)
        comment = {
            "id": number,
            "body": body,
            "user": self._user(user),
            "html_url": self._url(issue["number"], comment=number),
            "created_at": self._time(ago),
            "updated_at": self._time(ago),
        }
        extra: dict[str, Any] = {"comment": comment}
        if self.kind == "forgejo":
            extra["is_pull"] = False
        return "issue_comment", self._event("created", issue, user, **extra)

    def echo(
        self, issue: dict[str, Any], posted: Comment, comment_id: int | None = None
    ) -> tuple[str, dict[str, Any]]:
        """The ``issue_comment`` webhook the forge sends for a comment posted through its API
        (by the token's user), with the id the API answered unless told another."""
        number = posted.id if comment_id is None else comment_id
        comment = {
            "id": number,
            "body": posted.body,
            "user": self._user("board-bot"),
            "html_url": self._url(issue["number"], comment=number),
            "created_at": self._time(),
            "updated_at": self._time(),
        }
        extra: dict[str, Any] = {"comment": comment}
        if self.kind == "forgejo":
            extra["is_pull"] = False
        return "issue_comment", self._event("created", issue, "board-bot", **extra)

    def ping(self) -> tuple[str, dict[str, Any]]:
        hook = {"type": "Repository", "id": 7, "active": True, "events": ["issues", "issue_comment"]}
        payload = {"zen": "Keep it logically awesome.", "hook_id": 7, "hook": hook}
        return "ping", payload | {"repository": self._repository(), "sender": self._user("maintainer")}

    def headers(self, event: str, body: bytes, delivery: str, secret: str | None = None) -> dict[str, str]:
        """The headers the forge sends with a delivery, signed with ``secret`` (the source's by default)."""
        digest = hmac.new((secret or self.secret).encode(), body, hashlib.sha256).hexdigest()
        if self.kind == "github":
            sha1 = hmac.new((secret or self.secret).encode(), body, hashlib.sha1).hexdigest()
            return {
                "Content-Type": "application/json",
                "User-Agent": "GitHub-Hookshot/5f3c9a1",
                "X-GitHub-Event": event,
                "X-GitHub-Delivery": delivery,
                "X-GitHub-Hook-ID": "7",
                "X-GitHub-Hook-Installation-Target-Type": "repository",
                "X-Hub-Signature": f"sha1={sha1}",
                "X-Hub-Signature-256": f"sha256={digest}",
            }
        headers = {"Content-Type": "application/json", "User-Agent": "Go-http-client/1.1"}
        for name in ("Forgejo", "Gitea", "Gogs", "GitHub"):
            headers[f"X-{name}-Delivery"] = delivery
            headers[f"X-{name}-Event"] = event
            headers[f"X-{name}-Event-Type"] = event
        headers["X-Forgejo-Signature"] = digest
        headers["X-Gitea-Signature"] = digest
        headers["X-Hub-Signature-256"] = f"sha256={digest}"
        return headers

    async def send(
        self,
        sent: tuple[str, dict[str, Any]],
        *,
        delivery: str | None = None,
        secret: str | None = None,
        drop: tuple[str, ...] = (),
        source: str | None = None,
    ) -> Sent:
        """POST one delivery to the board as the forge does; ``drop`` leaves headers out."""
        event, payload = sent
        body = json.dumps(payload).encode()
        delivery = delivery or str(uuid.uuid4())
        headers = {k: v for k, v in self.headers(event, body, delivery, secret).items() if k not in drop}
        async with (
            aiohttp.ClientSession() as http,
            http.post(
                f"{self.board_url}/api/intake/{source or self.source}", data=body, headers=headers
            ) as resp,
        ):
            return Sent(resp.status, await resp.json(), delivery)
