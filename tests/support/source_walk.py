"""Walking the server's source for a rule's building blocks that appear outside its one home."""

from __future__ import annotations

import ast
from collections.abc import Callable, Container, Mapping
from pathlib import Path

SERVER = Path(__file__).resolve().parent.parent / "board" / "server"

Finder = Callable[[ast.AST], list[tuple[int, str]]]


def found_outside(find: Finder, home: Container[str], exempt: Mapping[str, set[str]]) -> list[str]:
    """``file:line: what`` for each hit of ``find`` in board/server but the ``home`` files.

    ``exempt`` names, per file, the hits that are known not to be the rule there.
    """
    found = []
    for path in sorted(SERVER.rglob("*.py")):
        name = path.relative_to(SERVER).as_posix()
        if name in home:
            continue
        for line, what in find(ast.parse(path.read_text(encoding="utf-8"))):
            if what not in exempt.get(name, set()):
                found.append(f"{name}:{line}: {what}")
    return found
