"""Where is it miscalibrated (``calibcli audit``): segment codings and partitions, the per-segment tests,
the multiple-testing adjustments, the segment grid, the accumulator and the family."""
