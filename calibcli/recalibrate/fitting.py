"""The work of ``calibcli recalibrate fit``: TRAIN streamed on an engine into the fit accumulator (every
row up to --max-rows, a seeded sample beyond), the map fitted (:func:`calibcli.calibrators.document.fit_arrays`)
and saved as a versioned JSON document (never a pickle), and the run's report. The command
(:mod:`calibcli.cli.commands.recalibrate`) checks the options, writes the calibrator and emits the report.
"""

from __future__ import annotations

from calibcli.calibrators.document import calibrator_document, calibrator_json, fit_arrays
from calibcli.core.documents import new_document
from calibcli.engines.pipeline import engine_runner
from calibcli.recalibrate.run import (
    _certificate,
    _fit_info,
    _open_one,
    _summary_params,
    fit_input,
    stream_fit_accumulator,
)


def fit_document(
    train: str, spec, *, method: str, options: dict, chosen: dict, reading: dict, engine
) -> tuple[dict, str, str | None]:
    """Fit ``method`` (with its ``options``) on TRAIN: the report document, the calibrator's JSON text and the
    clipping warning (None: nothing was clipped). ``chosen``: mode, seed, alpha, max_rows, batch_rows and
    output (the calibrator's path, named in the report); ``reading``: input_format, drop_invalid."""
    mode, seed, alpha, max_rows = chosen["mode"], chosen["seed"], chosen["alpha"], chosen["max_rows"]
    batch_rows, output = chosen["batch_rows"], chosen["output"]
    stream = _open_one(
        train,
        spec,
        max_rows=max_rows,
        input_format=reading["input_format"],
        drop_invalid=reading["drop_invalid"],
        batch_rows=batch_rows,
    )
    with engine_runner(engine.name, engine.scheduler, engine.workers) as runner:
        acc, loaded = stream_fit_accumulator(runner, stream, max_rows=max_rows, seed=seed)
        n_workers = runner.workers
    loaded, fit_rows = fit_input(loaded, acc, method=method, mode=mode, options=options)
    cal, file_mode = fit_arrays(
        method, loaded.labels, loaded.probs, loaded.sample_weight, mode=mode, options=options, seed=seed
    )
    calibrator = calibrator_document(cal, loaded, method=method, mode=file_mode, options=options, seed=seed)
    text = calibrator_json(calibrator)

    doc = new_document(
        "recalibrate fit",
        {
            "method": method,
            "mode": mode or "auto",
            "options": options,
            "seed": seed,
            "alpha": alpha,
            "max_rows": max_rows,
            "batch_rows": batch_rows,
            "engine": engine.name,
            "workers": n_workers,
        },
    )
    entry = {
        "input": loaded.describe(),
        "fit_rows": fit_rows,
        "mode": file_mode,
        "calibrator_file": output,
        "method": method,
        "params": _summary_params(calibrator["calibrator"]),
        "fit_info": _fit_info(calibrator["calibrator"]),
    }
    certificate = _certificate(cal, alpha)
    if certificate is not None:
        entry["certificate"] = certificate
    if "calibrators" in calibrator["calibrator"] and file_mode == "marginal":
        entry["renormalised"] = "rows of the per-class outputs are divided by their sum"
    doc["files"].append(entry)
    clipped = [
        i.get("n_clipped", 0)
        for i in (entry["fit_info"] if isinstance(entry["fit_info"], list) else [entry["fit_info"]])
    ]
    if not any(clipped):
        return doc, text, None
    return (
        doc,
        text,
        (
            f"{max(clipped)} of {loaded.n_rows} predictions lay outside [clip, 1 - clip] and were clipped before "
            f"taking logits (clip {options.get('clip', options.get('eps', 1e-12)):g}); the fit depends on --clip"
        ),
    )
