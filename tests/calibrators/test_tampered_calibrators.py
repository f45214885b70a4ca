"""Tampered or absurd calibrators (issue 24): the reader checks every parameter against what fitting can produce,
``predict`` never returns a non-finite or out-of-range probability, and a calibrator file's bytes are read safely
(by type before opening, bounded depth, bounded integers).

Every fitted calibrator passes the checks (the first tests, over many seeds, ties and empty bins), so the checks
refuse only what fitting cannot produce. Errors are exact messages, in the library and through the installed
``calibcli recalibrate apply`` (one ``Error:`` line, exit 2, no output written).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from calibcli.calibrators.parametric import TemperatureCalibrator, fit_temperature
from calibcli.calibrators.isotonic import VennAbersCalibrator
from calibcli.calibrators import calibrator_from_dict, fit_calibrator, fit_multiclass
from calibcli.calibrators._common import check_predicted, shown_number
from calibcli.calibrators.files import parse_calibrator_json, read_calibrator_document
from calibcli.core.errors import CalibcliError
from tests._cli import BINARY

BINARY_METHODS = ("platt", "temperature", "histogram", "isotonic", "scaling-binning", "polynomial", "beta", "venn-abers")


def _data(n: int, seed: int, *, ties: bool = False):
    rng = np.random.default_rng(seed)
    z = rng.beta(0.6, 0.8, size=n)
    if ties:  # few distinct scores: Venn-Abers' tables meet at ties, histograms get empty bins
        z = np.round(z, 1)
    y = (rng.uniform(size=n) < z**1.5).astype(np.int64)
    return y, z


def _round_trip(cal):
    return calibrator_from_dict(json.loads(json.dumps(cal.to_dict())))


# ---------------------------------------------------------------------------------------------
# Whatever fitting produces passes the checks


@pytest.mark.parametrize("method", BINARY_METHODS)
@pytest.mark.parametrize("seed, n, ties", [(0, 40, False), (1, 500, False), (2, 60, True), (3, 2000, True), (4, 7, True)])
def test_every_fitted_calibrator_reads_back(method, seed, n, ties):
    y, z = _data(n, seed, ties=ties)
    options = {"n_bins": 25} if method in ("histogram", "scaling-binning") else {}
    options |= {"degree": 20} if method == "polynomial" else {}
    options |= {"monotone": True} if method == "beta" else {}
    try:
        cal = fit_calibrator(method, y, z, rng=np.random.default_rng(seed), **options)
    except CalibcliError:  # (temperature refuses data without a minimiser: nothing fitted, nothing to check)
        return
    back = _round_trip(cal)
    np.testing.assert_array_equal(back.predict(z), cal.predict(z))


@pytest.mark.parametrize("mode", ["marginal", "top-label"])
def test_fitted_multiclass_calibrators_read_back(mode):
    rng = np.random.default_rng(5)
    P = rng.dirichlet(np.ones(4), size=300)
    c = np.array([rng.choice(4, p=p) for p in P])
    for method in ("isotonic", "venn-abers", "histogram", "platt"):
        cal = fit_multiclass(method, c, P, mode=mode, rng=np.random.default_rng(0))
        np.testing.assert_array_equal(_round_trip(cal).predict(P), cal.predict(P))


# ---------------------------------------------------------------------------------------------
# What fitting cannot produce is refused, naming the field and the value as written


@pytest.fixture(scope="module")
def fitted() -> dict[str, dict]:
    y, z = _data(400, 11)
    out = {m: fit_calibrator(m, y, z, rng=np.random.default_rng(0)).to_dict() for m in BINARY_METHODS}
    out["histogram-empty"] = fit_calibrator("histogram", *_data(30, 12), n_bins=40).to_dict()
    out["beta-monotone"] = fit_calibrator("beta", y, z, monotone=True).to_dict()
    return out


def _swap(d):
    d["params"]["p0"], d["params"]["p1"] = d["params"]["p1"], d["params"]["p0"]


def _empty_bin_value(d):
    i = d["params"]["counts"].index(0.0)
    d["params"]["values"][i] = 0.25
    return i


TAMPERED = [
    ("temperature", lambda d: d["params"].update(temperature=5e-324),
     "field 'params.temperature' is 5e-324: expected a value >= 5e-09 (what fitting can give: 1 / T is searched up "
     "to 1e8)"),
    ("temperature", lambda d: d["params"].update(temperature=10**400),
     "field 'params.temperature' is an integer of about 401 digits: expected a finite number"),
    ("venn-abers", _swap, None),  # message checked below (it quotes the table values)
    ("polynomial", lambda d: d["options"].update(degree=999_999),
     "field 'options.degree' is 999999: expected an integer <= 20 (fitting takes degrees 0..20)"),
    ("polynomial", lambda d: d["params"].update(coef=[1e308, 1e308, -1e308, -1e308]) or d["options"].update(degree=3),
     "field 'params.coef' has a value outside [-1e+100, 1e+100]: entry 0 is 1e+308 (far beyond any least-squares fit "
     "on [0, 1])"),
    ("platt", lambda d: d["params"].update(a=10**5000),
     "field 'params.a' is an integer of about 5001 digits: expected a finite number"),
    ("platt", lambda d: d["params"].update(b=-3e15),
     "field 'params.b' is -3000000000000000.0: expected a value between -1e+12 and 1e+12 (fitting gives coefficients "
     "far within that range)"),
    ("beta-monotone", lambda d: d["params"].update(a=-0.5),
     "field 'params.a' is -0.5 with 'options.monotone' true: a monotone beta map has a >= 0 and b >= 0"),
    ("histogram", lambda d: d["options"].update(n_bins=10**30),
     "field 'options.n_bins' is 1000000000000000000000000000000: expected an integer <= 2147483647"),
    ("histogram", lambda d: d["options"].update(n_bins=1_000_000),
     "field 'params.values' has 15 values: expected 1000000"),
    ("isotonic", lambda d: d["params"]["y_thresholds"].reverse(), None),
    ("scaling-binning", lambda d: d["params"]["values"].reverse(), None),
    ("isotonic", lambda d: d["params"]["x_thresholds"].__setitem__(0, [[0.1]]),
     "field 'params.x_thresholds[0]' is a list: expected a number"),
    ("isotonic", lambda d: d["info"].update(deep=json.loads("[" * 40 + "]" * 40)),
     "field 'info' is nested more than 32 levels deep: expected a few facts about the fit"),
]


@pytest.mark.parametrize("name, mutate, message", TAMPERED)
def test_a_tampered_calibrator_is_refused(fitted, name, mutate, message):
    d = json.loads(json.dumps(fitted[name]))
    mutate(d)
    with pytest.raises(CalibcliError) as caught:
        calibrator_from_dict(d)
    text = str(caught.value)
    assert text.startswith("calibrator: ") and "np.float64" not in text and "\n" not in text
    if message is not None:
        assert text == f"calibrator: {message}"


def test_swapped_venn_abers_tables_are_an_inverted_interval(fitted):
    d = json.loads(json.dumps(fitted["venn-abers"]))
    _swap(d)
    with pytest.raises(CalibcliError) as caught:
        calibrator_from_dict(d)
    p0, p1 = d["params"]["p0"], d["params"]["p1"]
    i = next(i for i in range(len(p0)) if p0[i] > p1[i])
    assert str(caught.value) == (
        f"calibrator: fields 'params.p0' and 'params.p1' give an inverted interval: p0[{i}] is {p0[i]!r} but p1[{i}] is "
        f"{p1[i]!r}: Venn-Abers has p0 <= p1 at every score (swapped tables?); refit the calibrator")


def test_an_empty_bin_holds_its_midpoint(fitted):
    d = json.loads(json.dumps(fitted["histogram-empty"]))
    i = _empty_bin_value(d)
    with pytest.raises(CalibcliError) as caught:
        calibrator_from_dict(d)
    mid = (i + 0.5) / 40
    assert str(caught.value) == (
        f"calibrator: field 'params.values' has 0.25 for bin {i}, which has no calibration weight ('params.counts' is "
        f"0): fitting gives an empty bin its midpoint {mid!r}; refit the calibrator")


def test_a_scaling_binning_value_lies_in_its_bin(fitted):
    d = json.loads(json.dumps(fitted["scaling-binning"]))
    edges, values = d["params"]["edges"], d["params"]["values"]
    assert values[2] > edges[1]  # (bin 2's mean lies above bin 1's upper edge)
    values[1] = values[2]  # still non-decreasing, but outside bin 1
    with pytest.raises(CalibcliError) as caught:
        calibrator_from_dict(d)
    assert str(caught.value) == (
        f"calibrator: field 'params.values' has {values[2]!r} for bin 1, outside the bin [{edges[0]!r}, {edges[1]!r}]: "
        f"fitting gives each bin the mean of the scaled predictions in it; refit the calibrator")


def test_values_in_messages_are_as_written():
    assert shown_number(np.float64(0.1)) == "0.1"
    assert shown_number(np.int64(7)) == "7"
    assert shown_number(10**5000) == "an integer of about 5001 digits"
    assert shown_number(5e-324) == "5e-324"


# ---------------------------------------------------------------------------------------------
# predict never returns NaN or an impossible probability


def test_a_tiny_temperature_gives_hard_probabilities_not_nan():
    z = np.array([0.01, 0.3, 0.5, 0.99])
    p = TemperatureCalibrator(1e-300, 2, "binary").predict(z)  # built directly, past the reader's checks
    assert np.all(np.isfinite(p)) and np.all((p >= 0) & (p <= 1))
    assert p.tolist() == [0.0, 0.0, 0.5, 1.0]
    L = np.array([[1e308, -1e308, 0.0]])
    P = TemperatureCalibrator(1e-8, 3, "multiclass", logits=True).predict(L)
    assert P.tolist() == [[1.0, 0.0, 0.0]]


def test_a_map_that_would_give_nan_is_an_error():
    """Inverted Venn-Abers tables (p0 = 1, p1 = 0) make p1 / (1 - p0 + p1) = 0 / 0: built directly, past the
    reader's checks, predict refuses rather than return NaN."""
    cal = VennAbersCalibrator(np.array([0.5]), np.array([1.0, 1.0]), np.array([0.0, 0.0]))
    with pytest.raises(CalibcliError) as caught:
        cal.predict(np.array([0.2, 0.7]))
    assert str(caught.value) == ("the venn-abers calibrator produced a non-finite probability (nan) for the prediction "
                                 "0.2: its parameters are outside what fitting produces (edited by hand?): refit it")


def test_check_predicted_refuses_out_of_range():
    with pytest.raises(CalibcliError, match=r"produced an out-of-range probability \(1.5\)"):
        check_predicted(np.array([0.2, 1.5]))
    np.testing.assert_array_equal(check_predicted(np.array([0.0, 1.0])), [0.0, 1.0])


# ---------------------------------------------------------------------------------------------
# The file's bytes


def test_parse_refuses_depth_and_absurd_integers():
    deep = b"[" * 200_000 + b"]" * 200_000
    with pytest.raises(CalibcliError) as caught:
        parse_calibrator_json(deep)
    assert str(caught.value) == ("not a calibrator: the JSON nests deeper than 64 levels (line 1): a calibrator nests at "
                                 "most 5; expected the JSON document written by `calibcli recalibrate fit`")
    with pytest.raises(CalibcliError) as caught:
        parse_calibrator_json(b'{"n": ' + b"9" * 5000 + b"}")
    assert str(caught.value) == ("not a calibrator: an integer of 5000 digits: no field of a calibrator has more than "
                                 "100; expected the JSON document written by `calibcli recalibrate fit`")
    assert parse_calibrator_json(b'{"a": "[[[[[[", "n": 12}') == {"a": "[[[[[[", "n": 12}


def test_read_refuses_what_is_not_a_regular_file(tmp_path):
    fifo = tmp_path / "cal.json"
    os.mkfifo(fifo)
    with pytest.raises(CalibcliError) as caught:
        read_calibrator_document(str(fifo))  # would block in open() if it were opened
    assert str(caught.value) == (f"{fifo}: is a named pipe (FIFO), not a calibrator file: expected the JSON document "
                                 f"written by `calibcli recalibrate fit`, saved to a file")
    link = tmp_path / "zero.json"
    link.symlink_to("/dev/zero")
    with pytest.raises(CalibcliError) as caught:
        read_calibrator_document(str(link))  # would be read for ever
    assert str(caught.value) == (f"{link}: is a character device (a link to /dev/zero), not a calibrator file: expected "
                                 f"the JSON document written by `calibcli recalibrate fit`, saved to a file")
    with pytest.raises(CalibcliError, match=r": no such calibrator file: check the path$"):
        read_calibrator_document(str(tmp_path / "missing.json"))


# ---------------------------------------------------------------------------------------------
# Through the installed command


def _console_script() -> str:
    exe = shutil.which("calibcli", path=os.path.dirname(sys.executable))
    if exe is None:
        pytest.skip("the calibcli console script is not installed (pip install -e .)")
    return exe


@pytest.fixture(scope="module")
def saved(tmp_path_factory) -> dict[str, dict]:
    folder = tmp_path_factory.mktemp("saved")
    out = {}
    for method in ("temperature", "venn-abers", "polynomial"):
        path = folder / f"{method}.json"
        r = subprocess.run([_console_script(), "recalibrate", "fit", BINARY, "--method", method, "-o", str(path)],
                           capture_output=True, timeout=300)
        assert r.returncode == 0, r.stderr
        out[method] = json.loads(path.read_text())
    return out


def _apply(tmp_path, doc_text: str | None, path: Path | None = None):
    cal = path or tmp_path / "cal.json"
    if doc_text is not None:
        cal.write_text(doc_text)
    out = tmp_path / "out.csv"
    r = subprocess.run([_console_script(), "recalibrate", "apply", str(cal), BINARY, "-o", str(out)],
                       capture_output=True, timeout=120)
    assert not out.exists()
    assert r.returncode == 2, r.stderr
    text = r.stderr.decode()
    assert text.count("\n") == 1 and text.startswith("Error: ") and "Traceback" not in text, text
    return text.rstrip("\n"), cal


@pytest.mark.parametrize("method, mutate, message", [
    ("temperature", lambda c: c["params"].update(temperature=5e-324),
     "calibrator: field 'params.temperature' is 5e-324: expected a value >= 5e-09 (what fitting can give: 1 / T is "
     "searched up to 1e8)"),
    ("polynomial", lambda c: c["options"].update(degree=999_999),
     "calibrator: field 'options.degree' is 999999: expected an integer <= 20 (fitting takes degrees 0..20)"),
    ("venn-abers", _swap, "calibrator: fields 'params.p0' and 'params.p1' give an inverted interval"),
])
def test_apply_refuses_a_tampered_calibrator(tmp_path, saved, method, mutate, message):
    doc = json.loads(json.dumps(saved[method]))
    mutate(doc["calibrator"])
    text, cal = _apply(tmp_path, json.dumps(doc))
    assert text.startswith(f"Error: {cal}: {message}")


def test_apply_refuses_a_5000_digit_integer(tmp_path, saved):
    text = json.dumps(saved["venn-abers"]).replace('"n": 569', '"n": ' + "9" * 5000)
    got, cal = _apply(tmp_path, text)
    assert got == (f"Error: {cal}: not a calibrator: an integer of 5000 digits: no field of a calibrator has more than "
                   f"100; expected the JSON document written by `calibcli recalibrate fit`")


def test_apply_refuses_a_deep_array(tmp_path, saved):
    doc = json.dumps(saved["venn-abers"])
    text = doc[:-1] + ', "x": ' + "[" * 200_000 + "]" * 200_000 + "}"
    got, cal = _apply(tmp_path, text)
    assert got.startswith(f"Error: {cal}: not a calibrator: the JSON nests deeper than 64 levels")


def test_apply_refuses_a_fifo_or_dev_zero_as_the_calibrator(tmp_path):
    fifo = tmp_path / "cal.json"
    os.mkfifo(fifo)
    got, _ = _apply(tmp_path, None, fifo)
    assert got == (f"Error: {fifo}: is a named pipe (FIFO), not a calibrator file: expected the JSON document written "
                   f"by `calibcli recalibrate fit`, saved to a file")
    got, _ = _apply(tmp_path, None, Path("/dev/zero"))
    assert got == ("Error: /dev/zero: is a character device, not a calibrator file: expected the JSON document written "
                   "by `calibcli recalibrate fit`, saved to a file")
