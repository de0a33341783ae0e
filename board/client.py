"""The async HTTP client of the board: used by every daemon, the CLI and the tests.

One method per API route. Errors come back as :class:`BoardAPIError` carrying the
board's error code, so callers branch on ``exc.code == "CLAIMED"`` rather than on
status numbers. Daemons import this module, and :mod:`board.wire` for the values its answers
carry, and nothing else from the board.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any
from urllib.parse import quote

import aiohttp

JSON = dict[str, Any]


class BoardAPIError(Exception):
    """An error answer from the board (or UNAVAILABLE when it could not be reached)."""

    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        details: Mapping[str, Any] | None = None,
        retryable: bool = False,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(f"{code}: {message}")
        self.status = status
        self.code = code
        self.message = message
        self.details = dict(details or {})
        self.retryable = retryable
        self.retry_after = retry_after


def encode_params(values: Mapping[str, Any]) -> dict[str, str]:
    """Query-string values as the board parses them: ``true``, comma-joined lists; None and False left out."""
    out = {}
    for key, value in values.items():
        if value is None or value is False:
            continue
        if value is True:
            out[key] = "true"
        elif isinstance(value, list | tuple):
            if value:
                out[key] = ",".join(str(v) for v in value)
        else:
            out[key] = str(value)
    return out


def _error(resp: aiohttp.ClientResponse, data: Any) -> BoardAPIError:
    """The board's error answer as a :class:`BoardAPIError`."""
    error = data.get("error", {}) if isinstance(data, dict) else {}
    retry = resp.headers.get("Retry-After")
    return BoardAPIError(
        resp.status,
        error.get("code", "UNAVAILABLE"),
        error.get("message", str(data)[:200]),
        error.get("details"),
        bool(error.get("retryable")),
        float(retry) if retry else None,
    )


class Lines:
    """An open answer of JSON lines: ``async for line in lines``, then :meth:`close`.

    The iteration ends when the board ends the answer; a connection that breaks or falls
    silent past the read timeout raises UNAVAILABLE, like any call that cannot reach the board.
    """

    def __init__(
        self,
        resp: aiohttp.ClientResponse | None,
        unreachable: Callable[[BaseException], BoardAPIError] | None = None,
    ) -> None:
        self._resp = resp
        self._unreachable = unreachable

    async def __aenter__(self) -> Lines:
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Hang up (the board frees the stream at once)."""
        if self._resp is not None:
            self._resp.close()

    async def __aiter__(self) -> AsyncIterator[JSON]:
        if self._resp is None:
            return
        rest = b""
        try:
            async for chunk in self._resp.content.iter_any():
                *whole, rest = (rest + chunk).split(b"\n")
                for raw in whole:
                    if raw.strip():
                        yield json.loads(raw)
        except (TimeoutError, aiohttp.ClientError, OSError, ValueError) as exc:
            assert self._unreachable is not None
            raise self._unreachable(exc) from exc
        if rest.strip():  # the board never ends a stream inside a line: the connection broke
            assert self._unreachable is not None
            raise self._unreachable(ConnectionError("the stream ended inside a line"))


def _body(values: Mapping[str, Any]) -> JSON:
    return {key: value for key, value in values.items() if value is not None}


class BoardClient:
    """``async with BoardClient(url, token) as board: await board.me()``."""

    def __init__(
        self,
        base_url: str,
        token: str | None = None,
        *,
        timeout: float = 90.0,
        session: aiohttp.ClientSession | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.token = token
        self._timeout = aiohttp.ClientTimeout(total=timeout)
        self._session = session
        self._owns_session = session is None

    async def __aenter__(self) -> BoardClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        if self._session is not None and self._owns_session:
            await self._session.close()
        self._session = None

    def _http(self) -> aiohttp.ClientSession:
        if self._session is None:
            self._session = aiohttp.ClientSession(timeout=self._timeout)
        return self._session

    async def request(
        self,
        method: str,
        path: str,
        *,
        json: Any = None,
        params: Mapping[str, Any] | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> Any:
        """One call; the decoded JSON answer, or :class:`BoardAPIError`."""
        _, data = await self.call(method, path, json=json, params=params, headers=headers)
        return data

    async def request_object(self, method: str, path: str, **options: Any) -> JSON:
        """:meth:`call` (same options) to a route that answers a JSON object; anything else is UNAVAILABLE."""
        status, data = await self.call(method, path, **options)
        if not isinstance(data, dict):
            raise BoardAPIError(
                status, "UNAVAILABLE", f"{path} answered {type(data).__name__}, not an object"
            )
        return data

    async def call(
        self,
        method: str,
        path: str,
        *,
        json: Any = None,
        params: Mapping[str, Any] | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> tuple[int, Any]:
        """One call; the HTTP status and the decoded answer, or :class:`BoardAPIError`."""
        hdrs = dict(headers or {})
        if self.token:
            hdrs["Authorization"] = f"Bearer {self.token}"
        try:
            async with self._http().request(
                method, self.base_url + path, json=json, params=encode_params(params or {}), headers=hdrs
            ) as resp:
                if resp.content_type == "application/json":
                    data = await resp.json()
                elif resp.content_type.startswith("text/"):
                    data = await resp.text()
                else:  # a download: the package
                    data = await resp.read()
                if resp.status >= 400:
                    raise _error(resp, data)
                return resp.status, data
        except (TimeoutError, aiohttp.ClientError, OSError) as exc:
            raise self._unreachable(exc) from exc

    def _unreachable(self, exc: BaseException) -> BoardAPIError:
        return BoardAPIError(0, "UNAVAILABLE", f"cannot reach {self.base_url}: {exc}", retryable=True)

    async def stream(
        self, method: str, path: str, *, params: Mapping[str, Any] | None = None, read_timeout: float
    ) -> Lines:
        """Open a route that answers JSON lines (NDJSON): its :class:`Lines` once the board took the
        call, or :class:`BoardAPIError`. Silence for ``read_timeout`` seconds ends it as UNAVAILABLE."""
        hdrs = {"Authorization": f"Bearer {self.token}"} if self.token else {}
        timeout = aiohttp.ClientTimeout(total=None, connect=self._timeout.total, sock_read=read_timeout)
        try:
            resp = await self._http().request(
                method,
                self.base_url + path,
                params=encode_params(params or {}),
                headers=hdrs,
                timeout=timeout,
            )
        except (TimeoutError, aiohttp.ClientError, OSError) as exc:
            raise self._unreachable(exc) from exc
        if resp.status >= 400:
            try:
                data = await resp.json() if resp.content_type == "application/json" else await resp.text()
            except (TimeoutError, aiohttp.ClientError, OSError, ValueError) as exc:
                raise self._unreachable(exc) from exc
            finally:
                resp.release()
            raise _error(resp, data)
        return Lines(resp, self._unreachable)

    # -- discovery and identity -------------------------------------------------

    async def health(self) -> JSON:
        return await self.request_object("GET", "/healthz")

    async def register(
        self, handle: str, invite: str, description: str = "", kind: str | None = None
    ) -> JSON:
        return await self.request_object(
            "POST",
            "/api/agents",
            json=_body({"handle": handle, "invite": invite, "description": description, "kind": kind}),
        )

    async def me(self) -> JSON:
        return await self.request_object("GET", "/api/me")

    async def rotate(self) -> JSON:
        return await self.request_object("POST", "/api/me/rotate")

    async def agents(self, **params: Any) -> JSON:
        return await self.request_object("GET", "/api/agents", params=params)

    async def agent(self, handle: str) -> JSON:
        return await self.request_object("GET", f"/api/agents/{handle}")

    async def set_budget(self, handle: str, **fields: Any) -> JSON:
        """A bot's daily limits (budget_wakes, budget_tokens, budget_cost_usd; 0 clears) or lift=True."""
        return await self.request_object("PUT", f"/api/agents/{handle}/budget", json=_body(fields))

    async def invite(self, workspace: str, uses: int = 1, expires_in: int | None = None) -> JSON:
        return await self.request_object(
            "POST",
            "/api/invites",
            json=_body({"workspace": workspace, "uses": uses, "expires_in": expires_in}),
        )

    async def revoke_token(self, handle: str) -> JSON:
        return await self.request_object("DELETE", f"/api/agents/{handle}/token")

    # -- workspaces -------------------------------------------------------------

    async def workspaces(self, **params: Any) -> JSON:
        return await self.request_object("GET", "/api/workspaces", params=params)

    async def create_workspace(self, slug: str, name: str = "", seed: str = "", **extra: Any) -> JSON:
        return await self.request_object(
            "POST",
            "/api/workspaces",
            json=_body({"slug": slug, "name": name or None, "seed": seed or None, **extra}),
        )

    async def workspace(self, slug: str) -> JSON:
        return await self.request_object("GET", f"/api/workspaces/{slug}")

    async def patch_workspace(self, slug: str, **fields: Any) -> JSON:
        return await self.request_object("PATCH", f"/api/workspaces/{slug}", json=_body(fields))

    async def archive_workspace(self, slug: str) -> JSON:
        return await self.request_object("POST", f"/api/workspaces/{slug}/archive")

    async def delete_workspace(self, slug: str, confirm: str) -> JSON:
        return await self.request_object("DELETE", f"/api/workspaces/{slug}", json={"confirm": confirm})

    async def set_bots(self, slug: str, bots: list[str]) -> JSON:
        return await self.request_object("PUT", f"/api/workspaces/{slug}/bots", json={"bots": bots})

    # -- channels and conversations --------------------------------------------

    async def channels(self, **params: Any) -> JSON:
        return await self.request_object("GET", "/api/channels", params=params)

    async def create_channel(self, slug: str, **fields: Any) -> JSON:
        return await self.request_object("POST", "/api/channels", json=_body({"slug": slug, **fields}))

    async def patch_channel(self, slug: str, **fields: Any) -> JSON:
        return await self.request_object("PATCH", f"/api/channels/{slug}", json=_body(fields))

    async def conversations(self, **params: Any) -> JSON:
        return await self.request_object("GET", "/api/conversations", params=params)

    async def open_conversation(self, participants: list[str], topic: str = "", **extra: Any) -> JSON:
        return await self.request_object(
            "POST", "/api/conversations", json=_body({"participants": participants, "topic": topic, **extra})
        )

    # -- messages ---------------------------------------------------------------

    async def post(
        self,
        body: str,
        *,
        channel: str | None = None,
        reply_to: int | None = None,
        conversation: int | None = None,
        request_id: str | None = None,
        **extra: Any,
    ) -> JSON:
        return await self.request_object(
            "POST",
            "/api/messages",
            json=_body(
                {
                    "body": body,
                    "channel": channel,
                    "reply_to": reply_to,
                    "conversation": conversation,
                    "request_id": request_id,
                    **extra,
                }
            ),
        )

    async def messages(self, **params: Any) -> JSON:
        return await self.request_object("GET", "/api/messages", params=params)

    async def message(self, message_id: int) -> JSON:
        return await self.request_object("GET", f"/api/messages/{message_id}")

    async def thread(self, thread_id: int, **params: Any) -> JSON:
        return await self.request_object("GET", f"/api/threads/{thread_id}", params=params)

    async def set_worktree(self, thread_id: int, **fields: Any) -> JSON:
        """The caller's (a bot's) worktree for this thread: waiting, live, kept or removed."""
        return await self.request_object("PUT", f"/api/threads/{thread_id}/worktree", json=_body(fields))

    async def inbox(self, **params: Any) -> JSON:
        return await self.request_object("GET", "/api/inbox", params=params)

    async def search(self, q: str, **params: Any) -> JSON:
        return await self.request_object("GET", "/api/search", params={"q": q, **params})

    async def receipts(self, message_ids: list[int], state: str = "seen") -> JSON:
        return await self.request_object(
            "POST", "/api/receipts", json={"message_ids": message_ids, "state": state}
        )

    async def inbox_threads(self, **params: Any) -> JSON:
        return await self.request_object("GET", "/api/inbox/threads", params=params)

    async def inbox_mark(
        self, state: str = "seen", *, thread_id: int | None = None, all: bool = False
    ) -> JSON:
        body: JSON = {"state": state, **({"thread_id": thread_id} if thread_id is not None else {})}
        return await self.request_object(
            "POST", "/api/inbox/mark", json=body | ({"all": True} if all else {})
        )

    # -- notifications out of band (humans) -----------------------------------

    async def destinations(self) -> JSON:
        return await self.request_object("GET", "/api/destinations")

    async def create_destination(self, name: str, kind: str, **settings: Any) -> JSON:
        """``settings`` as the route takes them (``url``, ``secret``, ``host``, ..., ``from``)."""
        return await self.request_object(
            "POST", "/api/destinations", json={"name": name, "kind": kind, **settings}
        )

    async def update_destination(self, destination_id: int, **fields: Any) -> JSON:
        return await self.request_object("PATCH", f"/api/destinations/{destination_id}", json=fields)

    async def delete_destination(self, destination_id: int) -> JSON:
        return await self.request_object("DELETE", f"/api/destinations/{destination_id}")

    async def set_destination_kinds(self, destination_id: int, kinds: list[str]) -> JSON:
        return await self.request_object(
            "PUT", f"/api/destinations/{destination_id}/kinds", json={"kinds": kinds}
        )

    async def send_test_notification(self, destination_id: int) -> JSON:
        return await self.request_object("POST", f"/api/destinations/{destination_id}/test")

    async def destination_log(
        self, destination_id: int, *, before: int | None = None, limit: int = 50
    ) -> JSON:
        params = {"limit": limit, **({"before": before} if before is not None else {})}
        return await self.request_object(
            "GET", f"/api/destinations/{destination_id}/notifications", params=params
        )

    async def set_quiet_hours(self, start: str, end: str, timezone: str = "UTC") -> JSON:
        body = {"start": start, "end": end, "timezone": timezone}
        return await self.request_object("PUT", "/api/quiet-hours", json=body)

    async def clear_quiet_hours(self) -> JSON:
        return await self.request_object("DELETE", "/api/quiet-hours")

    # -- claims, wakes ----------------------------------------------------------

    async def claim(self, thread_id: int, note: str = "", lease_minutes: int | None = None) -> JSON:
        return await self.request_object(
            "POST",
            f"/api/threads/{thread_id}/claim",
            json=_body({"note": note, "lease_minutes": lease_minutes}),
        )

    async def release(self, thread_id: int, reason: str = "") -> JSON:
        return await self.request_object("POST", f"/api/threads/{thread_id}/release", json={"reason": reason})

    async def handoff(self, thread_id: int, to: str, note: str = "") -> JSON:
        return await self.request_object(
            "POST", f"/api/threads/{thread_id}/handoff", json={"to": to, "note": note}
        )

    async def done(self, thread_id: int, summary: str = "") -> JSON:
        return await self.request_object("POST", f"/api/threads/{thread_id}/done", json={"summary": summary})

    async def claims(self, **params: Any) -> JSON:
        return await self.request_object("GET", "/api/claims", params=params)

    async def record_wake(self, **fields: Any) -> JSON:
        return await self.request_object("POST", "/api/wakes", json=_body(fields))

    async def wakes(self, **params: Any) -> JSON:
        return await self.request_object("GET", "/api/wakes", params=params)

    async def costs(self, **params: Any) -> JSON:
        return await self.request_object("GET", "/api/costs", params=params)

    async def wake(self, **params: Any) -> JSON:
        return await self.request_object("GET", "/api/wake", params=params)

    async def wake_stream(self, *, beat: int = 20, **params: Any) -> Lines:
        """The wake feed as a stream (``since``, ``watch``, ``goal``, ``view``, ``limit``): a line a
        message, each with its cursor, and a heartbeat every ``beat`` s; three beats of silence end it."""
        params = {**params, "beat": beat}
        return await self.stream("GET", "/api/wake/stream", params=params, read_timeout=3 * beat)

    # -- registry: skills, profiles, prompts ------------------------------------

    async def skills(self, **params: Any) -> JSON:
        return await self.request_object("GET", "/api/skills", params=params)

    async def create_skill(self, name: str, text: str, **fields: Any) -> JSON:
        return await self.request_object(
            "POST", "/api/skills", json=_body({"name": name, "text": text, **fields})
        )

    async def skill(self, name: str, version: int | None = None) -> JSON:
        return await self.request_object("GET", f"/api/skills/{name}", params={"version": version})

    async def update_skill(self, name: str, **fields: Any) -> JSON:
        return await self.request_object("PUT", f"/api/skills/{name}", json=_body(fields))

    async def profiles(self, **params: Any) -> JSON:
        return await self.request_object("GET", "/api/profiles", params=params)

    async def create_profile(self, name: str, workspace: str, harness: str, **fields: Any) -> JSON:
        return await self.request_object(
            "POST",
            "/api/profiles",
            json=_body({"name": name, "workspace": workspace, "harness": harness, **fields}),
        )

    async def profile(self, name: str) -> JSON:
        return await self.request_object("GET", f"/api/profiles/{name}")

    async def update_profile(self, name: str, **fields: Any) -> JSON:
        return await self.request_object("PUT", f"/api/profiles/{name}", json=_body(fields))

    async def bot_prompt(
        self,
        handle: str,
        trigger: list[int] | None = None,
        *,
        first: bool = False,
        budget_bytes: int | None = None,
        mcp: bool = False,
        handoff: bool = False,
        handoff_bytes: int | None = None,
    ) -> JSON:
        """The composed prompt of ``handle``'s next turn covering ``trigger`` message ids."""
        params = {"trigger": trigger or [], "first": first, "budget_bytes": budget_bytes, "mcp": mcp}
        if handoff:
            params |= {"handoff": True, "handoff_bytes": handoff_bytes}
        return await self.request_object("GET", f"/api/bots/{handle}/prompt", params=params)

    # -- fleet: machines, keepers, bots on machines -----------------------------

    async def enroll_code(self, machine_name: str, expires_in: int | None = None) -> JSON:
        return await self.request_object(
            "POST",
            "/api/fleet/enroll-codes",
            json=_body({"machine_name": machine_name, "expires_in": expires_in}),
        )

    async def enroll(self, code: str, hostname: str = "") -> JSON:
        """Trade an enroll code for a keeper token (no token needed)."""
        return await self.request_object(
            "POST", "/api/fleet/enroll", json={"code": code, "hostname": hostname}
        )

    async def fleet_report(self, report: JSON) -> JSON:
        return await self.request_object("POST", "/api/fleet/report", json=report)

    async def fleet(self, **params: Any) -> JSON:
        return await self.request_object("GET", "/api/fleet", params=params)

    async def assign_bot(self, machine: str, profile: str, handle: str, description: str = "") -> JSON:
        return await self.request_object(
            "POST",
            "/api/fleet/bots",
            json=_body(
                {"machine": machine, "profile": profile, "handle": handle, "description": description}
            ),
        )

    async def fleet_order(self, handle: str, kind: str) -> JSON:
        """``kind``: start, stop or restart."""
        return await self.request_object("POST", f"/api/fleet/bots/{quote(handle, safe='')}/{kind}")

    async def unassign_bot(self, handle: str) -> JSON:
        return await self.request_object("DELETE", f"/api/fleet/bots/{quote(handle, safe='')}")

    async def remove_machine(self, name: str) -> JSON:
        """A human forgets a machine: its bots unassigned, its keeper's token stopped."""
        return await self.request_object("DELETE", f"/api/fleet/machines/{quote(name, safe='')}")

    async def worktree_gone(self, handle: str, thread_id: int) -> JSON:
        """The bot's kept worktree for this thread has no folder any more (its daemon or keeper says)."""
        return await self.request_object(
            "POST", f"/api/fleet/bots/{quote(handle, safe='')}/worktrees/{thread_id}/gone"
        )

    async def bot_token(self, handle: str) -> JSON:
        """A keeper mints the token of a bot assigned to its machine."""
        return await self.request_object("POST", f"/api/fleet/bots/{quote(handle, safe='')}/token")

    # -- audit ------------------------------------------------------------------

    async def audit(self, **params: Any) -> JSON:
        return await self.request_object("GET", "/api/audit", params=params)

    # -- routines ---------------------------------------------------------------

    @staticmethod
    def _routine(name: str, rest: str = "") -> str:
        return f"/api/routines/{quote(name, safe='')}{rest}"

    async def routines(self, **params: Any) -> JSON:
        """``since`` (the change cursor) with ``wait`` long-polls until something changes."""
        return await self.request_object("GET", "/api/routines", params=params)

    async def routine(self, name: str) -> JSON:
        return await self.request_object("GET", self._routine(name))

    async def propose_routine(self, name: str, **fields: Any) -> JSON:
        return await self.request_object("POST", "/api/routines", json=_body({"name": name, **fields}))

    async def propose_version(self, name: str, **fields: Any) -> JSON:
        return await self.request_object("POST", self._routine(name, "/versions"), json=_body(fields))

    async def approve_version(self, name: str, version: int, note: str = "") -> JSON:
        return await self.request_object(
            "POST", self._routine(name, f"/versions/{version}/approve"), json={"note": note}
        )

    async def reject_version(self, name: str, version: int, note: str) -> JSON:
        return await self.request_object(
            "POST", self._routine(name, f"/versions/{version}/reject"), json={"note": note}
        )

    async def pause_routine(self, name: str) -> JSON:
        return await self.request_object("POST", self._routine(name, "/pause"))

    async def resume_routine(self, name: str) -> JSON:
        return await self.request_object("POST", self._routine(name, "/resume"))

    async def run_routine_now(self, name: str) -> JSON:
        return await self.request_object("POST", self._routine(name, "/run-now"))

    async def routine_runs(self, name: str, **params: Any) -> JSON:
        return await self.request_object("GET", self._routine(name, "/runs"), params=params)

    async def create_run(self, name: str, version: int, scheduled_for: str, **fields: Any) -> JSON:
        body = {"version": version, "scheduled_for": scheduled_for, **fields}
        return await self.request_object("POST", self._routine(name, "/runs"), json=_body(body))

    async def start_run(self, name: str, run_id: int) -> JSON:
        return await self.request_object("POST", self._routine(name, f"/runs/{run_id}/start"))

    async def finish_run(self, name: str, run_id: int, state: str, outcome: str = "") -> JSON:
        body = {"state": state, "outcome": outcome}
        return await self.request_object("POST", self._routine(name, f"/runs/{run_id}/finish"), json=body)

    # -- knowledge --------------------------------------------------------------
    # ``workspace`` picks the /api/workspaces/{slug}/knowledge form (humans, admin bots);
    # without it a bot works in its own workspace.

    @staticmethod
    def _kb(workspace: str | None, rest: str = "") -> str:
        base = f"/api/workspaces/{quote(workspace, safe='')}/knowledge" if workspace else "/api/knowledge"
        return base + rest

    @classmethod
    def _doc(cls, workspace: str | None, path: str, suffix: str = "") -> str:
        # A URL folds '.' and '..' segments away, which would name another document.
        if any(segment in ("", ".", "..") for segment in path.split("/")):
            raise BoardAPIError(
                422, "INVALID_ARGUMENT", f"A document path has no empty, '.' or '..' segment: {path!r}."
            )
        return cls._kb(workspace, "/" + quote(path, safe="/") + suffix)

    async def knowledge(self, *, workspace: str | None = None, **params: Any) -> JSON:
        """Current documents (``q`` searches; ``prefix``, ``status``, ``as_of``, ``valid_at``)."""
        return await self.request_object("GET", self._kb(workspace), params=params)

    async def document(self, path: str, *, workspace: str | None = None, **params: Any) -> JSON:
        return await self.request_object("GET", self._doc(workspace, path), params=params)

    async def put_document(
        self,
        path: str,
        body: str,
        base_revision: int,
        reason: str,
        *,
        workspace: str | None = None,
        **fields: Any,
    ) -> JSON:
        return await self.request_object(
            "PUT",
            self._doc(workspace, path),
            json=_body({"body": body, "base_revision": base_revision, "reason": reason, **fields}),
        )

    async def patch_document(
        self,
        path: str,
        diff: str,
        base_revision: int,
        reason: str,
        *,
        workspace: str | None = None,
        **fields: Any,
    ) -> JSON:
        return await self.request_object(
            "PATCH",
            self._doc(workspace, path),
            json=_body({"diff": diff, "base_revision": base_revision, "reason": reason, **fields}),
        )

    async def delete_document(
        self, path: str, base_revision: int, reason: str, *, workspace: str | None = None, **fields: Any
    ) -> JSON:
        return await self.request_object(
            "DELETE",
            self._doc(workspace, path),
            json=_body({"base_revision": base_revision, "reason": reason, **fields}),
        )

    async def document_history(self, path: str, *, workspace: str | None = None, **params: Any) -> JSON:
        return await self.request_object("GET", self._doc(workspace, path, "/history"), params=params)

    async def document_diff(
        self,
        path: str,
        *,
        from_revision: int | None = None,
        to_revision: int | None = None,
        workspace: str | None = None,
    ) -> JSON:
        return await self.request_object(
            "GET",
            self._doc(workspace, path, "/diff"),
            params={"from": from_revision, "to": to_revision},
        )

    async def dispute(
        self,
        path: str,
        reason: str,
        sources: list[JSON] | None = None,
        *,
        workspace: str | None = None,
    ) -> JSON:
        return await self.request_object(
            "POST", self._doc(workspace, path, "/dispute"), json=_body({"reason": reason, "sources": sources})
        )

    async def resolve_dispute(
        self, path: str, outcome: str, note: str = "", *, workspace: str | None = None
    ) -> JSON:
        return await self.request_object(
            "POST", self._doc(workspace, path, "/resolve"), json={"outcome": outcome, "note": note}
        )

    async def review_revision(
        self,
        path: str,
        decision: str,
        revision: int | None = None,
        note: str = "",
        *,
        workspace: str | None = None,
    ) -> JSON:
        return await self.request_object(
            "POST",
            self._doc(workspace, path, "/review"),
            json=_body({"decision": decision, "revision": revision, "note": note}),
        )

    async def redact(self, path: str, revision: int, reason: str, *, workspace: str | None = None) -> JSON:
        return await self.request_object(
            "POST", self._doc(workspace, path, "/redact"), json={"revision": revision, "reason": reason}
        )

    async def review_queue(self, *, workspace: str | None = None, **params: Any) -> JSON:
        return await self.request_object("GET", self._kb(workspace, "/review"), params=params)

    async def pack(self, *, workspace: str | None = None, **params: Any) -> JSON:
        """``channel``, ``thread``, ``q``, ``budget_tokens``."""
        return await self.request_object("GET", self._kb(workspace, "/pack"), params=params)

    async def knowledge_stats(self, *, workspace: str | None = None, **params: Any) -> JSON:
        return await self.request_object("GET", self._kb(workspace, "/stats"), params=params)
