"""Engines run the pipeline: ``local`` streams batches in this process (a distributed engine maps
fragments to tasks that return accumulator states, merged here)."""
