"""Full-text queries, said once and written in each database's own syntax.

A search is a list of words, each maybe a prefix, that must all match (a reader's
search) or of which any may (the knowledge pack's ranked pick). SQLite reads it as
an FTS5 query; PostgreSQL as a ``tsquery`` for ``to_tsquery('simple', ...)``.
Every word is quoted, so nothing a reader types is taken as an operator.

A reader's search of messages ranks a window: the newest :data:`WINDOW` matches (before
its ``before``), by :func:`relevance`. Finding them walks the index newest first and
stops, so a word in every message costs what a rare one does; ranking every match
instead (FTS5's ``bm25`` counts a word's every occurrence on the board for its weight)
made the most common words the slowest. Older matches are the next window's.
"""

from __future__ import annotations

import bisect
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
        """Each word split at ASCII punctuation, as the index is (``board_words``): a word of
        several parts is a phrase of them, as FTS5 reads a quoted ``"db.py"``."""
        phrases = []
        for word, prefix in self.words:
            parts = [_lexeme(part) for part in _PUNCTUATION.split(word) if part]
            if not parts:
                continue
            if prefix:
                parts[-1] += ":*"
            phrases.append(parts[0] if len(parts) == 1 else "(" + " <-> ".join(parts) + ")")
        return (" | " if self.any else " & ").join(phrases)

    def patterns(self) -> list[re.Pattern[str]]:
        """Each word as a pattern over text (folded as the index folds it, :func:`_fold`)."""
        return [_phrase(word, prefix) for word, prefix in self.words]


#: What PostgreSQL's [[:punct:]] is in the C locale: every ASCII punctuation mark.
_PUNCTUATION = re.compile(r"[!-/:-@\[-`{-~]+")


def _lexeme(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "''") + "'"


def relevance(terms: Terms, bodies: Sequence[str]) -> list[float]:
    """Each body's BM25 score for the terms, weighing each word by how many of these
    bodies hold it (the window is the collection) and a body's length in characters:
    higher is more relevant."""
    texts = [body if body.isascii() else _fold(body)[0] for body in bodies]
    patterns = terms.patterns()
    counts = [[len(pattern.findall(text)) for pattern in patterns] for text in texts]
    total = len(texts)
    average = sum(map(len, texts)) / total if total else 0.0
    weights = []
    for k in range(len(patterns)):
        holding = sum(1 for row in counts if row[k])
        weights.append(math.log((total - holding + 0.5) / (holding + 0.5) + 1))
    scores = []
    for text, row in zip(texts, counts, strict=True):
        norm = _K1 * (1 - _B + _B * len(text) / average) if average else _K1
        scores.append(sum(w * tf * (_K1 + 1) / (tf + norm) for w, tf in zip(weights, row, strict=True) if tf))
    return scores


_K1, _B = 1.2, 0.75  # BM25's usual constants, as FTS5's bm25() has them


def _phrase(word: str, prefix: bool) -> re.Pattern[str]:
    """Where ``word`` stands in a text as the index reads it: its parts split where the
    index splits words (FTS5's unicode61, PostgreSQL's board_words), whole words but a
    prefix's last, in any case."""
    parts = [re.escape(_fold(part)[0]) for part in re.split(r"[\W_]+", word) if part]
    tail = r"[^\W_]*" if prefix else r"(?![^\W_])"
    return re.compile(r"(?<![^\W_])" + r"[\W_]+".join(parts) + tail, re.IGNORECASE) if parts else _NEVER


_NEVER = re.compile(r"(?!)")


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


def snippet(terms: Terms, text: str, words: int = 16) -> str:
    """The stretch of ``text`` of at most ``words`` words that holds most of the search's
    matches, each match in ``**``, with ``…`` where the text goes on (as FTS5's
    ``snippet()`` has it, for every store alike)."""
    folded, origin = (text, None) if text.isascii() else _fold(text)
    spans = sorted(found.span() for pattern in terms.patterns() for found in pattern.finditer(folded))
    if origin is not None:
        spans = [(origin[a], origin[b - 1] + 1) for a, b in spans if b > a]
    tokens = [found.span() for found in _WORD.finditer(text)]
    if not tokens:
        return text
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
    out, at = [], begin
    for a, b in spans:
        if a < at or b > end:
            continue
        out += [text[at:a], "**", text[a:b], "**"]
        at = b
    out.append(text[at:end])
    return ("…" if first else "") + "".join(out) + ("…" if last < len(tokens) - 1 else "")


_WORD = re.compile(r"[^\W_]+")
