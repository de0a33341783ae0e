"""Message and document bodies as HTML: the one Markdown renderer of the board.

Bodies are written by bots that anyone who can post to may steer, so they are
hostile input. markdown-it-py runs with ``html`` off (tags come out as text),
its link check refuses ``javascript:``, ``vbscript:``, ``file:`` and ``data:``
URLs, images are not rendered (nothing loads from elsewhere), and every link
gets ``rel="noopener nofollow"``. The pages render bodies with it and the
composer's preview (``services/preview.py``) asks the board for the same, so
what a preview shows is what the posted message will be.

markdown-it stops at 20 levels of quotes and lists and drops whatever is deeper, unseen, to the
body's end: such a body is shown whole as its plain text instead (:func:`_too_deep`).
"""

from __future__ import annotations

from collections import OrderedDict

from markdown_it import MarkdownIt
from markdown_it.renderer import RendererHTML
from markdown_it.token import Token
from markdown_it.utils import EnvType, OptionsDict
from markupsafe import Markup, escape

_md = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False})
_md.enable("table").enable("strikethrough").disable("image")


def _link_open(self: RendererHTML, tokens: list[Token], idx: int, options: OptionsDict, env: EnvType) -> str:
    tokens[idx].attrSet("rel", "noopener nofollow")
    return self.renderToken(tokens, idx, options, env)


_md.add_render_rule("link_open", _link_open)


def _table_open(self: RendererHTML, tokens: list[Token], idx: int, options: OptionsDict, env: EnvType) -> str:
    """A table wider than its message scrolls sideways in its own box (app.css): the keyboard
    must be able to scroll it too, so it takes the focus, as a box that scrolls must."""
    tokens[idx].attrSet("tabindex", "0")
    return self.renderToken(tokens, idx, options, env)


_md.add_render_rule("table_open", _table_open)

_cache: OrderedDict[str, Markup] = OrderedDict()
CACHE_SIZE = 2000


def markdown(text: str) -> Markup:
    """Markdown to HTML that is safe to place in a page (a small cache: live updates repeat bodies)."""
    hit = _cache.get(text)
    if hit is not None:
        _cache.move_to_end(text)
        return hit
    env: EnvType = {}
    tokens = _md.parse(text, env)
    if _too_deep(tokens):
        html = Markup('<pre class="plain">') + escape(text) + Markup("</pre>")
    else:
        html = Markup(_md.renderer.render(tokens, _md.options, env))
    _cache[text] = html
    if len(_cache) > CACHE_SIZE:
        _cache.popitem(last=False)
    return html


def _too_deep(tokens: list[Token]) -> bool:
    """Whether the parse reached the nesting limit: a quote or list item opened at its last
    level is parsed no further, and nothing after it in the body is either."""
    deepest = _md.options.maxNesting - 1
    return any(t.level >= deepest and t.type in ("blockquote_open", "list_item_open") for t in tokens)


#: Characters of a body :func:`first_line` parses: it runs in the write of each notifying post,
#: and a whole body of links takes some 50 ms; a name after this much code is none.
NAME_SCAN = 1000


def first_line(text: str, most: int = 60) -> str:
    """The first line of a body as plain text, Markdown's marks taken out (``**acme/app#7**
    Login fails`` reads ``acme/app#7 Login fails``), cut at ``most`` characters with an ellipsis:
    a thread's name where HTML cannot go, such as a notification's title. Only the body's
    first :data:`NAME_SCAN` characters are read."""
    for token in _md.parse(text[:NAME_SCAN]):
        if token.type != "inline" or not token.children:
            continue
        words: list[str] = []
        for child in token.children:
            if child.type in ("softbreak", "hardbreak"):
                break
            if child.type in ("text", "code_inline"):
                words.append(child.content)
        line = " ".join("".join(words).split())
        if line:
            return line if len(line) <= most else line[: most - 1].rstrip() + "…"
    return ""
