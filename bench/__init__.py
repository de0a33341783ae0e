"""Benchmarks (see 80-performance.md): run each with python -m bench.<name>."""
