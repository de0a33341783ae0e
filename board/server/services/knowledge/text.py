"""Text rules of knowledge documents: paths, bodies, titles, parts, and unified diffs.

Pure functions, no database: what a path or body may be, what a document's
title and excerpt are, which lines a ``lines=`` or ``section=`` read returns,
and unified diffs both ways. Applying a diff is strict: every hunk must apply
at the line it names with its context matching exactly, or nothing changes.
"""

from __future__ import annotations

import difflib
import re
from collections import Counter
from dataclasses import dataclass, field

from ...errors import InvalidArgument, LimitExceeded, PatchFailed
from ...store.search import Terms
from ...validation import figure, the

MAX_PATH = 200
MAX_BODY_BYTES = 200_000
PATH_PATTERN = r"(?:[A-Za-z0-9._-]+/)*[A-Za-z0-9._-]+\.md"
PREFIX_PATTERN = r"[A-Za-z0-9._/-]{1,200}"
TITLE_CHARS = 120
EXCERPT_CHARS = 240

_PATH = re.compile(PATH_PATTERN)
# Tab and newline are the only control characters a body may hold (C0, DEL and C1 are refused).
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_HEADING = re.compile(r"^(#{1,6})[ \t]+(.*?)[ \t]*(?:[ \t]#+)?[ \t]*$")
_FENCE = re.compile(r"^[ ]{0,3}(```|~~~)")
_WORD = re.compile(r"[^\W_]{3,}", re.UNICODE)
_COMMON_WORDS = (
    "the and for are but not you all any can had her was one our out day get has him his how man new "
    "now old see two way who boy did its let put say she too use that with have this will your from "
    "they know want been good much some time very when come here just like long make many more only "
    "over such take than them well were what into then there these would about could other which "
    "their should after where while please also"
)
_STOPWORDS = frozenset(_COMMON_WORDS.split())


def check_path(path: str) -> str:
    """A document path, or INVALID_ARGUMENT saying what is wrong with it."""
    if not path or len(path) > MAX_PATH:
        raise InvalidArgument(f"A document path has 1-{MAX_PATH} characters.", field="path")
    segments = path.split("/")
    if any(segment in ("", ".", "..") for segment in segments):
        raise InvalidArgument(
            "A document path has no empty, '.' or '..' segment (no leading, trailing or double '/').",
            field="path",
        )
    if not _PATH.fullmatch(path):
        raise InvalidArgument(
            "A document path is '/'-separated segments of [A-Za-z0-9._-] ending in .md "
            f"(like decisions/decisions.md); got {path[:80]!r}.",
            field="path",
        )
    return path


def check_body(body: str, field_name: str = "body") -> str:
    """A document body: LF line ends, no control characters but tab and newline, ≤ 200,000 bytes."""
    body = body.replace("\r\n", "\n")
    found = _CONTROL.search(body)
    if found:
        raise InvalidArgument(
            f"{the(field_name)} contains the control character U+{ord(found.group()):04X}; "
            "only tab and newline are allowed.",
            field=field_name,
        )
    size = len(body.encode("utf-8"))
    if size > MAX_BODY_BYTES:
        raise LimitExceeded(
            f"The document would be {figure(size)} bytes of UTF-8; "
            f"at most {figure(MAX_BODY_BYTES)} are allowed. "
            "Split it into several documents.",
            field=field_name,
            limit=MAX_BODY_BYTES,
        )
    return body


def split_lines(text: str) -> list[str]:
    """Lines with their ``\\n`` (the last may have none); only ``\\n`` ends a line."""
    parts = text.split("\n")
    lines = [part + "\n" for part in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


def headings(body: str) -> list[tuple[int, int, str]]:
    """ATX headings outside fenced code: (line index, level, text)."""
    found = []
    fence: str | None = None
    for number, line in enumerate(body.split("\n")):
        opened = _FENCE.match(line)
        if opened:
            marker = opened.group(1)
            fence = None if fence == marker else (fence or marker)
            continue
        if fence is not None:
            continue
        match = _HEADING.match(line)
        if match:
            found.append((number, len(match.group(1)), match.group(2).strip()))
    return found


def title_of(body: str) -> str:
    """The first heading, else the first non-empty line."""
    found = headings(body)
    if found:
        return found[0][2][:TITLE_CHARS]
    for line in body.split("\n"):
        if line.strip():
            return line.strip()[:TITLE_CHARS]
    return ""


def excerpt_of(body: str) -> str:
    """The opening text after the title, on one line."""
    lines = body.split("\n")
    found = headings(body)
    if found and found[0][0] < len(lines):
        lines = lines[found[0][0] + 1 :]
    text = " ".join(" ".join(lines).split())
    return text if len(text) <= EXCERPT_CHARS else text[: EXCERPT_CHARS - 1] + "…"


def section(body: str, heading: str) -> tuple[int, int, str] | None:
    """Lines (1-based, inclusive) of the section under ``heading`` (case-insensitive) and its text."""
    wanted = " ".join(heading.split()).casefold()
    found = headings(body)
    total = len(split_lines(body))
    for i, (number, level, text) in enumerate(found):
        if " ".join(text.split()).casefold() != wanted:
            continue
        end = total
        for later_number, later_level, _ in found[i + 1 :]:
            if later_level <= level:
                end = later_number
                break
        return number + 1, end, text
    return None


def parse_lines(spec: str, total: int) -> tuple[int, int]:
    """``a-b``, ``a-`` or ``a`` (1-based, inclusive) clamped to the document."""
    match = re.fullmatch(r"(\d{1,9})(?:-(\d{0,9}))?", spec)
    if not match:
        raise InvalidArgument("lines is a-b, a- or a (1-based line numbers).", field="lines")
    first = int(match.group(1))
    last = first if match.group(2) is None else int(match.group(2) or total)
    if first < 1 or last < first:
        raise InvalidArgument("lines is a-b with 1 <= a <= b.", field="lines")
    if first > max(total, 1):
        raise InvalidArgument(f"The document has {total} lines; ask for lines 1-{total}.", field="lines")
    return first, min(last, total)


def lines_of(body: str, first: int, last: int) -> str:
    return "".join(split_lines(body)[first - 1 : last])


# -- unified diffs ----------------------------------------------------------------------

NO_NEWLINE = "\\ No newline at end of file"


def make_diff(old: str, new: str, old_label: str, new_label: str) -> str:
    """A unified diff (3 lines of context) that :func:`apply_diff` takes back."""
    out = []
    for line in difflib.unified_diff(split_lines(old), split_lines(new), old_label, new_label, n=3):
        if line.endswith("\n"):
            out.append(line)
        else:
            out.append(f"{line}\n{NO_NEWLINE}\n")
    return "".join(out)


_HUNK = re.compile(r"@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@.*")
_PREAMBLE = ("--- ", "+++ ", "diff ", "index ", "new file mode", "deleted file mode")


@dataclass
class _Hunk:
    number: int
    old_start: int
    old_len: int
    # (tag, text, ends_with_newline) for ' ', '-' and '+' lines
    ops: list[list[object]] = field(default_factory=list)


def _parse(diff: str) -> list[_Hunk]:
    lines = diff.replace("\r\n", "\n").split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    i = 0
    while i < len(lines) and not lines[i].startswith("@@"):
        if not lines[i].startswith(_PREAMBLE):
            raise InvalidArgument(
                f"diff line {i + 1} is neither a header (---, +++) nor a hunk (@@ -a,b +c,d @@).",
                field="diff",
            )
        i += 1
    hunks: list[_Hunk] = []
    while i < len(lines):
        header = _HUNK.fullmatch(lines[i])
        if header is None:
            if lines[i].startswith(_PREAMBLE):
                raise InvalidArgument("A diff patches one document; send one file's hunks.", field="diff")
            raise InvalidArgument(
                f"diff line {i + 1}: expected a hunk header '@@ -a,b +c,d @@'.", field="diff"
            )
        old_len = int(header.group(2)) if header.group(2) is not None else 1
        new_len = int(header.group(4)) if header.group(4) is not None else 1
        hunk = _Hunk(len(hunks) + 1, int(header.group(1)), old_len)
        i += 1
        seen_old = seen_new = 0
        while seen_old < old_len or seen_new < new_len:
            if i >= len(lines):
                raise InvalidArgument(
                    f"Hunk {hunk.number} ends before its {old_len} old and {new_len} new lines.",
                    field="diff",
                )
            line = lines[i]
            i += 1
            if line.startswith("\\"):
                if hunk.ops:
                    hunk.ops[-1][2] = False
                continue
            tag, text = (line[0], line[1:]) if line else (" ", "")
            if tag not in " -+":
                raise InvalidArgument(
                    f"diff line {i}: a hunk line starts with ' ', '-' or '+'; got {tag!r}.", field="diff"
                )
            seen_old += tag != "+"
            seen_new += tag != "-"
            if seen_old > old_len or seen_new > new_len:
                raise InvalidArgument(
                    f"Hunk {hunk.number} has more lines than its header (-{old_len} +{new_len}) says.",
                    field="diff",
                )
            hunk.ops.append([tag, text, True])
        while i < len(lines) and lines[i].startswith("\\"):
            if hunk.ops:
                hunk.ops[-1][2] = False
            i += 1
        hunks.append(hunk)
    if not hunks:
        raise InvalidArgument("The diff has no hunks; nothing to apply.", field="diff")
    return hunks


def apply_diff(base: str, diff: str, revision: int) -> str:
    """``base`` with every hunk of ``diff`` applied, or PATCH_FAILED naming the first that does not fit."""
    hunks = _parse(diff)
    lines = split_lines(base)
    out: list[str] = []
    pos = 0
    for hunk in hunks:
        start = hunk.old_start - 1 if hunk.old_len > 0 else hunk.old_start
        if start < pos:
            raise PatchFailed(
                f"Hunk {hunk.number} starts at line {hunk.old_start}, before the end of the hunk before it; "
                "hunks must be in order and must not overlap. Nothing changed.",
                hunk=hunk.number,
                line=hunk.old_start,
                revision=revision,
            )
        if start > len(lines):
            raise PatchFailed(
                f"Hunk {hunk.number} starts at line {hunk.old_start}, but revision {revision} has "
                f"{len(lines)} lines. Read it again, rebuild the diff, and retry. Nothing changed.",
                hunk=hunk.number,
                line=hunk.old_start,
                revision=revision,
            )
        out.extend(lines[pos:start])
        pos = start
        for tag, text, newline in hunk.ops:
            line = f"{text}\n" if newline else str(text)
            if tag == "+":
                out.append(line)
                continue
            if pos >= len(lines) or lines[pos] != line:
                raise PatchFailed(
                    f"Hunk {hunk.number} does not match line {pos + 1} of revision {revision}: "
                    "read that revision again, rebuild the diff, and retry. Nothing changed.",
                    hunk=hunk.number,
                    line=pos + 1,
                    revision=revision,
                )
            if tag == " ":
                out.append(line)
            pos += 1
    out.extend(lines[pos:])
    return "".join(out)


# -- search words ---------------------------------------------------------------------


def keywords(text: str, most: int = 12) -> list[str]:
    """The most frequent content words of a text, for a ranked OR search."""
    counts = Counter(w for w in (m.group().casefold() for m in _WORD.finditer(text)) if w not in _STOPWORDS)
    return [word for word, _ in counts.most_common(most)]


def any_of(words: list[str]) -> Terms:
    """A search matching any of ``words``."""
    return Terms(tuple((word, False) for word in words), any=True)
