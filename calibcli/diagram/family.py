"""The diagram family (``calibcli diagram``; SPEC 6): what a reliability diagram draws and how, declared once.

The command streams every dataset (and ``--prob-col`` column) through
:class:`calibcli.diagram.accumulator.DiagramInputAccumulator` and overlays the curves on one figure; its
options (the command's flags, their checks and the report's ``parameters``) are :class:`Options`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from calibcli.core.declarations import MODE, N_BINS, N_BOOT, STRATEGY
from calibcli.core.family import Bootstrap, mode_field
from calibcli.core.rows import ROW_LIMIT
from calibcli.core.validation import declared, option
from calibcli.diagram.bands import DIAGRAM_BANDS

#: What ``--kind`` draws (``calibcli.diagram.plot.KINDS``, which imports matplotlib's side of the drawing).
KINDS = ("binned", "smooth", "both")
#: Scales of the count histogram under the binned diagram.
HIST_SCALES = ("linear", "log")


@dataclass(frozen=True)
class Options(Bootstrap):
    """``diagram``'s options, declared once: the command's flags, the checks, the report's ``parameters``; the
    same frozen object is what the family's input accumulator
    (:class:`calibcli.diagram.accumulator.DiagramInputAccumulator`), ``calibcli report``'s diagrams and the
    figure receive. ``curve_points`` (the smooth curve's points) and ``row_limit`` (the rows per problem the
    bootstrap resamples one by one, SPEC 8; tests lower it) are no options."""

    kind: str = option("both", "--kind", help="binned, smooth, or both (side by side).", choices=KINDS)
    mode: str | None = mode_field(MODE)
    n_bins: int = declared(15, N_BINS)
    strategy: str = declared("uniform", STRATEGY)
    name: list[str] | None = option(
        None,
        "--name",
        help="Legend name of a curve, one per dataset (or per --prob-col); repeat it. Default: the file names.",
    )
    dpi: float = option(
        300.0,
        "--dpi",
        help="Resolution of PNG output (dots per inch; 300 prints sharply, and the "
        "default figure is then 975 px wide, enough for a slide).",
    )
    title: str | None = option(
        None,
        "--title",
        help="Title on top of the figure ('' for none). Default: what is drawn "
        "(the file or the number of models, the mode).",
        show_default=False,
    )
    figsize: str | None = option(
        None,
        "--figsize",
        metavar="W,H",
        help="Figure size in inches. Default: 3.25 in wide per diagram (one column "
        "of a two-column paper; --kind both is 6.5 in, the page's text) by 3.75 in; small multiples 1.7 x 2.4 in per "
        "diagram, four across.",
        show_default=False,
    )
    style: str | None = option(
        None,
        "--style",
        help="A matplotlib style name (e.g. ggplot, seaborn-v0_8-paper) or a .mplstyle file; its "
        "colours replace the default colour-blind-safe palette (Okabe-Ito). --font-size still sets the text size.",
        show_default=False,
    )
    font_size: float = option(
        8.0,
        "--font-size",
        help="Text size in points (ticks and legends a point smaller); the default reads at the figure's printed size.",
    )
    min_count: int = option(
        10,
        "--min-count",
        help="Bins with fewer rows are drawn hollow and faint, and the line "
        "does not join them (every point stays, with its interval; 0 joins all); marker area grows "
        "with the bin's rows.",
    )
    hist_scale: str = option(
        "linear",
        "--hist-scale",
        help="Scale of the count histogram under the binned diagram: linear, or log (shows bins of a few rows).",
        choices=HIST_SCALES,
    )
    band: str = option(
        "wilson",
        "--band",
        help="Interval of each bin's observed frequency: wilson (close to the level "
        "on average at every bin size), clopper-pearson (exact: at least the level in every bin, wider "
        "in small ones) or bootstrap (over the --n-boot resamples; zero width in a bin of all 0s or all "
        "1s).",
        choices=DIAGRAM_BANDS,
    )
    max_classes: int = option(
        12, "--max-classes", help="Marginal mode: draw at most this many classes (the first ones)."
    )
    max_overlays: int = option(
        10,
        "--max-overlays",
        help="With --group-by: draw at most this many groups per dataset "
        "(the first ones in sorted order), each as its own curve.",
    )
    n_boot: int = declared(200, N_BOOT)
    curve_points: int = field(default=501, repr=False)
    row_limit: int = field(default=ROW_LIMIT, repr=False)

    @property
    def binned(self) -> bool:
        return self.kind in ("binned", "both")

    @property
    def smooth(self) -> bool:
        return self.kind in ("smooth", "both")
