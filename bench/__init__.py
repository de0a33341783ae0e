"""Load and latency benchmarks: ``python -m bench SCENARIO`` (see 80-performance in the spec)."""
