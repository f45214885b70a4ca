"""``calibcli ece`` (calibcli.binned): whole processes as a user runs them, the library's bootstrap in process, and
issue 37's grouped bars.

Data: ``_common.rows`` (1e6 rows of distinct Beta(2, 5) scores, 1,000 groups ``g``). Ported from
``bench_ece.py`` (the library's bootstrap at 1e6 rows), ``bench_groups.py`` (the grouped runs, the memory budget)
and ``bench_replicates.py`` (the per-row bootstrap at 1e5 rows, uniform and quantile bins).
"""

from __future__ import annotations

from .. import _common


class Command:
    """``calibcli ece FILE --json`` as a fresh process (start-up, reading, 1000 resamples, the JSON)."""

    number = 1
    repeat = (1, 3, 60.0)
    warmup_time = 0
    timeout = 600
    params = (["1e5", "1e6"], ["uniform", "quantile"])
    param_names = ["rows", "strategy"]

    def setup(self, rows, strategy):
        self.path = str(_common.rows(float(rows)))

    def time_ece(self, rows, strategy):
        _common.run("ece", self.path, "--strategy", strategy)


class GroupedCommand:
    """``ece --group-by g`` over 1,000 groups of 1e6 rows, as a fresh process; with a memory budget that makes it
    run the groups in chunks (``CALIBCLI_MEMORY_BUDGET=400M``: the same numbers)."""

    number = 1
    repeat = (1, 2, 120.0)
    warmup_time = 0
    timeout = 900
    params = (["none", "400M"],)
    param_names = ["memory_budget"]

    def setup(self, budget):
        self.path = str(_common.rows(1e6))
        _common.run("ece", str(_common.rows(1e4)), "--group-by", "g")  # the compiled loops in Numba's cache first

    def time_ece_group_by(self, budget):
        env = {} if budget == "none" else {"CALIBCLI_MEMORY_BUDGET": budget}
        _common.run("ece", self.path, "--group-by", "g", env=env)


class Library:
    """``calibcli.metrics.ece`` with 1000 bootstrap resamples on 1e6 rows, in process (no start-up, no reading)."""

    timeout = 600
    number = 1
    repeat = (1, 3, 60.0)

    def setup(self):
        import numpy as np
        import pyarrow.parquet as pq

        table = pq.read_table(_common.rows(1e6), columns=["prob", "label"])
        self.prob = np.asarray(table["prob"])
        self.label = np.asarray(table["label"])
        from calibcli.metrics import ece

        ece(self.label[:1000], self.prob[:1000], n_boot=10)  # imports and compiled loops out of the timing

    def time_ece_n_boot_1000(self):
        from calibcli.metrics import ece

        ece(self.label, self.prob, n_boot=1000)

    def time_ece_point(self):
        from calibcli.metrics import ece

        ece(self.label, self.prob)

    def peakmem_ece_n_boot_1000(self):
        """Peak resident memory of the process with the 1e6 rows loaded (about 16 MB of arrays), over the call
        with 1000 resamples: the bootstrap holds no n-by-R array (that would be 8 GB)."""
        from calibcli.metrics import ece

        ece(self.label, self.prob, n_boot=1000)


class GroupsBar:
    """Issue 37's bars for ``ece --group-by``: 1,000 groups on 1e6 rows against the ungrouped ``ece`` on the same rows,
    both fresh processes with their defaults, measured in the same benchmark run (after a warm-up that leaves the
    compiled loops in Numba's cache: the first run after an install is ``startup.FirstRun``)."""

    timeout = 1200

    def setup_cache(self):
        path = str(_common.rows(1e6))
        _common.run("ece", str(_common.rows(1e4)), "--group-by", "g")  # the compiled loops in Numba's cache first
        alone = _common.run("ece", path)
        grouped = _common.run("ece", path, "--group-by", "g")
        return {**_common.record("ece --group-by", {"alone": alone, "grouped": grouped}), "load": _common.load()}

    track_bar_groups_wall, track_bar_groups_cpu = _common.ratio_bars(
        "groups",
        "grouped",
        "alone",
        what="``ece --group-by g`` (1,000 groups) / ``ece``, one run each",
        unit="x ece",
        bar=5,
    )

    def track_bar_groups_peak_gb(self, m):
        """Peak resident memory of the 1,000-group run (``ru_maxrss``), in GB (1e9 bytes). Bar: at most 1 GB."""
        return m["grouped"].peak_mb * 1024 * 1024 / 1e9

    track_bar_groups_peak_gb.unit = "GB (bar <= 1)"  # type: ignore[attr-defined]


class BigFile:
    """``calibcli ece FILE --n-boot 0`` on a 1e7-row Parquet file (the 10 shards of ``_common.shards("1e7")``)
    against reading the same two columns into NumPy with pyarrow alone, both fresh processes (interpreter start and
    imports on both sides). Ported from ``bench_ece.py`` (issue 2's target: calibcli at most 3x the bare read)."""

    number = 1
    repeat = (1, 3, 60.0)
    warmup_time = 0
    timeout = 900

    def setup(self):
        self.path = str(_common.shards("1e7"))

    def time_ece_n_boot_0(self):
        _common.run("ece", self.path, "--n-boot", "0")

    def time_pyarrow_read(self):
        import subprocess
        import sys

        code = (
            "import sys, pyarrow.dataset as ds; t = ds.dataset(sys.argv[1]).to_table(columns=['prob', 'label']); "
            "t.column('prob').to_numpy(); t.column('label').to_numpy()"
        )
        subprocess.run([sys.executable, "-c", code, self.path], check=True)


class Peer:
    """The bootstrap of the reference package of Kumar, Liang & Ma (2019), uncertainty-calibration's
    ``calibration.bootstrap_uncertainty`` (plug-in l2 on 15 equal-width bins, NumPy's global generator), 10 resamples
    of 1e5 rows, beside ``PeerCalibcli`` (calibcli's every metric, 1000 resamples, the same rows): the reference's
    time grows linearly with the resamples. Skipped where the package is not installed."""

    timeout = 900
    number = 1
    repeat = (1, 2, 120.0)

    def setup(self):
        try:
            import calibration  # noqa: F401
        except ImportError as exc:
            raise NotImplementedError("uncertainty-calibration is not installed") from exc
        import pyarrow.parquet as pq

        table = pq.read_table(_common.rows(1e5), columns=["prob", "label"])
        self.data = list(zip(table["prob"].to_numpy(), table["label"].to_numpy(), strict=True))

    def time_reference_bootstrap_10(self):
        import calibration as cal
        import numpy as np

        def functional(data):
            probs, labels = zip(*data, strict=True)
            # in 0.1.4, get_equal_prob_bins makes the equal-width bins (studies/peers.py checks it)
            return cal.lower_bound_scaling_ce(
                np.array(probs),
                np.array(labels),
                p=2,
                debias=False,
                num_bins=15,
                binning_scheme=cal.get_equal_prob_bins,
            )

        np.random.seed(0)
        cal.bootstrap_uncertainty(self.data, functional, num_samples=10, alpha=5.0)


class PeerCalibcli:
    """calibcli's side of ``Peer``: ``calibcli.metrics.ece(norm="l2", n_boot=1000)`` on the same 1e5 rows."""

    timeout = 600
    number = 1
    repeat = (1, 3, 60.0)

    def setup(self):
        import numpy as np
        import pyarrow.parquet as pq

        table = pq.read_table(_common.rows(1e5), columns=["prob", "label"])
        self.prob, self.label = np.asarray(table["prob"]), np.asarray(table["label"])

    def time_ece_l2_n_boot_1000(self):
        from calibcli.metrics import ece

        ece(self.label, self.prob, norm="l2", n_boot=1000)


class GroupBootstrap:
    """The bootstrap over groups alone, in process: sorting the rows of 1,000 groups of 1e6 rows, then every chunk's
    ``(G, R, bins)`` resampled statistics, 15 bins, 1000 resamples (a first call, compiling or loading the compiled
    loop, is left out). Ported from ``bench_group_bootstrap.py``. Internal names: skipped on a version without them."""

    timeout = 900
    number = 1
    repeat = (1, 2, 120.0)
    params = (["uniform", "quantile"],)
    param_names = ["strategy"]

    def setup(self, strategy):
        try:
            from calibcli.binned.bootstrap import SortedGroups
            from calibcli.binned.estimators import group_chunk
            from calibcli.core.binning import fit_binning
        except ImportError as exc:
            raise NotImplementedError(f"this version has no {exc.name}") from exc
        import numpy as np
        import pyarrow.parquet as pq

        t = pq.read_table(_common.rows(1e6), columns=["prob", "label", "g"])
        z, y, g = (t.column(c).to_numpy() for c in ("prob", "label", "g"))
        order = np.argsort(g, kind="stable")
        starts = np.flatnonzero(np.diff(g[order], prepend=-1))
        self.groups = [(y[rows], z[rows], np.ones(len(rows)), rows) for rows in np.split(order, starts[1:])]
        self.binnings = [
            fit_binning(gz if strategy == "quantile" else np.empty(0), n_bins=15, strategy=strategy)
            for _, gz, _, _ in self.groups
        ]
        self.chunk = group_chunk(1000, 15 if strategy == "uniform" else 30)
        self.sorted_groups = SortedGroups
        SortedGroups(self.groups[:2], self.binnings[:2], 15).resampled(0, 2, 0, 8)

    def time_sort(self, strategy):
        self.sorted_groups(self.groups, self.binnings, 15)

    def time_sort_and_resample(self, strategy):
        problems = self.sorted_groups(self.groups, self.binnings, 15)
        for g0, g1 in problems.chunks(self.chunk):
            problems.resampled(g0, g1, 0, 1000)
