"""``smece``'s options (SPEC 3), declared once: the command's flags and help, the library's keywords and
defaults, the checks (made once, when the object is built) and the report's ``parameters``. The same frozen
object is what the family's plan (:mod:`calibcli.smooth.family`), its input accumulator
(:class:`calibcli.smooth.inputs.SmoothInputAccumulator`), the library (:mod:`calibcli.api`) and the families
that reuse SmoothECE (compare, recalibrate) receive."""

from __future__ import annotations

from dataclasses import dataclass, field

from calibcli.core.declarations import CLASS_WEIGHTS_PARAM
from calibcli.core.family import GatedMetrics, mode_field
from calibcli.core.rows import ROW_LIMIT
from calibcli.core.validation import declared, option


def _sigma_shown(sigma):
    return "fixed point" if sigma is None else sigma


@dataclass(frozen=True)
class Options(GatedMetrics):
    """``smece``'s options: SmoothECE at the fixed point (``sigma`` None) or at ``sigma``. ``row_limit`` is no
    option: the rows per problem the bootstrap resamples one by one before it resamples per-cell statistics
    (SPEC 8); tests lower it to reach that path on small data."""

    mode: str | None = mode_field()
    class_weights: str = declared("uniform", CLASS_WEIGHTS_PARAM)
    sigma: float | None = option(
        None,
        "--sigma",
        help="Kernel bandwidth: report smECE at this sigma. Default: the fixed point sigma* = "
        "smECE_sigma* (solved to 1e-7), the SmoothECE proper.",
        shown=_sigma_shown,
    )
    row_limit: int = field(default=ROW_LIMIT, repr=False)

    @property
    def metric(self) -> str:
        """The metric computed: ``smece`` (at the fixed point) or ``smece_at_sigma``."""
        return "smece" if self.sigma is None else "smece_at_sigma"

    @property
    def gate_metric(self) -> str:
        return self.metric
