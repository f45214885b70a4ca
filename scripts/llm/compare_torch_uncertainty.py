"""calibcli's selective metrics against torch-uncertainty's (``torch_uncertainty/metrics/classification/
risk_coverage.py``) on shared data; prints both and the relation between their definitions.

Run in an environment with torch and torch-uncertainty (``pip install torch==2.13.0 torchmetrics``, ``pip install
--no-deps torch-uncertainty``; its package ``__init__`` needs lightning, so the metrics module is loaded by path)
and calibcli importable (``PYTHONPATH=.``): ``python scripts/llm/compare_torch_uncertainty.py``.

Where the definitions differ (SPEC 11 against torch-uncertainty 0.13):
- AURC: calibcli ``(1/n) sum_k r_k``; torch-uncertainty the trapezoid over coverages ``k/n``, ``k = 1..n``, divided
  by ``1 - 1/n``: ``(sum_k r_k - (r_1 + r_n)/2) / (n - 1)``. AUGRC likewise with ``r_k k/n``.
- Ties: calibcli spreads a tie block's errors evenly; torch-uncertainty takes ``argsort``'s order (arbitrary
  within ties), so its numbers can change with the order of tied rows.
- Coverage at risk: calibcli returns 0 when no coverage meets the risk, torch-uncertainty NaN.
- Risk at coverage: the same definition, ``r_k`` at ``k = ceil(q n)``.
"""

from __future__ import annotations

import importlib.util
import json
import math
import site

import numpy as np
import torch

from calibcli.llm import curves


def _tu():
    for base in site.getsitepackages():
        path = f"{base}/torch_uncertainty/metrics/classification/risk_coverage.py"
        try:
            spec = importlib.util.spec_from_file_location("tu_risk_coverage", path)
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            return module
        except FileNotFoundError:
            continue
    raise SystemExit("torch-uncertainty is not installed")


def data(seed: int, n: int, ties: bool):
    rng = np.random.default_rng(seed)
    probs = rng.dirichlet(np.ones(4) * 0.7, size=n)
    if ties:
        probs = np.round(probs, 1) + 1e-9
        probs /= probs.sum(axis=1, keepdims=True)
    labels = np.array([rng.choice(4, p=p) for p in probs])
    return probs, labels


def ours(probs, labels, coverage, risk):
    conf, correct = probs.max(axis=1), (probs.argmax(axis=1) == labels).astype(float)
    b = curves.tie_blocks(conf)
    s, e = b.sums(np.ones(len(conf))), b.sums(1 - correct)
    n = len(conf)
    r = np.cumsum(1 - correct[np.argsort(-conf, kind="stable")]) / np.arange(1, n + 1)
    return {
        "aurc": float(curves.aurc(s, e)),
        "aurc_as_torch_uncertainty": float((r.sum() - (r[0] + r[-1]) / 2) / (n - 1)),
        "augrc": float(curves.augrc(s, e)),
        "risk_at_coverage": float(curves.risk_at_coverage(s, e, coverage)),
        "coverage_at_risk": float(curves.coverage_at_risk(s, e, risk)),
        "tie_blocks": b.tie_counts()["tie_blocks"],
    }


def theirs(tu, probs, labels, coverage, risk):
    p, y = torch.tensor(probs), torch.tensor(labels)
    out = {}
    for name, metric in (
        ("aurc", tu.AURC()),
        ("augrc", tu.AUGRC()),
        ("risk_at_coverage", tu.RiskAtxCov(cov_threshold=coverage)),
        ("coverage_at_risk", tu.CovAtxRisk(risk_threshold=risk)),
    ):
        metric.update(p, y)
        value = float(metric.compute())
        out[name] = None if math.isnan(value) else value
    return out


def main() -> None:
    tu = _tu()
    report = {}
    for ties in (False, True):
        probs, labels = data(35, 2000, ties)
        report["with ties" if ties else "no ties"] = {
            "calibcli": ours(probs, labels, 0.8, 0.3),
            "torch_uncertainty": theirs(tu, probs, labels, 0.8, 0.3),
        }
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
