"""Recalibration (calibcli.calibrators, the ``recalibrate`` commands): every method's fit and predict in process,
isotonic against scikit-learn's, Venn-Abers at 1e5 + 1e5 points, and ``recalibrate fit`` as a fresh process.

Ported from ``bench_recalibrate.py`` (its agreement checks, the largest prediction differences against
scikit-learn and against the direct Venn-Abers computation, are ``studies/peers.py``). Data: ``z ~ Beta(0.7, 0.9)``,
``y ~ Bernoulli(z^1.7)``, seed 0.
"""

from __future__ import annotations

import tempfile

from . import _common


def data(n: int, seed: int = 0):
    import numpy as np

    rng = np.random.default_rng(seed)
    z = rng.beta(0.7, 0.9, size=n)
    y = (rng.uniform(size=n) < z**1.7).astype(np.int64)
    return y, z


class Methods:
    """``fit_calibrator(method, y, z)`` and its ``predict`` on 1e6 binary rows (predict on 1e6 new points)."""

    timeout = 600
    number = 1
    repeat = (1, 3, 60.0)
    params = (["platt", "temperature", "histogram", "isotonic", "scaling-binning", "polynomial", "beta", "venn-abers"],)
    param_names = ["method"]

    def setup(self, method):
        import numpy as np

        from calibcli.calibrators import METHODS

        if method not in METHODS:
            raise NotImplementedError(f"{method} is not a method of this version")
        self.y, self.z = data(10**6, 3)
        self.new = np.random.default_rng(4).uniform(size=10**6)
        self.fitted = self._fit(method)

    def _fit(self, method):
        import numpy as np

        from calibcli.calibrators import fit_calibrator

        return fit_calibrator(method, self.y, self.z, rng=np.random.default_rng(0))

    def time_fit(self, method):
        self._fit(method)

    def time_predict(self, method):
        self.fitted.predict(self.new)


class Temperature:
    """Temperature scaling of K = 10 classes, 1e6 rows: fit and predict."""

    timeout = 600
    number = 1
    repeat = (1, 3, 60.0)

    def setup(self):
        import numpy as np

        from calibcli.calibrators.parametric import fit_temperature

        rng = np.random.default_rng(5)
        logits = rng.normal(scale=2.0, size=(10**6, 10))
        p = np.exp(logits - logits.max(axis=1, keepdims=True))
        self.p = p / p.sum(axis=1, keepdims=True)
        self.c = np.argmax(logits + rng.gumbel(size=logits.shape) * 2.0, axis=1)
        self.fitted = fit_temperature(self.c, self.p)

    def time_fit(self):
        from calibcli.calibrators.parametric import fit_temperature

        fit_temperature(self.c, self.p)

    def time_predict(self):
        self.fitted.predict(self.p)


class Isotonic:
    """calibcli's isotonic fit on 1e6 rows beside scikit-learn's ``IsotonicRegression`` (the reference; issue 6's
    bar: calibcli no slower)."""

    timeout = 600
    number = 1
    repeat = (1, 3, 60.0)

    def setup(self):
        self.y, self.z = data(10**6)

    def time_calibcli_fit_isotonic(self):
        from calibcli.calibrators.isotonic import fit_isotonic

        fit_isotonic(self.y, self.z, interpolation="linear")

    def time_sklearn_isotonic_regression(self):
        try:
            from sklearn.isotonic import IsotonicRegression
        except ImportError as exc:
            raise NotImplementedError("scikit-learn is not installed") from exc
        IsotonicRegression(out_of_bounds="clip").fit(self.z, self.y)


class VennAbers:
    """Venn-Abers with 1e5 calibration and 1e5 test points, fit + predict (issue 6's bar: under 10 s)."""

    timeout = 600
    number = 1
    repeat = (1, 3, 60.0)

    def setup(self):
        y, z = data(200_000, 2)
        self.yc, self.zc, self.zt = y[:100_000], z[:100_000], z[100_000:]

    def time_fit_predict(self):
        from calibcli.calibrators.isotonic import fit_venn_abers

        fit_venn_abers(self.yc, self.zc).predict_interval(self.zt)


class Command:
    """``calibcli recalibrate fit FILE --method isotonic -o cal.json`` on 1e6 rows, a fresh process."""

    number = 1
    repeat = (1, 3, 60.0)
    warmup_time = 0
    timeout = 600

    def setup(self):
        self.path = str(_common.rows(1e6))
        self.tmp = tempfile.TemporaryDirectory()

    def teardown(self):
        self.tmp.cleanup()

    def time_recalibrate_fit_isotonic(self):
        _common.run(
            "recalibrate",
            "fit",
            self.path,
            "--method",
            "isotonic",
            "-o",
            f"{self.tmp.name}/cal.json",
            json_output=False,
        )
