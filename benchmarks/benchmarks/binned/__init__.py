"""Benchmarks of calibcli.binned (the binned family: ece)."""
