"""The ``ece`` command's family: one input's state bundles, per binary problem of the mode, the binned, the
clinical (Cox, ICI) and the ECCE states, plus the multiclass scores; the family declaration and its options.
It sits above :mod:`calibcli.binned`, :mod:`calibcli.clinical` and :mod:`calibcli.cumulative`, which it assembles."""
