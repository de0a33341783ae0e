"""Markdown for the pages: raw HTML stays text, links are marked, dangerous URLs are not links; times."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from board.server import markdown as markdown_module
from board.server.clock import iso
from board.server.markdown import first_line, markdown
from board.server.pages.render import claim_line, heading_line, highlight, log_entry, relative, when


def test_raw_html_is_text() -> None:
    html = str(markdown("<script>alert(1)</script> <img src=x onerror=alert(1)> <svg onload=alert(1)>"))
    assert "<script" not in html and "<img" not in html and "<svg" not in html
    assert "&lt;script&gt;" in html and "&lt;img src=x onerror=alert(1)&gt;" in html


def test_links_get_rel_and_bad_schemes_are_no_links() -> None:
    html = str(markdown("[ok](https://example.org/a) [bad](javascript:alert(1)) [data](data:text/html,x)"))
    assert '<a href="https://example.org/a" rel="noopener nofollow">ok</a>' in html
    assert "javascript:" not in html.split("[bad]")[0] and 'href="javascript' not in html
    assert 'href="data:' not in html


def test_a_threads_name_is_read_from_the_bodys_start(monkeypatch: pytest.MonkeyPatch) -> None:
    """The name is parsed inside each notifying post's write, once per post: a root of 16,000
    characters of links took some 50 ms whole, on every mention in its thread. A name past a
    long code block is none, as of a body that is only one."""
    parsed: list[int] = []
    parse = markdown_module._md.parse

    def counted(text: str, *args: Any) -> Any:
        parsed.append(len(text))
        return parse(text, *args)

    monkeypatch.setattr(markdown_module._md, "parse", counted)
    assert first_line("[see this](https://example.org/a) " * 470) == "see this " * 6 + "see t…"
    assert first_line("```\n" + "x = 1\n" * 2000 + "```\n\nafter the code") == ""
    assert first_line("\n\n# **Build** `fails`\nsecond line") == "Build fails"
    assert max(parsed) <= 1000


def test_images_are_not_loaded_and_code_is_monospaced() -> None:
    html = str(markdown("![x](https://tracker.example/p.png)\n\n```\nrm -rf /\n```"))
    assert "<img" not in html
    assert "<pre><code>rm -rf /\n</code></pre>" in html


def test_snippets_mark_hits_and_escape_the_rest() -> None:
    assert str(highlight("a **deploy** <b>x</b>")) == "a <mark>deploy</mark> &lt;b&gt;x&lt;/b&gt;"
    # Markdown escapes are the text's own characters, never marks
    assert str(highlight(r"2 \*\* 8 \\ **deploy** \*x")) == r"2 ** 8 \ <mark>deploy</mark> *x"
    assert str(highlight("**cut off")) == "<mark>cut off</mark>"  # a mark never left open


def test_claim_lines() -> None:
    assert claim_line(None) == "open"
    assert claim_line({"state": "open", "holder": None}) == "open"
    assert claim_line({"state": "done", "holder": "pb"}) == "done"
    assert claim_line(
        {"state": "claimed", "holder": "box3", "claimed_at": "2000-01-01T00:00:00Z"}
    ).startswith("claimed by box3 for ")
    just = {"state": "claimed", "holder": "fb", "claimed_at": iso(datetime.now(UTC))}
    assert claim_line(just) == "claimed by fb just now"  # not "for 0 s", right after a hand-off


def test_times_in_words_past_and_future() -> None:
    now = datetime(2026, 12, 4, 12, 0, 0, tzinfo=UTC)
    said = {
        seconds: relative(now - timedelta(seconds=seconds), now)
        for seconds in (0, 9, 10, 59, 60, 3599, 3600, 86399, 86400 * 3, -9, -150, -7200)
    }
    assert said == {
        0: "just now",
        9: "just now",
        10: "10 s ago",
        59: "59 s ago",
        60: "1 min ago",
        3599: "59 min ago",
        3600: "1 h ago",
        86399: "23 h ago",
        86400 * 3: "3 d ago",
        -9: "just now",
        -150: "in 2 min",
        -7200: "in 2 h",
    }


def test_a_time_is_one_element_with_the_exact_time_and_no_markup_from_its_fallback() -> None:
    html = str(when("2026-12-04T03:04:05.123+01:00"))
    assert html.startswith('<time datetime="2026-12-04T02:04:05Z" title="2026-12-04 02:04:05 UTC">')
    assert html.endswith(" ago</time>")
    assert str(when(None, "<never>")) == "&lt;never&gt;"
    assert str(when("")) == ""


def test_a_log_line_shows_on_one_line_in_its_own_order_whatever_it_holds() -> None:
    """A log's values are its keeper's text: a line break in the event, a level or a key made a
    second line that read as the daemon's own, a bidirectional override reordered what follows,
    and a time past the calendar's end (in UTC) failed the whole page."""
    line = json.dumps(
        {
            "at": "0001-01-01T00:00:00+01:00",
            "level": "info\n12:00:00 error",
            "event": "ok\r\n12:00:01 fake_event",
            "a\nb": "c",
            "word": "abc\u202edef",
            "spaced": "x \u2028y",
        }
    )
    entry = log_entry(line, "pb")
    assert entry is not None and entry.at == "0001-01-01T00:00:00+01:00"
    parts = [entry.at, entry.stamp, entry.level, entry.message, *(k + v for k, v in entry.fields)]
    assert all(part.isprintable() for part in parts), parts
    assert entry.message == "ok\\r\\n12:00:01 fake_event" and entry.level == "info\\n12:00:00 error"
    assert dict(entry.fields) == {"a\\nb": "c", "word": '"abc\\u202edef"', "spaced": '"x \\u2028y"'}


def test_a_heading_line_is_a_bodys_first_line_without_its_markdown() -> None:
    assert heading_line("# Design notes\n\n## Section 0 Some **bold**") == "Design notes"
    assert heading_line("```python\ndef f0(x):\n    return x\n```") == "python def f0(x): return x"
    assert heading_line("x" * 100) == "x" * 79 + "…"
