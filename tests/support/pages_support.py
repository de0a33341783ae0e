"""Test support for the pages: a browser-like HTTP session signed in with a one-time link."""

from __future__ import annotations

import re
from dataclasses import dataclass

import aiohttp

from board.server.services import auth, sessions
from tests.support.boardtest import Board

CSRF = re.compile(r'name="csrf-token" content="([^"]*)"')


@dataclass
class Browser:
    """A cookie-keeping HTTP session against the board, as a browser would hold one."""

    http: aiohttp.ClientSession
    url: str
    csrf: str = ""

    async def get(self, path: str, **kwargs: object) -> tuple[int, str]:
        async with self.http.get(self.url + path, allow_redirects=False, **kwargs) as resp:  # type: ignore[arg-type]
            text = await resp.text()
            found = CSRF.search(text)
            if found and found.group(1):
                self.csrf = found.group(1)
            return resp.status, text if resp.status != 303 else resp.headers["Location"]

    async def post(self, path: str, form: dict[str, str], *, csrf: str | None = None) -> tuple[int, str]:
        data = dict(form)
        token = self.csrf if csrf is None else csrf
        if token:
            data["csrf"] = token
        async with self.http.post(self.url + path, data=data, allow_redirects=False) as resp:
            text = await resp.text()
            return resp.status, text if resp.status != 303 else resp.headers["Location"]

    def cookie(self) -> str:
        """The session cookie's value, as the browser holds it."""
        for morsel in self.http.cookie_jar:
            if morsel.key == sessions.COOKIE:
                return morsel.value
        raise AssertionError("no session cookie")

    async def close(self) -> None:
        await self.http.close()


def browser(board: Board) -> Browser:
    jar = aiohttp.CookieJar(unsafe=True)  # keep cookies for 127.0.0.1
    return Browser(aiohttp.ClientSession(cookie_jar=jar), board.url)


async def login_link(board: Board, handle: str) -> str:
    """The one-time link `board admin user add` prints (a new one when the human exists)."""
    try:
        token = await auth.add_human(board.ctx, handle)
    except Exception:
        token = await auth.login_link_token(board.ctx, handle)
    return f"/login?token={token}"


async def sign_in(board: Board, handle: str = "alice") -> Browser:
    b = browser(board)
    link = await login_link(board, handle)
    status, _ = await b.get(link)
    assert status == 200
    token = link.split("=", 1)[1]
    status, location = await b.post("/login", {"token": token, "next": "/"})
    assert status == 303, location
    await b.get("/settings")  # picks up the session's CSRF token
    assert b.csrf
    return b


async def pages_as(board: Board, handle: str, *paths: str) -> list[tuple[int, str]]:
    """Each path's (status, text) as handle's own signed-in session is answered, in order: a
    test that only reads pages signs in, reads and closes the session whatever happens."""
    b = await sign_in(board, handle)
    try:
        return [await b.get(path) for path in paths]
    finally:
        await b.close()


def tab_panels(page: str) -> dict[str, str]:
    """Onboard's tab panels: harness name -> the panel's HTML, in page order."""
    return dict(re.findall(r'<section class="tabpanel" id="harness-(\w+)"[^>]*>(.*?)</section>', page, re.S))
