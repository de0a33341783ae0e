"""Who may do what is decided in services/actions.py only: no role check refuses anywhere else.

A role check is a test of the caller's kind (``is_human``, ``is_bot``,
``is_admin_bot``, ``is_keeper``, ``is_runner``, ``kind`` compared with a
principal's kind, or a keeper's ``machine_id`` with None) in an ``if`` that
raises: a second copy of "only a human", which is how one transport ends up
letting a bot do what another refuses. This walks the source (``ast``) of
board/server and names each one found outside the table and the known
places below.
"""

from __future__ import annotations

import ast

from tests.support.source_walk import found_outside

ROLE_TESTS = ("is_human", "is_bot", "is_admin_bot", "is_keeper", "is_runner")
KINDS = ("human", "bot", "system", "keeper")

#: Where a role check may refuse, and why it is not a second copy of an action's rule there.
ALLOWED = {
    "principal.py": "defines the roles",
    "services/actions.py": "decides who may do what",
    # Visibility: a runner names no workspace, a bot is held to its own (NOT_FOUND elsewhere).
    "services/scope.py": "decides who sees what",
    # The token's kind: a keeper's or the runner's token is refused outside its own routes
    # before any route runs; what a route's callers may do is the table's.
    "api/routing.py": "refuses a keeper's or the runner's token outside its routes",
}


def _role_test(node: ast.AST) -> str | None:
    for sub in ast.walk(node):
        if isinstance(sub, ast.Attribute) and sub.attr in ROLE_TESTS:
            return sub.attr
        if isinstance(sub, ast.Compare):
            sides = [sub.left, *sub.comparators]
            attrs = {side.attr for side in sides if isinstance(side, ast.Attribute)}
            consts = {side.value for side in sides if isinstance(side, ast.Constant)}
            if "kind" in attrs and consts & set(KINDS):
                return "kind"
            if "machine_id" in attrs and None in consts:
                return "machine_id"
    return None


def _raises(body: list[ast.stmt]) -> bool:
    return any(isinstance(sub, ast.Raise) for stmt in body for sub in ast.walk(stmt))


def _found(tree: ast.AST) -> list[tuple[int, str]]:
    hits = []
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and _raises(node.body):
            what = _role_test(node.test)
            if what is not None:
                hits.append((node.lineno, what))
    return hits


def role_checks_outside_the_table() -> list[str]:
    return found_outside(_found, ALLOWED, {})


def test_no_role_check_outside_the_table() -> None:
    assert role_checks_outside_the_table() == []


def test_the_check_sees_a_copy() -> None:
    copy = (
        "def f(p, current):\n"
        "    if not p.is_human:\n"
        "        raise Forbidden('Only a human may.')\n"
        "    if current['holder_id'] != p.agent_id and not p.is_human:\n"
        "        if True:\n"
        "            raise Forbidden('Only the holder.')\n"
        "    if p.kind == 'system':\n"
        "        raise Forbidden('Not the runner.')\n"
        "    if p.machine_id is None:\n"
        "        raise Forbidden('Keepers only.')\n"
        "    if change.kind == 'tombstone':\n"
        "        raise ValueError('not a principal')\n"
        "    if p.is_bot:\n"
        "        return 1\n"  # a branch on the kind that refuses nothing is no role check
        "    kind = 'human' if p.is_human else 'bot'\n"
        "    return kind\n"
    )
    assert _found(ast.parse(copy)) == [(2, "is_human"), (4, "is_human"), (7, "kind"), (9, "machine_id")]
