"""Request counts and latencies per route, plus the writer's, the hub's and the collector's gauges."""

from __future__ import annotations

import gc
from collections import defaultdict

from ..services.context import Context

BUCKETS = (0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0, 5.0, 60.0)


class Metrics:
    def __init__(self) -> None:
        self.counts: dict[tuple[str, str, int], int] = defaultdict(int)
        self.latency: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0] * len(BUCKETS))
        self.latency_sum: dict[tuple[str, str], float] = defaultdict(float)
        #: Objects the board froze once started, out of the collector's walks (api/serving.py).
        self.frozen_objects = 0

    def observe(self, method: str, route: str, status: int, seconds: float) -> None:
        self.counts[(method, route, status)] += 1
        key = (method, route)
        self.latency_sum[key] += seconds
        buckets = self.latency[key]
        for i, bound in enumerate(BUCKETS):
            if seconds <= bound:
                buckets[i] += 1

    def render(self, ctx: Context) -> str:
        lines = ["# TYPE board_requests_total counter"]
        for (method, route, status), n in sorted(self.counts.items()):
            lines.append(f'board_requests_total{{method="{method}",route="{route}",status="{status}"}} {n}')
        lines.append("# TYPE board_request_seconds histogram")
        for (method, route), buckets in sorted(self.latency.items()):
            labels = f'method="{method}",route="{route}"'
            for bound, n in zip(BUCKETS, buckets, strict=True):
                lines.append(f'board_request_seconds_bucket{{{labels},le="{bound}"}} {n}')
            total = sum(n for (m, r, _), n in self.counts.items() if (m, r) == (method, route))
            lines.append(f'board_request_seconds_bucket{{{labels},le="+Inf"}} {total}')
            lines.append(f"board_request_seconds_sum{{{labels}}} {self.latency_sum[(method, route)]:.6f}")
            lines.append(f"board_request_seconds_count{{{labels}}} {total}")
        stats = ctx.db.stats
        lines += [
            "# TYPE board_longpolls_open gauge",
            f"board_longpolls_open {ctx.hub.waiting}",
            "# TYPE board_events_published_total counter",
            f"board_events_published_total {ctx.hub.published}",
            "# TYPE board_writer_queue_depth gauge",
            f"board_writer_queue_depth {ctx.db.queue_depth}",
            "# TYPE board_writer_batches_total counter",
            f"board_writer_batches_total {stats.batches}",
            "# TYPE board_writer_writes_total counter",
            f"board_writer_writes_total {stats.writes}",
            "# TYPE board_writer_largest_batch gauge",
            f"board_writer_largest_batch {stats.largest_batch}",
            "# TYPE board_writer_folds_total counter",
            f"board_writer_folds_total {stats.folds}",
            "# TYPE board_heap_frozen_objects gauge",
            f"board_heap_frozen_objects {self.frozen_objects}",
            "# TYPE board_gc_collections_total counter",
            *(
                f'board_gc_collections_total{{generation="{generation}"}} {counts["collections"]}'
                for generation, counts in enumerate(gc.get_stats())
            ),
        ]
        return "\n".join(lines) + "\n"
