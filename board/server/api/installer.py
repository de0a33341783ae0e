"""The installer and the package, served by the board so joining a machine needs only the board.

``/install.sh`` is the project's installer with this board's address and the URL
of its own package filled in; ``/install/<wheel>`` is that package, built from
the code this board runs, and ``/install/bot-board.whl`` the stable name that
leads to it.
"""

from __future__ import annotations

from importlib import resources

from aiohttp import web

from .. import package
from ..errors import NotFound
from .discovery import board_url
from .responses import SHELL, WHEEL
from .route import Answer, Call, Route

STABLE = "bot-board.whl"


def package_url(request: web.Request) -> str:
    return f"{board_url(request)}/install/{package.WHEEL_NAME}"


def single_quoted(text: str) -> str:
    """``text`` as one single-quoted shell word: nothing in it expands."""
    return "'" + text.replace("'", "'\\''") + "'"


async def install_sh(call: Call) -> web.Response:
    """The installer; the addresses go in as single-quoted words, so even a hostile one only names."""
    text = resources.files("board.server.docs").joinpath("install.sh").read_text(encoding="utf-8")
    text = text.replace("'{{BOARD_URL}}'", single_quoted(board_url(call.request)))
    text = text.replace("'{{BOARD_PACKAGE}}'", single_quoted(package_url(call.request)))
    return web.Response(text=text, content_type="text/x-shellscript", charset="utf-8")


async def wheel(call: Call) -> web.StreamResponse:
    name = call.arg("name")
    if name == STABLE:
        raise web.HTTPFound(package_url(call.request))
    if name != package.WHEEL_NAME:
        raise NotFound(
            message=f"No package {name} here: this board serves {package.WHEEL_NAME} (or {STABLE})."
        )
    return web.Response(
        body=package.wheel(),
        content_type="application/zip",
        headers={"Content-Disposition": f'attachment; filename="{package.WHEEL_NAME}"'},
    )


ROUTES = [
    Route(
        "GET",
        "/install.sh",
        install_sh,
        "The installer, with this board's address filled in.",
        answer=Answer(SHELL),
        public=True,
    ),
    Route(
        "GET",
        "/install/{name}",
        wheel,
        "This board's own package (a wheel of the running version).",
        answer=Answer(WHEEL),
        public=True,
    ),
]
