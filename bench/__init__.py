"""Benchmarks for memory-ls against peer language servers (see docs/performance.md)."""
