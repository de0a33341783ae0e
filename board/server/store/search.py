"""Full-text queries, said once and written in each database's own syntax.

A search is a list of words, each maybe a prefix, that must all match (a reader's
search) or of which any may (the knowledge pack's ranked pick). SQLite reads it as
an FTS5 query; PostgreSQL as a ``tsquery`` for ``to_tsquery('simple', ...)``.
Every word is quoted, so nothing a reader types is taken as an operator.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Terms:
    words: tuple[tuple[str, bool], ...]  # (word, is a prefix)
    any: bool = False  # any word may match, instead of every one

    def fts5(self) -> str:
        quoted = ['"' + word.replace('"', '""') + ('"*' if prefix else '"') for word, prefix in self.words]
        return (" OR " if self.any else " ").join(quoted)

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


#: What PostgreSQL's [[:punct:]] is in the C locale: every ASCII punctuation mark.
_PUNCTUATION = re.compile(r"[!-/:-@\[-`{-~]+")


def _lexeme(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "''") + "'"
