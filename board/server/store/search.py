"""Full-text queries, said once and written in each database's own syntax.

A search is a list of words, each maybe a prefix, that must all match (a reader's
search) or of which any may (the knowledge pack's ranked pick). SQLite reads it as
an FTS5 query; PostgreSQL as a ``tsquery`` for ``to_tsquery('simple', ...)``.
Every word is quoted, so nothing a reader types is taken as an operator.

A reader's search of messages ranks a window: the newest :data:`WINDOW` matches (before
its ``before``), by :func:`relevance`. Finding them walks the index newest first and
stops, so a word in every message reads at most a window's rows, however many it has on
the board; ranking every match instead (FTS5's ``bm25`` counts a word's every occurrence
on the board for its weight) made the most common words the slowest. Older matches are
the next window's. Only the page shown gets snippets (:func:`snippet`, in the service).

What a full window still costs over a nearly empty one is its rows: the index's walk
(see migration 0030 for the pages it skips by), each body read, and each scanned for the
words. :func:`relevance` scans the window's bodies joined, once per word, in lower case
when they are ASCII, so that last part is a few C calls rather than one per body.
"""

from __future__ import annotations

import bisect
import functools
import math
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass

#: How many of the newest matches a search ranks (see the module's docstring).
WINDOW = 200


@dataclass(frozen=True)
class Terms:
    words: tuple[tuple[str, bool], ...]  # (word, is a prefix)
    any: bool = False  # any word may match, instead of every one

    def fts5(self) -> str:
        quoted = ['"' + word.replace('"', '""') + ('"*' if prefix else '"') for word, prefix in self.words]
        return (" OR " if self.any else " ").join(quoted)

    def fts5_in(self, workspace_ids: Sequence[int] | None) -> str:
        """The query over ``messages_fts``: the words in the body, and the workspace among
        these (``None``: any), so that the index walks only their matches."""
        body = "body : (" + self.fts5() + ")"
        if workspace_ids is None:
            return body
        return "ws : (" + " OR ".join(f'"w{int(i)}"' for i in workspace_ids) + ") AND " + body

    def tsquery(self) -> str:
        """Each word read as the index reads a text (:func:`index_words`): a word of several
        parts is a phrase of them, as FTS5 reads a quoted ``"db.py"``."""
        phrases = []
        for word, prefix in self.words:
            parts = [_lexeme(part) for part in index_words(word)]
            if not parts:
                continue
            if prefix:
                parts[-1] += ":*"
            phrases.append(parts[0] if len(parts) == 1 else "(" + " <-> ".join(parts) + ")")
        return (" | " if self.any else " & ").join(phrases)

    def patterns(self, lowered: bool = False) -> list[re.Pattern[str]]:
        """Each word as a pattern over text (folded as the index folds it, :func:`_fold`);
        ``lowered``: over ASCII text in lower case, for ASCII words (:meth:`ascii`), which a
        pattern that ignores no case scans several times faster."""
        return [_phrase(word, prefix, lowered) for word, prefix in self.words]

    def ascii(self) -> bool:
        return all(word.isascii() for word, _ in self.words)


def index_words(text: str) -> list[str]:
    """The words PostgreSQL's index reads in ``text`` (``board_text``, migration 0033), in the
    same steps: case folded (a final sigma a sigma), accents taken off (NFD, then the marks
    U+0300 to U+036F), split at every character that is neither a letter nor a decimal digit
    (ICU's ``[[:alnum:]]``, which Python's ``\\w`` is not: it also takes ``²`` and ``_``). Equal
    for every character both Python's and the server's Unicode know; one only the newer
    knows (a script added since) is a letter to one and a break to the other."""
    if text.isascii():
        return _ASCII_WORD.findall(text.lower())
    folded = _COMBINING_DIACRITICS.sub("", unicodedata.normalize("NFD", text.lower()))
    folded = folded.replace(_FINAL_SIGMA, _SIGMA)
    return "".join(ch if _letter_or_digit(ch) else " " for ch in folded).split()


def _letter_or_digit(ch: str) -> bool:
    category = unicodedata.category(ch)
    return category[0] == "L" or category == "Nd"


_ASCII_WORD = re.compile(r"[a-z0-9]+")
_COMBINING_DIACRITICS = re.compile("[\u0300-\u036f]+")
_FINAL_SIGMA, _SIGMA = "\u03c2", "\u03c3"


def _lexeme(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "''") + "'"


def relevance(terms: Terms, bodies: Sequence[str]) -> list[float]:
    """Each body's BM25 score for the terms, weighing each word by how many of these
    bodies hold it (the window is the collection) and a body's length in characters:
    higher is more relevant."""
    texts = [body if body.isascii() else _fold(body)[0] for body in bodies]
    total = len(texts)
    if not total:
        return []
    counts = _counts(terms, texts)
    average = sum(map(len, texts)) / total
    norms = [_K1 * (1 - _B + _B * len(text) / average) if average else _K1 for text in texts]
    parts = []  # each word's part of each body's score
    for row in counts:
        holding = total - row.count(0)
        weight = math.log((total - holding + 0.5) / (holding + 0.5) + 1)
        parts.append(
            [
                weight * tf * (_K1 + 1) / (tf + norm) if tf else 0.0
                for tf, norm in zip(row, norms, strict=True)
            ]
        )
    return parts[0] if len(parts) == 1 else [sum(score) for score in zip(*parts, strict=True)]


def _counts(terms: Terms, texts: list[str]) -> list[list[int]]:
    """How often each word stands in each text (of one or more), one list per word. The
    texts are joined and scanned once per word, each match replaced by a mark, and the marks
    counted per text: a few C calls for the window rather than one scan per body and word.
    A pattern never spans the join (:func:`_phrase`); a text's own NUL or mark is read as
    the space it is to the index."""
    joined = _JOIN.join(texts)
    if joined.count(_JOIN) != len(texts) - 1 or _MARK in joined:
        joined = _JOIN.join(text.replace(_JOIN, " ").replace(_MARK, " ") for text in texts)
    lowered = joined.isascii() and terms.ascii()
    if lowered:
        joined = joined.lower()
    return [
        [part.count(_MARK) for part in pattern.sub(_MARK, joined).split(_JOIN)]
        for pattern in terms.patterns(lowered)
    ]


_JOIN, _MARK = "\x00", "\x01"  # control characters: validation keeps them out of bodies


_K1, _B = 1.2, 0.75  # BM25's usual constants, as FTS5's bm25() has them


@functools.lru_cache(maxsize=1024)
def _phrase(word: str, prefix: bool, lowered: bool = False) -> re.Pattern[str]:
    """Where ``word`` stands in a text as the index reads it: its parts split where the
    index splits words (FTS5's unicode61, PostgreSQL's board_words), whole words but a
    prefix's last, in any case (``lowered``: in the lower case the text is already in).

    The first part comes first and what stands before it is looked at after, so the scan
    skips to the part's letters instead of trying the look-behind at every character; the
    gaps between parts never take a NUL (``_counts`` joins texts with one)."""
    parts = [re.escape(part.lower() if lowered else part) for part in word_parts(word)]
    if not parts:
        return _NEVER
    tail = r"[^\W_]*" if prefix else r"(?![^\W_])"
    first = parts[0] + r"(?<![^\W_]" + parts[0] + ")"
    return re.compile(r"(?:[^\w\x00]|_)+".join([first, *parts[1:]]) + tail, 0 if lowered else re.IGNORECASE)


_NEVER = re.compile(r"(?!)")


def word_parts(word: str) -> list[str]:
    """The words the index reads in ``word`` (``db.py``: ``db``, ``py``), folded first: a
    combining mark typed apart is no word break."""
    return [part for part in re.split(r"[\W_]+", _fold(word)[0]) if part]


def _fold(text: str) -> tuple[str, list[int]]:
    """Text as the index reads it, without diacritics (unicode61's default), and where
    each of its characters came from in ``text``."""
    folded, origin = [], []
    for at, ch in enumerate(text):
        for part in unicodedata.normalize("NFKD", ch):
            if not unicodedata.combining(part):
                folded.append(part)
                origin.append(at)
    return "".join(folded), origin


def snippet(terms: Terms, text: str, words: int = 16, *, cut: bool = False) -> str:
    """The stretch of ``text`` of at most ``words`` words that holds most of the search's
    matches, each match in ``**``, with ``…`` where the text goes on (as FTS5's
    ``snippet()`` has it, for every store alike): Markdown, the text's own ``*`` and ``\\``
    escaped (``\\*``, ``\\\\``). ``cut``: ``text`` is the start of a longer one
    (:func:`start_of`), so it goes on past its end too."""
    folded, origin = (text, None) if text.isascii() else _fold(text)
    lowered = origin is None and terms.ascii()
    scanned = (folded.lower() if lowered else folded).replace(_JOIN, " ")  # as _counts reads it
    spans = sorted(found.span() for pattern in terms.patterns(lowered) for found in pattern.finditer(scanned))
    if origin is not None:  # a match ends where the next folded character begins: with its marks
        spans = [(origin[a], _after(origin, b, len(text))) for a, b in spans if b > a]
    tokens: list[tuple[int, int]] = []
    for found in _WORD.finditer(text):
        a, b = found.start(), _with_marks(text, found.end())
        if tokens and tokens[-1][1] == a:  # a combining mark inside a word: one word to the index
            tokens[-1] = (tokens[-1][0], b)
        else:
            tokens.append((a, b))
    if not tokens:  # only characters no word here is made of (an emoji the index counts as one)
        tokens = [(0, len(text))]  # the text as one word: cut and escaped all the same
    first = 0
    if len(tokens) > words:
        starts = [a for a, _ in spans]
        best = -1
        for at in range(len(tokens) - words + 1):
            held = bisect.bisect_left(starts, tokens[at + words - 1][1]) - bisect.bisect_left(
                starts, tokens[at][0]
            )
            if held > best:
                first, best = at, held
    last = min(len(tokens), first + words) - 1
    begin, end = tokens[first][0], tokens[last][1]
    whole = (begin, end)
    if end - begin > SNIPPET_CHARS:  # long words: cut to characters too, a little before the first match
        marks = [a for a, b in spans if a >= begin and b <= end]
        begin = max(begin, min((marks[0] if marks else begin) - SNIPPET_CHARS // 4, end - SNIPPET_CHARS))
        end = begin + SNIPPET_CHARS
    out, at = [], begin
    for a, b in spans:
        if a < at or a >= end or b > whole[1]:
            continue
        b = min(b, end)
        out += [_escaped(text[at:a]), "**", _escaped(text[a:b]), "**"]
        at = b
    out.append(_escaped(text[at:end]))
    before = first > 0 or begin > whole[0]
    after = last < len(tokens) - 1 or end < whole[1] or cut
    return ("…" if before else "") + "".join(out) + ("…" if after else "")


def start_of(text: str, at_most: int) -> tuple[str, bool]:
    """The first ``at_most`` characters of ``text`` for :func:`snippet` to cut from, without
    a word the limit falls inside (with its combining marks, which belong to it) unless it is
    the only one; and whether that is less than the whole text."""
    if len(text) <= at_most:
        return text, False
    head = text[:at_most]
    if _continues_word(text[at_most]):
        kept = len(head)
        while kept and _continues_word(head[kept - 1]):
            kept -= 1
        head = head[:kept] if _WORD.search(head, 0, kept) else head  # the only word: cut inside it
    return head, True


def _continues_word(ch: str) -> bool:
    return bool(_WORD.match(ch)) or bool(unicodedata.combining(ch))


def _escaped(text: str) -> str:
    """``text`` with its own ``\\`` and ``*`` escaped as Markdown escapes them, so that only a
    snippet's marks read as ``**`` (a body's own ``**bold**`` or ``2 ** 8`` would pass for one)."""
    return text.replace("\\", "\\\\").replace("*", "\\*") if "*" in text or "\\" in text else text


def _with_marks(text: str, end: int) -> int:
    """``end`` moved past the combining marks that follow it: they belong to the word before."""
    while end < len(text) and unicodedata.combining(text[end]):
        end += 1
    return end


def _after(origin: list[int], end: int, length: int) -> int:
    """Where in a text of ``length`` a folded match ending at ``end`` ends: past the combining
    marks the fold took off its last letter, never inside a character it split in several."""
    return length if end == len(origin) else max(origin[end - 1] + 1, origin[end])


#: The most characters of text a snippet shows, however long its sixteen words are.
SNIPPET_CHARS = 200


#: How the database marks a match in a snippet it makes (:func:`bounded` writes them as ``**``):
#: control characters, which validation keeps out of every text, so none is the text's own.
START, STOP = "\x02", "\x03"
_MARKS = re.compile("([\x02\x03])")


def bounded(marked: str) -> str:
    """A snippet the database made (its matches between :data:`START` and :data:`STOP`, at
    most sixteen words) as :func:`snippet` writes one: cut to :data:`SNIPPET_CHARS` of text a
    little before the first match, a match the cut falls inside closed or opened again, the
    text's own ``*`` and ``\\`` escaped and each match in ``**``."""
    begin, end = 0, len(marked)
    if len(marked) > SNIPPET_CHARS:
        first = marked.find(START)
        begin = max(0, min(first - SNIPPET_CHARS // 4 if first > 0 else 0, len(marked) - SNIPPET_CHARS))
        end = begin + SNIPPET_CHARS
    inside = marked.count(START, 0, begin) > marked.count(STOP, 0, begin)  # begins inside a match
    out = ["**"] if inside else []
    for piece in [*_MARKS.split(marked[begin:end]), STOP]:  # ends inside one: closed
        if piece not in (START, STOP):
            out += [_escaped(piece)] if piece else []
        elif inside != (piece == START):  # a stray mark of the text's own is dropped
            inside = not inside
            if not inside and out[-1] == "**":  # a match the cut left empty is no match
                out.pop()
            else:
                out.append("**")
    return ("…" if begin else "") + "".join(out) + ("…" if end < len(marked) else "")


_WORD = re.compile(r"[^\W_]+")
