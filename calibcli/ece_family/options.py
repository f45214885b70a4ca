"""``ece``'s options (SPEC 2), declared once: the command's flags and help, the library's keywords and defaults,
the checks (made once, when the object is built) and the report's ``parameters``. The same frozen object is
what the family's plan (:mod:`calibcli.ece_family.family`), its input accumulator
(:class:`calibcli.ece_family.accumulator.InputAccumulator`), the library (:mod:`calibcli.api`) and the
families that reuse the binned estimators (compare, recalibrate) receive."""

from __future__ import annotations

from dataclasses import dataclass, field

from calibcli.core.declarations import CLASS_WEIGHTS_PARAM, GATE_METRIC, N_BINS, STRATEGY
from calibcli.core.family import GatedMetrics, mode_field
from calibcli.core.rows import ROW_LIMIT
from calibcli.core.validation import declared


@dataclass(frozen=True)
class Options(GatedMetrics):
    """``ece``'s options. ``row_limit`` is no option: the rows per problem the bootstrap resamples one by one
    before it resamples per-bin statistics (SPEC 8); tests lower it to reach that path on small data."""

    mode: str | None = mode_field()
    class_weights: str = declared("uniform", CLASS_WEIGHTS_PARAM)
    n_bins: int = declared(15, N_BINS)
    strategy: str = declared("uniform", STRATEGY)
    metric: str = declared("ece_l1_plugin", GATE_METRIC)
    row_limit: int = field(default=ROW_LIMIT, repr=False)

    @property
    def gate_metric(self) -> str:
        return self.metric
