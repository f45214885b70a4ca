"""Cumulative calibration (SPEC 9): the ECCE statistics, the laws of Brownian motion they are tested
against, and the ECCE accumulator."""
