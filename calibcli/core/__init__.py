"""What every family shares, by role: errors and cancellation, validation and the declared options, the result
record (:class:`~calibcli.core.results.Metric`), the metric registry, the family declaration (Plan), the accumulator
base and its groups, rows and composite, resampling, binning, modes, compensated sums, array states, the
compiled-loop helper, safe text, outputs and the JSON document's head. It imports no family."""
