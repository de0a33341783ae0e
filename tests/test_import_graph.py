"""The packages' imports point one way: a cycle anywhere in board/, routines/ or bench/ fails here.

Every import counts, top-level or inside a function: a deferred import is a cycle
hidden, not removed. The graph is read from the source with ``ast``.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = (ROOT / "board", ROOT / "routines", ROOT / "bench")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(path: Path, name: str, known: set[str]) -> set[str]:
    """The modules of ours ``path`` imports (``from . import x`` names module x when it is one)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, *([base] if base else [])])
            found.add(base)
            found |= {f"{base}.{alias.name}" for alias in node.names}
    return {m for m in found if m in known and m != name}


def import_graph() -> dict[str, set[str]]:
    files = {_module_name(p): p for package in PACKAGES for p in package.rglob("*.py")}
    known = set(files)
    return {name: _imports(path, name, known) for name, path in files.items()}


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle as a path that ends where it starts, or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                return [*path[path.index(nxt) :], nxt]
            if nxt not in state and (cycle := visit(nxt)):
                return cycle
        path.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (cycle := visit(node)):
            return cycle
    return None


def test_there_is_no_import_cycle() -> None:
    graph = import_graph()
    assert "board.server.services.posting" in graph["board.server.services.claims"]
    assert {"bench.baseline", "bench.posters"} <= graph["bench.post"]  # bench/ is read too
    cycle = find_cycle(graph)
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def test_the_check_finds_a_cycle_when_there_is_one() -> None:
    graph = import_graph()
    graph["board.server.services.posting"].add("board.server.services.claims")
    cycle = find_cycle(graph)
    assert cycle is not None and cycle[0] == cycle[-1]
    assert {"board.server.services.posting", "board.server.services.claims"} <= set(cycle)


def test_posting_and_scope_sit_below_every_other_service() -> None:
    graph = import_graph()
    services = "board.server.services."
    for low in ("posting", "scope"):
        above = {m.removeprefix(services) for m in graph[services + low] if m.startswith(services)}
        # loopguard reads only the store: the loop guard sits below posting, as leases does;
        # outbound (the outbox of notifications, enqueued in the post's write) too, and
        # replies (the forge's comments, enqueued in that write too, reading only the store).
        low_enough = {"scope", "audit", "leases", "loopguard", "outbound", "replies", "context", "paging"}
        assert above <= low_enough, (low, above)


def _edges(graph: dict[str, set[str]], source: str, target: str) -> set[tuple[str, str]]:
    """Every import from a module of package ``source`` of a module of package ``target``.

    ``from target import x`` also names the package itself; its ``__init__`` is left out.
    """
    return {
        (a, b)
        for a, deps in graph.items()
        if a == source or a.startswith(source + ".")
        for b in deps
        if b.startswith(target + ".")
    }


def test_the_routines_runner_is_a_client_and_the_server_needs_only_its_schedule() -> None:
    graph = import_graph()
    assert graph["routines"] == set()  # its __init__ imports nothing: importing it is importing a module
    # The runner reaches the board through its client (and the CLI's option helpers) only.
    assert {b for _, b in _edges(graph, "routines", "board")} == {
        "board.client",
        "board.local_board",
        "board.token_input",
    }
    # The server shares what a schedule means with the runner, and nothing else of it.
    assert {b for _, b in _edges(graph, "board.server", "routines")} == {"routines.schedule"}
    # Beside it: the board command (its routines commands, serve --routines) and the doctor.
    assert {a for a, _ in _edges(graph, "board", "routines")} == {
        "board.cli",
        "board.doctor.fleet",
        "board.server.services.routines",
        "board.server.pages.routines",
    }
