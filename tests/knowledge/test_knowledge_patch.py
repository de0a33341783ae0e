"""PATCH: a unified diff against a named revision applies whole or not at all."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from board.server.errors import PatchFailed
from board.server.services.knowledge.text import apply_diff, make_diff
from tests.support.kb_support import World
from tests.support.refusals import refused

BASE = "".join(f"line {i}\n" for i in range(1, 21))


def unified(old: str, new: str) -> str:
    return make_diff(old, new, "a/doc.md", "b/doc.md")


async def test_a_patch_applies_every_hunk(world: World) -> None:
    await world.bot.put_document("p.md", BASE, 0, "r")
    new = BASE.replace("line 2\n", "line two\n").replace("line 18\n", "line eighteen\nline 18b\n")
    diff = unified(BASE, new)
    assert diff.count("@@ -") == 2
    result = await world.bot.patch_document("p.md", diff, 1, "two hunks")
    assert result["revision"] == 2
    assert (await world.bot.document("p.md"))["body"] == new


async def test_one_failing_hunk_changes_nothing(world: World) -> None:
    await world.bot.put_document("p.md", BASE, 0, "r")
    good = unified(BASE, BASE.replace("line 2\n", "line two\n"))
    bad_context = unified(BASE, BASE.replace("line 18\n", "line eighteen\n")).replace(
        " line 17\n", " line 71\n"
    )
    diff = good + "".join(bad_context.splitlines(keepends=True)[2:])
    error = await refused(
        world.bot.patch_document("p.md", diff, 1, "x"), "PATCH_FAILED", unchanged=world.board
    )
    assert error.status == 409 and error.details["hunk"] == 2 and error.details["revision"] == 1
    assert "line 71" not in error.message  # the refusal never echoes document text
    assert (await world.bot.document("p.md"))["revision"] == 1
    beyond = "@@ -40,1 +40,1 @@\n-line 40\n+line forty\n"
    await refused(world.bot.patch_document("p.md", beyond, 1, "x"), "PATCH_FAILED", unchanged=world.board)
    overlap = "@@ -3,1 +3,1 @@\n-line 3\n+3\n@@ -2,1 +2,1 @@\n-line 2\n+2\n"
    await refused(world.bot.patch_document("p.md", overlap, 1, "x"), "PATCH_FAILED", unchanged=world.board)


async def test_a_patch_is_against_its_base_revision_only(world: World) -> None:
    await world.bot.put_document("p.md", BASE, 0, "r")
    await world.peer.put_document("p.md", BASE + "line 21\n", 1, "append")
    diff = unified(BASE, BASE.replace("line 5\n", "line five\n"))
    error = await refused(
        world.bot.patch_document("p.md", diff, 1, "late"), "VERSION_CONFLICT", unchanged=world.board
    )
    assert error.details["current_revision"] == 2
    fixed = await world.bot.patch_document("p.md", diff, 2, "rebased")  # still applies to revision 2
    assert fixed["revision"] == 3
    assert (await world.bot.document("p.md"))["body"] == BASE.replace("line 5\n", "line five\n") + "line 21\n"


async def test_malformed_diffs_are_invalid_arguments(world: World) -> None:
    await world.bot.put_document("p.md", BASE, 0, "r")
    for diff in (
        "",
        "not a diff\n",
        "--- a\n+++ b\n",
        "@@ -1,2 +1,2 @@\n line 1\n",
        "@@ -1 +1 @@\n*line 1\n",
        "@@ -1 +1 @@\n-line 1\n+line one\n--- a/other.md\n+++ b/other.md\n@@ -1 +1 @@\n-x\n+y\n",
        "@@ -1,1 +1,1 @@\n-line 1\n-line 2\n+x\n",
    ):
        await refused(
            world.bot.patch_document("p.md", diff, 1, "x"), "INVALID_ARGUMENT", unchanged=world.board
        )


async def test_patch_creates_with_base_zero_and_respects_missing_newlines(world: World) -> None:
    body = "# New\nno newline at the end"
    await world.bot.patch_document("n.md", unified("", body), 0, "create by patch")
    assert (await world.bot.document("n.md"))["body"] == body
    with_newline = body + "\n"
    await world.bot.patch_document("n.md", unified(body, with_newline), 1, "end the line")
    assert (await world.bot.document("n.md"))["body"] == with_newline
    # the marker counts: a diff whose old side lacks the final newline does not match one that has it
    stale = unified(body, with_newline + "more\n")
    assert "-no newline at the end\n\\ No newline at end of file\n" in stale
    await refused(world.bot.patch_document("n.md", stale, 2, "x"), "PATCH_FAILED", unchanged=world.board)


async def test_the_diff_route_gives_a_patch_that_applies(world: World) -> None:
    await world.bot.put_document("d.md", BASE, 0, "r")
    await world.bot.put_document("d.md", BASE.replace("line 9\n", "nine\n") + "tail", 1, "r")
    diff = (await world.bot.document_diff("d.md", from_revision=1, to_revision=2))["diff"]
    await world.bot.put_document("e.md", BASE, 0, "r")
    await world.bot.patch_document("e.md", diff, 1, "same change")
    assert (await world.bot.document("e.md"))["body"] == (await world.bot.document("d.md"))["body"]


async def test_a_patch_over_the_size_limit_is_refused(world: World) -> None:
    await world.bot.put_document("big.md", "a\n", 0, "r")
    diff = "@@ -1 +1,2 @@\n a\n+" + "x" * 200_000 + "\n"
    await refused(world.bot.patch_document("big.md", diff, 1, "r"), "LIMIT_EXCEEDED", unchanged=world.board)


lines = st.lists(st.text(alphabet="ab \t#é", max_size=6), max_size=12)


@settings(max_examples=300, deadline=None)
@given(old=lines, new=lines, old_end=st.booleans(), new_end=st.booleans())
def test_make_and_apply_round_trip(old: list[str], new: list[str], old_end: bool, new_end: bool) -> None:
    a = "\n".join(old) + ("\n" if old_end and old else "")
    b = "\n".join(new) + ("\n" if new_end and new else "")
    diff = make_diff(a, b, "a", "b")
    if a == b:
        assert diff == ""
        return
    assert apply_diff(a, diff, 1) == b


@settings(max_examples=300, deadline=None)
@given(old=lines, new=lines, pick=st.integers(min_value=0))
def test_a_diff_does_not_apply_when_a_line_it_covers_changed(
    old: list[str], new: list[str], pick: int
) -> None:
    a, b = ("\n".join(x) + "\n" for x in (old, new))
    diff = make_diff(a, b, "a", "b")
    covered: list[int] = []
    for header in re.finditer(r"^@@ -(\d+)(?:,(\d+))?", diff, re.M):
        start, length = int(header.group(1)), int(header.group(2) or 1)
        covered += range(start, start + length)
    if not covered:
        return
    line = covered[pick % len(covered)]
    changed = a.split("\n")
    changed[line - 1] += "X"
    with pytest.raises(PatchFailed):
        apply_diff("\n".join(changed), diff, 1)
