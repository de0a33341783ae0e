"""Benchmarks: each scenario starts a real board on loopback and prints one JSON line."""
