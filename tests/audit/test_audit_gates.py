"""The audit's gates when nothing is tested (issue 33): an MCE of no segment is undefined, so the gate is an error."""

from __future__ import annotations

from tests._cli import SAMPLE, run

ADS = str(SAMPLE / "ads_segments.csv")


def test_a_gate_over_no_tested_segment_is_an_error_saying_why():
    r = run(
        "audit",
        ADS,
        "--segment-cols",
        "country",
        "--min-segment",
        "1000000",
        "--fail-above-sigma",
        "1",
        "--fail-if-any-segment",
    )
    assert r.exit_code == 2
    rows = 20_000
    assert r.stderr == (
        f"Error: --fail-above-sigma and --fail-if-any-segment: {ADS} has no segment of at least --min-segment "
        f"1000000 rows (the whole population has {rows}), so no segment is tested, MCE is undefined and the gate "
        "would test nothing: pass --min-segment 100 or less\n"
    )
    assert r.stdout == ""


def test_without_a_gate_an_audit_of_no_tested_segment_reports_it():
    r = run("audit", ADS, "--segment-cols", "country", "--min-segment", "1000000", "--json")
    assert r.exit_code == 0
    assert '"n_segments_tested": 0' in r.stdout


def test_one_gate_named_alone():
    r = run("audit", ADS, "--segment-cols", "country", "--min-segment", "1000000", "--fail-if-any-segment")
    assert r.exit_code == 2 and r.stderr.startswith("Error: --fail-if-any-segment: ")
