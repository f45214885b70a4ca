"""``recalibrate evaluate`` on regression predictions (SPEC 10 "Recalibration"; docs/commands/regression.md): fit
each method on one part of a regression dump (``--holdout F``) or on another file (``--fit TRAIN``), apply it to the
test rows as ``recalibrate apply`` would (:func:`calibcli.regression.recalibration.recalibrated`), and measure the
test rows before and after with the accumulator of ``calibcli regression``.

- The split is the classifier's (:data:`calibcli.recalibrate.run.SPLIT_RULE`): the fit part is the ``round(F n)``
  rows with the smallest :func:`~calibcli.core.resampling.row_hash` of ``(seed, global row index)``, the test part
  every other row, so the same rows whatever the batch size. Test rows keep their global row index, the key of
  the seeded draws (the quantiles' and samples' randomised PIT, the bootstrap): with ``--fit TRAIN FILE`` every
  number is the one ``calibcli regression`` gives on ``recalibrate apply``'s output of FILE.
- Each method's **difference** is taken against its **baseline**: the uncalibrated predictions written as the
  method writes them (the identity map: ``std-scaling`` by 1, ``isotonic-pit`` by ``R(p) = p``, ``conformal`` with
  margin 0), so that both sides are the same kind of prediction at the same levels. For ``std-scaling`` and for
  ``conformal`` on intervals or quantiles the baseline is the uncalibrated row itself; ``isotonic-pit`` on a
  Gaussian compares the model's own quantiles at ``q0.05 ... q0.95``, ``conformal`` on a Gaussian its own central
  interval at the level.
- The difference's interval is the **paired** Poisson bootstrap: the multiplicities are keyed by ``(seed, global
  row index)`` (SPEC 8), so every prediction of a row is resampled with the same weight, and the percentile interval
  of ``after - before`` over the replicates is the interval of the difference (``--n-boot``; none with 0).

The rows are read into memory (as ``recalibrate fit`` reads a regression dump), by the local engine.
"""

from __future__ import annotations

import numpy as np

from calibcli.core.documents import new_document
from calibcli.core.errors import CalibcliError
from calibcli.core.family import Bootstrap
from calibcli.core.registry import REGISTRY
from calibcli.core.resampling import percentile_interval, row_hash
from calibcli.core.validation import check_option, check_options
from calibcli.recalibrate.evaluate import SPLIT_RULE
from calibcli.regression import recalibration
from calibcli.regression.accumulator import RegressionAccumulator, RegressionReport
from calibcli.regression.kinds import Prediction, RegressionOptions
from calibcli.regression.recalibration import REGRESSION_METHODS, Recalibrated, Rows

#: The identity map of each method, as a calibrator document (what the baseline is written with).
IDENTITY: dict[str, dict] = {
    "std-scaling": {"method": "std-scaling", "factor": 1.0},
    "isotonic-pit": {"method": "isotonic-pit", "p": [0.0, 1.0], "r": [0.0, 1.0]},
    "conformal": {"method": "conformal", "margin": 0.0},  # (at the fitted map's level)
}

DIFFERENCE_RULE = (
    "method minus its baseline (the uncalibrated predictions written as the method writes them: the identity "
    "map), on the same test rows; interval: the percentile interval of the paired Poisson bootstrap's replicates "
    "of the difference (the multiplicities keyed by (seed, global row index), the same for both sides)"
)


def _split(rows: Rows, holdout: float, seed: int) -> tuple[np.ndarray, np.ndarray, dict]:
    """The fit and test rows of a holdout split (module docstring), as boolean masks, and its report."""
    n = len(rows.y)
    n_fit = int(round(holdout * n))
    check_option(
        2 <= n_fit <= n - 2,
        f"--holdout {holdout} leaves {n_fit} of {n} rows to fit on and {n - n_fit} to evaluate: expected at least 2 "
        "in each part",
    )
    hashes = row_hash(seed, rows.row_index)
    fit = np.zeros(n, dtype=bool)
    fit[np.argpartition(hashes, n_fit - 1)[:n_fit]] = True
    split = {"kind": "holdout", "fit_fraction": holdout, "n_fit": n_fit, "n_test": n - n_fit, "seed": seed}
    return fit, ~fit, split


def _measure(kind: str, levels, preds: np.ndarray, test: Rows, options: RegressionOptions) -> RegressionReport:
    acc = RegressionAccumulator(Prediction(kind, tuple(levels), options))
    return acc.update(test.row_index, preds, test.y, test.w).result()


def _same(a: Recalibrated, kind: str, levels, preds: np.ndarray) -> bool:
    return a.kind == kind and tuple(a.levels) == tuple(levels) and np.array_equal(a.preds, preds)


def _differences(after: RegressionReport, before: RegressionReport, alpha: float) -> dict[str, dict]:
    """Each metric both reports have: ``after - before`` and the paired bootstrap interval where both resampled."""
    out = {}
    for name, m in after.metrics.items():
        b = before.metrics.get(name)
        if b is None:
            continue
        low = high = method = None
        ra, rb = (after.replicates or {}).get(name), (before.replicates or {}).get(name)
        if ra is not None and rb is not None:
            low, high = percentile_interval(ra - rb, alpha)
            method = "paired Poisson bootstrap over rows, keyed by (seed, global row index)"
        out[name] = {"estimate": m.estimate - b.estimate, "ci_low": low, "ci_high": high, "ci_method": method}
    return out


def _params(doc: dict) -> dict:
    if doc["method"] == "isotonic-pit":
        return {"knots": len(doc["p"])}
    return {k: doc[k] for k in ("factor", "level", "margin") if k in doc}


def regression_evaluation(
    file: str,
    methods: list[str],
    *,
    holdout: float | None,
    fit_file: str | None,
    n_boot: int,
    alpha: float,
    seed: int,
    input_format: str | None = None,
    drop_invalid: bool = False,
    batch_rows: int = 65536,
) -> dict:
    """``recalibrate evaluate``'s document for regression predictions (module docstring)."""
    check_option(len(set(methods)) == len(methods), f"--method lists a method twice ({', '.join(methods)})")
    boot = Bootstrap(n_boot, alpha, seed)  # checked here, once, before any reading (the command leaves them to it)
    if (holdout is None) == (fit_file is None):
        raise CalibcliError(
            "pass either --holdout FRACTION (split FILE) or --fit TRAIN (fit on TRAIN, evaluate on FILE)"
        )

    def read(path: str) -> Rows:
        return recalibration.read_rows(
            path, input_format=input_format, drop_invalid=drop_invalid, batch_rows=batch_rows
        )

    rows = read(file)
    if fit_file is not None:
        train = read(fit_file)
        test, fit_path = rows, fit_file
        split = {"kind": "files", "fit_path": fit_file, "n_fit": len(train.y), "n_test": len(test.y)}
        fit_described: dict | None = train.described
    else:
        assert holdout is not None
        fit_mask, test_mask, split = _split(rows, holdout, seed)
        train, test, fit_path = rows.take(fit_mask), rows.take(test_mask), file
        fit_described = None
    target = test.target
    level = 1.0 - alpha
    options = RegressionOptions.of(boot)
    before = _measure(target.kind, target.levels, test.preds, test, options)
    out_rows: list[dict] = [
        {"method": "uncalibrated", "kind": target.kind, "metrics": {k: m.to_dict() for k, m in before.metrics.items()}}
    ]
    for method in methods:
        fitted = recalibration.fit_rows(train, method, level=level, seed=seed, where=fit_path)
        doc = recalibration.document(fitted, train, fit_path, seed)
        after = recalibration.recalibrated(doc, target, test.preds, file)
        identity = recalibration.recalibrated({**doc, **IDENTITY[method]}, target, test.preds, file)
        measured = _measure(after.kind, after.levels, after.preds, test, options)
        row: dict = {
            "method": method,
            "kind": after.kind,
            "levels": list(after.levels),
            "what": after.what,
            "params": _params(doc),
            "fit_rows": {"rows": "all", "n": len(train.y)},
            "metrics": {k: m.to_dict() for k, m in measured.metrics.items()},
        }
        if _same(identity, target.kind, target.levels, test.preds):
            base = before
            row["baseline"] = {"method": "uncalibrated"}
        else:
            base = _measure(identity.kind, identity.levels, identity.preds, test, options)
            row["baseline"] = {
                "method": "uncalibrated, written as the method writes it (the identity map)",
                "kind": identity.kind,
                "levels": list(identity.levels),
                "metrics": {k: m.to_dict() for k, m in base.metrics.items()},
            }
        row["difference"] = _differences(measured, base, alpha)
        out_rows.append(row)
    doc_out = new_document(
        "recalibrate evaluate",
        {
            "predictions": "regression",
            "methods": list(methods),
            "level": level,
            "n_boot": n_boot,
            "alpha": alpha,
            "confidence_level": 1.0 - alpha,
            "seed": seed,
            "bootstrap": "Poisson, keyed by (seed, global row index): every prediction of a row drawn with the same "
            "weight, so the differences are paired",
            "difference": DIFFERENCE_RULE,
            "batch_rows": batch_rows,
            "engine": "local",
            "split": split,
            "split_rule": None if holdout is None else SPLIT_RULE,
            "estimators": {n: REGISTRY[n].description for n in REGISTRY if REGISTRY[n].family == "regression"},
        },
    )
    doc_out["files"].append(
        {
            "input": test.described,
            "fit_input": fit_described,
            "split": split,
            "kind": target.kind,
            "rows": out_rows,
        }
    )
    return doc_out


#: The options of ``recalibrate evaluate`` (:func:`calibcli.recalibrate.run.evaluation`'s parameters) that
#: regression predictions take; the others are a classifier's, refused when given.
TAKES = (
    "file",
    "method",
    "holdout",
    "fit_file",
    "input_format",
    "drop_invalid",
    "n_boot",
    "alpha",
    "seed",
    "batch_rows",
    "engine",
    "scheduler",
    "workers",
)
#: Parameters of :func:`calibcli.recalibrate.run.evaluation` that only the library has (no flag).
_LIBRARY_ONLY = ("held", "skip_unfittable")


def evaluation_of(given: dict, defaults: dict) -> dict:
    """:func:`regression_evaluation` for the arguments ``given`` to :func:`calibcli.recalibrate.run.evaluation`
    (``defaults``: its defaults): every method a regression one, the classifier's options left at their defaults,
    the local engine."""
    methods = list(given["method"])
    classifier = [m for m in methods if m not in REGRESSION_METHODS]
    if classifier:
        regression = [m for m in methods if m in REGRESSION_METHODS]
        raise CalibcliError(
            f"--method {', '.join(regression)} is for regression predictions and {', '.join(classifier)} for a "
            "classifier's probabilities: evaluate one kind at a time"
        )
    for name, value in given.items():
        if name not in TAKES and value != defaults[name]:
            flag = f"{name}=" if name in _LIBRARY_ONLY else "--" + name.replace("_", "-")
            raise CalibcliError(
                f"{flag} does not apply to regression predictions (--method {', '.join(methods)}): drop it"
            )
    if given["engine"] != "local" or given["scheduler"] is not None or given["workers"] is not None:
        raise CalibcliError(
            "recalibrate evaluate reads regression predictions into one process: drop --engine, --scheduler and "
            "--workers (the local engine)"
        )
    check_options(holdout=given["holdout"])
    return regression_evaluation(
        given["file"],
        methods,
        holdout=given["holdout"],
        fit_file=given["fit_file"],
        n_boot=given["n_boot"],
        alpha=given["alpha"],
        seed=given["seed"],
        input_format=given["input_format"],
        drop_invalid=given["drop_invalid"],
        batch_rows=given["batch_rows"],
    )
