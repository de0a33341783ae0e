"""``python -m bench SCENARIO [options]``: run one benchmark scenario.

``python -m bench all [--quick]`` runs every scenario of the spec in turn (with
``--quick``, at the smaller sizes each module names in ``QUICK``);
``python -m bench report`` turns ``bench/results/*.json`` into a Markdown table
and a chart per scenario.
"""

from __future__ import annotations

import importlib
import subprocess
import sys
import time

SCENARIOS = {
    "post": "bench.post",
    "wake": "bench.wake",
    "idle": "bench.idle",
    "catchup": "bench.catchup",
    "search": "bench.search",
    "delivery": "bench.delivery",
    "knowledge": "bench.knowledge",
    "claims": "bench.claims",
    "baseline": "bench.baseline",
    "wake_latency": "bench.wake_latency",
    "mcp": "bench.mcp",
    "pages": "bench.pages",
    "fleet": "bench.keeper_cost",
    "economy": "bench.economy",
    "worktrees": "bench.worktrees",
    "notify": "bench.notify",
    "driver": "bench.driver",
}
# `post` and `wake` drive the bare handler in their own run, so `all` leaves `baseline` out.
ALL = [
    "post",
    "wake",
    "idle",
    "catchup",
    "search",
    "knowledge",
    "claims",
    "wake_latency",
    "mcp",
    "pages",
    "economy",
    "worktrees",
    "notify",
]


def run_all(quick: bool) -> None:
    started = time.monotonic()
    for name in ALL:
        argv = list(getattr(importlib.import_module(SCENARIOS[name]), "QUICK", [])) if quick else []
        print(f"[bench] {name} {' '.join(argv)}", file=sys.stderr, flush=True)
        # Each scenario in a process of its own: one's leftovers cannot slow the next.
        subprocess.run([sys.executable, "-m", "bench", name, *argv], check=True)
    print(f"[bench] all done in {time.monotonic() - started:.0f} s", file=sys.stderr)


def main() -> None:
    args = sys.argv[1:]
    if args[:1] == ["all"]:
        run_all("--quick" in args)
        return
    if args[:1] == ["report"]:
        importlib.import_module("bench.report").main(args[1:])
        return
    if not args or args[0] not in SCENARIOS:
        print(
            f"usage: python -m bench {{{'|'.join([*SCENARIOS, 'all', 'report'])}}} [options]", file=sys.stderr
        )
        raise SystemExit(2)
    importlib.import_module(SCENARIOS[args[0]]).main(args[1:])


if __name__ == "__main__":
    main()
