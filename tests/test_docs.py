"""The docs stay true to the tree: links, anchors and named files exist, lists follow the code."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from bench.__main__ import SCENARIOS
from board.server.errors import ERROR_CODES
from board.server.pages import PAGE_MODULES
from tests.realcli.clis import PINNED

ROOT = Path(__file__).parent.parent
DOCS = [ROOT / "README.md", ROOT / "bench" / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^```.*?^```", re.M | re.S)
LINK = re.compile(r"\]\(([^)\s]+)\)")
# A file of the tree named in backticks: `tests/postgres/test_pg_schema.py`, `bench/README.md`.
NAMED_FILE = re.compile(r"`((?:board|bench|docs|routines|scripts|tests)/[\w./-]+\.(?:py|md|sql|txt|sh))`")
PLACEHOLDER = re.compile(r"(^|/)[A-Z]+_")  # `migrations/NNNN_what.sql`: a name to choose, not a file
# A kept bench record quoted as the source of a figure: `results/2026-12-01T170716Z-post.json`.
BENCH_RECORD = re.compile(r"\bresults/([\w-]+\.json)")


def anchors(doc: Path) -> set[str]:
    """The anchors GitHub gives a document's headings: lower case, punctuation dropped, spaces to dashes."""
    found: set[str] = set()
    for heading in re.findall(r"^#{1,6} +(.+?) *$", FENCE.sub("", doc.read_text(encoding="utf-8")), re.M):
        slug = re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")
        n = 1
        name = slug
        while name in found:  # a repeated heading gets -1, -2, ...
            name = f"{slug}-{n}"
            n += 1
        found.add(name)
    return found


def problems(doc: Path) -> list[str]:
    text = FENCE.sub("", doc.read_text(encoding="utf-8"))
    found = []
    for target in LINK.findall(text):
        if re.match(r"[a-z]+:", target):  # http:, mailto:
            continue
        path, _, anchor = target.partition("#")
        linked = (doc.parent / path) if path else doc
        if not linked.exists():
            found.append(f"{target}: no such file")
        elif anchor and linked.suffix == ".md" and anchor not in anchors(linked):
            found.append(f"{target}: no such heading")
    for name in NAMED_FILE.findall(text):
        if not PLACEHOLDER.search(name) and not (ROOT / name).exists():
            found.append(f"`{name}`: no such file")
    for record in BENCH_RECORD.findall(text):
        if not (ROOT / "bench" / "results" / record).exists():
            found.append(f"results/{record}: no such bench record")
    return found


@pytest.mark.parametrize("doc", DOCS, ids=lambda doc: str(doc.relative_to(ROOT)))
def test_links_anchors_and_named_files_resolve(doc: Path) -> None:
    assert problems(doc) == []


def test_a_broken_link_or_anchor_is_found(tmp_path: Path) -> None:
    (tmp_path / "b.md").write_text("# Some heading\n\n## Some heading\n", encoding="utf-8")
    doc = tmp_path / "a.md"
    doc.write_text(
        "[ok](b.md#some-heading) [ok](b.md#some-heading-1) [bad](b.md#other) [bad](c.md) "
        "`tests/no_such_test.py` `results/2026-01-01T000000Z-post.json`\n```\n[fenced](d.md)\n```\n",
        encoding="utf-8",
    )
    assert problems(doc) == [
        "b.md#other: no such heading",
        "c.md: no such file",
        "`tests/no_such_test.py`: no such file",
        "results/2026-01-01T000000Z-post.json: no such bench record",
    ]


def test_readme_layout_names_every_bench_scenario() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    line = re.search(r"python -m bench ([\w|]+\|\s+[\w|]+)", readme)
    assert line is not None
    assert re.split(r"\|\s*", line.group(1)) == [*SCENARIOS, "all", "report"]


def test_llms_txt_names_every_error_code_with_its_status() -> None:
    text = " ".join((ROOT / "board" / "server" / "docs" / "llms.txt").read_text(encoding="utf-8").split())
    for code, status in ERROR_CODES.items():
        assert re.search(rf"\b{code}\b[^0-9]*?\b{status}\b", text), code


def test_pages_md_names_every_page_module() -> None:
    intro = (ROOT / "docs" / "pages.md").read_text(encoding="utf-8").split("\n## ", 1)[0]
    for module in PAGE_MODULES:
        assert f"`{module.__name__.rsplit('.', 1)[1]}.py`" in intro, module.__name__


def test_the_tested_cli_versions_are_the_pinned_ones() -> None:
    harnesses = (ROOT / "docs" / "harnesses.md").read_text(encoding="utf-8")
    fakes = (ROOT / "tests" / "fakes" / "README.md").read_text(encoding="utf-8")
    for cli in PINNED.values():
        assert re.search(
            rf"^\| {cli.harness} \| [^|]* {re.escape(cli.version)} \(`{re.escape(cli.package)}`\)",
            harnesses,
            re.M,
        )
        assert cli.version in fakes, cli.harness
