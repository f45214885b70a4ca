"""Benchmarks of calibcli.engines (the local and the Dask engine)."""
