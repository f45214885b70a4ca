"""Benchmarks of calibcli.io (reading and streaming)."""
