"""calibcli's benchmark suite (airspeed velocity): one module per package of calibcli, as ``calibcli/`` is laid out.

Run from ``benchmarks/``: ``asv run``, ``asv continuous main HEAD``, ``asv compare A B``; how, and what each figure
is: ``docs/benchmarks.md``. The bars of the issues are ``track_bar_*`` benchmarks (``asv run -b track_bar``): each
returns a ratio (or a peak, or seconds) measured within one run, its bar stated in its unit.
"""
