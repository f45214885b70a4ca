"""Engines run the pipeline: ``local`` streams batches in this process; ``dask`` maps fragments to tasks
on a Dask cluster that return accumulator states, merged here (SPEC 8 "Engines"). Both give the same
report; :func:`calibcli.engines.pipeline.run` picks one with ``--engine`` from the registry
(:data:`calibcli.engines.base.ENGINES`). A new engine is a module here whose class is registered with
:func:`calibcli.engines.base.register` and imported below."""

from calibcli.engines import local  # noqa: F401, I001  (each registers its engine; --help lists them in this order)
from calibcli.engines import dask  # noqa: F401, E402
from calibcli.engines.base import ENGINES, Engine, EngineChoice, engines_help, register

__all__ = ["ENGINES", "Engine", "EngineChoice", "engines_help", "register"]
