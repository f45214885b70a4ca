"""Engines run the pipeline: ``local`` streams batches in this process; ``dask`` maps fragments to tasks
on a Dask cluster that return accumulator states, merged here (SPEC 8 "Engines"). Both give the same
report; :func:`calibcli.cli_common.evaluate_streams` picks one with ``--engine``."""

#: The values of ``--engine``.
ENGINES = ("local", "dask")
