"""The composer's preview: a body as the board will render it once posted.

The page asks the server rather than rendering Markdown in the browser, so there is one
Markdown dialect (:mod:`..markdown`) and what the preview shows is what the message will be.
It reads nothing and writes nothing; the body is held to the size a message may have.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..markdown import markdown
from ..principal import Principal
from ..validation import arg
from . import actions
from .context import Context
from .posting import MAX_BODY


@dataclass
class PreviewRequest:
    body: str = arg(max_len=MAX_BODY, limit=True, multiline=True, help="The Markdown to render.")


async def preview(ctx: Context, p: Principal, req: PreviewRequest) -> dict[str, str]:
    """``{"html": ...}``: ``req.body`` rendered exactly as a posted message's body is."""
    actions.require(p, "message.preview")
    return {"html": str(markdown(req.body))}
