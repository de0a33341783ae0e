"""Visibility is decided in services/scope.py only: its building blocks appear nowhere else.

What scope decides from is the principal's reach (``sees_all_workspaces``,
``is_admin_bot``, the ``admin`` workspace), a conversation's member list, and the
"nobody if a human" reader filter. Any of these outside scope is a second copy
of a rule, which is how a transport opens a side door; this walks the source
(``ast``) of board/server and names each one found.
"""

from __future__ import annotations

import ast

from tests.support.source_walk import found_outside

#: Where a building block may appear, and why it is not a visibility decision there.
ALLOWED = {
    "principal.py": "defines the principal's reach",
    "services/scope.py": "decides",
}
#: Uses that are not visibility: file -> the building blocks it may use.
NOT_VISIBILITY = {
    # The admin workspace is where a seed thread goes, and the one that is never archived.
    "services/workspaces.py": {"ADMIN_WORKSPACE"},
    # The workspaces page names the admin workspace's bots in its seed note; the roster read decides.
    "pages/spaces.py": {"ADMIN_WORKSPACE"},
    # A conversation's participants are part of how it is shown.
    "services/channels.py": {"members"},
}
REACH = ("sees_all_workspaces", "is_admin_bot", "members")


def _found(tree: ast.AST) -> list[tuple[int, str]]:
    hits = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in REACH:
            hits.append((node.lineno, node.attr))
        elif isinstance(node, ast.Name) and node.id == "ADMIN_WORKSPACE":
            hits.append((node.lineno, node.id))
        elif isinstance(node, ast.Compare) and any(
            isinstance(c, ast.Constant) and c.value == "admin" for c in [node.left, *node.comparators]
        ):
            hits.append((node.lineno, '== "admin"'))
        elif (
            isinstance(node, ast.IfExp)
            and isinstance(node.test, ast.Attribute)
            and node.test.attr == "is_human"
            and isinstance(node.body, ast.Constant)
            and node.body.value is None
        ):
            hits.append((node.lineno, "None if ….is_human"))
    return hits


def decisions_outside_scope() -> list[str]:
    return found_outside(_found, ALLOWED, NOT_VISIBILITY)


def test_no_visibility_decision_outside_scope() -> None:
    assert decisions_outside_scope() == []


def test_the_check_sees_a_copy() -> None:
    copy = (
        "def f(p, agent):\n"
        "    viewer = None if p.is_human else p.agent_id\n"
        "    return viewer, p.sees_all_workspaces, agent['workspace'] == 'admin'\n"
    )
    found = sorted(what for _, what in _found(ast.parse(copy)))
    assert found == ['== "admin"', "None if ….is_human", "sees_all_workspaces"]
