"""The family-wise false-alarm rate and the power of ``calibcli monitor`` (SPEC 12), by seeded simulation.

Calibrated, stationary series: ``--reps`` series of ``--windows`` daily windows of ``--rows`` rows each,
predictions ``p ~ Beta(2, 3)`` and labels ``y ~ Bernoulli(p)``, the reference the first ``--reference`` windows;
every other window is tested (the ECCE-R test of perfect calibration and the comparisons of SmoothECE and of
calibration-in-the-large with the reference), p-values adjusted by Holm over the whole series. A series with
any alert is a false alarm; its share estimates the family-wise false-alarm rate, with its Monte Carlo standard
error ``sqrt(r (1 - r) / S)``.

Drifting series: the same, but from window ``--drift-from`` on the predictions are distorted on the logit
scale (``logit p' = slope logit p + shift``, by default 1.25 and 0.3: overconfident and shifted up, the labels still drawn from ``p``).
Reported: the share of series alerted in every drifting window, in the first drifting window, whose drift is
found from its first window on, and with an alert before the drift.

    python benchmarks/studies/monitor_false_alarms.py --reps 400        # the docs' numbers
    python benchmarks/studies/monitor_false_alarms.py --reps 0 --slope 1.5 --shift 0.6   # power, a larger drift
    python benchmarks/studies/monitor_false_alarms.py --reps 20 --drift-reps 10   # a quick look
"""

from __future__ import annotations

import argparse
import json
import math
import time

import numpy as np
import pandas as pd

from calibcli.metrics import monitor


def series(
    rng: np.random.Generator,
    *,
    windows: int,
    rows: int,
    drift_from: int | None,
    slope: float = 1.25,
    shift: float = 0.3,
) -> pd.DataFrame:
    n = windows * rows
    day = np.repeat(np.arange(windows), rows)
    ts = pd.Timestamp("2024-01-01") + pd.to_timedelta(day * 86400 + rng.integers(0, 86400, n), unit="s")
    p = rng.beta(2.0, 3.0, n)
    y = (rng.random(n) < p).astype(np.int64)
    prob = p.copy()
    if drift_from is not None:
        late = day >= drift_from
        logit = np.log(p[late] / (1.0 - p[late]))
        prob[late] = 1.0 / (1.0 + np.exp(-(slope * logit + shift)))
    return pd.DataFrame({"ts": ts, "prob": prob, "label": y})


def run(args) -> dict:
    rng = np.random.default_rng(args.seed)
    options = dict(time_col="ts", every="1D", reference_windows=args.reference, n_boot=0, n_null=args.n_null)
    calm_alarms, per_window = 0, np.zeros(args.windows)
    started = time.perf_counter()
    for s in range(args.reps):
        doc = monitor(series(rng, windows=args.windows, rows=args.rows, drift_from=None), seed=s, **options)
        calm_alarms += doc["alerts"] > 0
        per_window += [bool(w["alert"]) for w in doc["windows"]]
    calm_time = time.perf_counter() - started
    found = all_drift = first = early = 0
    for s in range(args.drift_reps):
        frame = series(
            rng, windows=args.windows, rows=args.rows, drift_from=args.drift_from, slope=args.slope, shift=args.shift
        )
        doc = monitor(frame, seed=10_000 + s, **options)
        alerts = [bool(w["alert"]) for w in doc["windows"]]
        all_drift += all(alerts[args.drift_from :])
        first += alerts[args.drift_from]
        early += any(alerts[: args.drift_from])
        found += doc["drift"][0]["window"] == args.drift_from
    S, D = max(args.reps, 1), max(args.drift_reps, 1)
    rate = calm_alarms / S
    return {
        "parameters": vars(args),
        "false_alarm_rate": rate,
        "false_alarm_mc_se": math.sqrt(rate * (1 - rate) / S),
        "false_alarm_upper_95": _upper(calm_alarms, S),
        "per_window_alert_rate": (per_window / S).round(4).tolist(),
        "drift": f"logit p' = {args.slope} logit p + {args.shift} from window {args.drift_from}",
        "power_every_drifting_window": all_drift / D,
        "power_first_drifting_window": first / D,
        "drift_found_from_its_first_window": found / D,
        "alarm_before_the_drift": early / D,
        "seconds_per_calm_series": calm_time / S,
    }


def _upper(k: int, n: int) -> float:
    """The one-sided 95% Clopper-Pearson upper bound of a binomial rate."""
    from scipy.stats import beta

    return 1.0 if k == n else float(beta.ppf(0.95, k + 1, n - k))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=400, help="calibrated series")
    parser.add_argument("--drift-reps", type=int, default=100, help="drifting series")
    parser.add_argument("--windows", type=int, default=10)
    parser.add_argument("--rows", type=int, default=500)
    parser.add_argument("--reference", type=int, default=3)
    parser.add_argument("--drift-from", type=int, default=6)
    parser.add_argument("--slope", type=float, default=1.25)
    parser.add_argument("--shift", type=float, default=0.3)
    parser.add_argument("--n-null", type=int, default=100)
    parser.add_argument("--seed", type=int, default=36)
    print(json.dumps(run(parser.parse_args()), indent=2))


if __name__ == "__main__":
    main()
