"""``calibcli monitor``: calibration over time windows, against a reference, with alerts of a stated
family-wise false-alarm rate (SPEC 12). :mod:`~calibcli.monitor.family` declares the options,
:mod:`~calibcli.monitor.run` streams the windows, :mod:`~calibcli.monitor.reference` holds the reference's rows
and the resampled nulls, :mod:`~calibcli.monitor.alerts` the tests and their adjustment,
:mod:`~calibcli.monitor.render` the table, markdown and CSV, :mod:`~calibcli.monitor.plot` the picture."""
