"""Whether a command that reads classifier dumps (``diagram``, ``report``) was given a regression dump instead
(SPEC 10): one of the regression column options, or, with none of the classifier's, an input that has no
probability column and whose columns the regression reader recognises (``mean,std,y``, ``q0.05 ... y``, ...)."""

from __future__ import annotations

from calibcli.cli import options as cc
from calibcli.core.errors import CalibcliError
from calibcli.regression import family as regression

#: The regression column options a classifier command takes (``--weight-col`` is the classifier's own).
COLUMN_NAMES = (
    "target",
    "mean",
    "std",
    "var",
    "quantile_cols",
    "quantile_levels",
    "lower",
    "upper",
    "level",
    "sample_cols",
    "id_col",
)
COLUMNS = cc.group_of(regression.Columns, *COLUMN_NAMES, name="regression columns")
#: What the calibration curve and the PIT histogram take of ``calibcli regression``'s own options.
CURVE = cc.group_of(regression.Options, "curve_form", "n_levels", "pit_bins", name="regression curve")
_CLASSIFIER = ("prob_col", "prob_cols", "label_col", "logits")


def regression_sources(files, options: dict, *, group_by: tuple[str, ...] = ()):
    """The regression sources of ``files`` (the regression columns from ``options``)."""
    return regression.regression_sources(
        files,
        regression.Columns.of(options),
        input_format=options["input_format"],
        drop_invalid=options["drop_invalid"],
        pool=options.get("pool", False),
        batch_rows=options["batch_rows"],
        group_by=group_by,
    )


def is_regression(files, options: dict) -> bool:
    """A regression option is given; or no classifier column option is, the files are not standard input, the
    classifier reader finds no probability column and the regression reader recognises the columns."""
    if any(options.get(n) for n in COLUMN_NAMES):
        return True
    if any(options.get(n) for n in _CLASSIFIER) or "-" in files:
        return False
    try:
        list(cc.sources_of(files, {**options, "group_by": None}).open())
        return False
    except CalibcliError as error:
        if "no probability column recognised" not in str(error):
            raise
        try:
            list(regression_sources(files, options).open())
        except CalibcliError:
            raise error from None
        return True
