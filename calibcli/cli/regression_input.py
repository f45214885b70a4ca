"""Whether a command that reads classifier dumps (``diagram``, ``report``) was given a regression dump instead
(SPEC 10): one of the regression column options, or, with none of the classifier's, an input that has no
probability column and whose columns the regression reader recognises (``mean,std,y``, ``q0.05 ... y``, ...)."""

from __future__ import annotations

import dataclasses

from calibcli.cli import options as cc
from calibcli.core.errors import CalibcliError, flag_of
from calibcli.io.columns import recognises_probabilities
from calibcli.io.resolve import resolve_datasets
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
    first file of some dataset has no column the classifier reader takes for probabilities
    (:func:`calibcli.io.columns.recognises_probabilities`, its own rules) and the regression reader recognises
    every dataset's columns. Decided from the column names, never from an error's text: when the regression
    reader does not recognise them either, the classifier path runs and reports its own error."""
    if any(options.get(n) for n in COLUMN_NAMES if n != "id_col"):
        return True  # (an id column alone names no kind: a converted LLM dump's items are keyed by one too)
    if any(options.get(n) for n in _CLASSIFIER) or "-" in files:
        return False
    spec = cc.spec_of(options)
    datasets = resolve_datasets(list(files), pool=options.get("pool", False))
    for dataset in datasets:
        _, names, types, _, _ = dataset.first_schema(options["input_format"])
        if not recognises_probabilities(names, types, spec):
            break
    else:
        return False
    try:
        list(regression_sources(files, options).open())
    except CalibcliError:
        return False
    return True


def refuse_classifier_options(options: dict, declared, names: tuple[str, ...], what: str) -> None:
    """One ``Error:`` line when any of ``names`` (the command's classifier-only options) was given with a regression
    input, where it would be silently ignored. Given is told as the commands tell it (``report``'s command line,
    ``--group-by`` refused in long form): a value other than its declaration's default in ``declared``, the
    family's options dataclass; the default itself, given or not, changes nothing and passes."""
    defaults = {f.name: f.default for f in dataclasses.fields(declared)}
    for name in names:
        value = options.get(name)
        if value is not None and value != defaults[name]:
            raise CalibcliError(
                f"{flag_of(name)} {value} was given with a regression dump, but {flag_of(name)} applies to "
                f"classifier {what} only and would be ignored: drop {flag_of(name)}"
            )
