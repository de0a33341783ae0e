"""``python -m bench SCENARIO [options]``: run one benchmark scenario."""

from __future__ import annotations

import importlib
import sys

SCENARIOS = {
    "post": "bench.post",
    "wake": "bench.wake",
    "baseline": "bench.baseline",
    "wake_latency": "bench.wake_latency",
    "mcp": "bench.mcp",
}


def main() -> None:
    if len(sys.argv) < 2 or sys.argv[1] not in SCENARIOS:
        print(f"usage: python -m bench {{{'|'.join(SCENARIOS)}}} [options]", file=sys.stderr)
        raise SystemExit(2)
    module = importlib.import_module(SCENARIOS[sys.argv[1]])
    module.main(sys.argv[2:])


if __name__ == "__main__":
    main()
