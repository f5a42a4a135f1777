"""`ixl calibrate`: every measured 910B1 point within 15%, the Add ladder in measured order."""

import json

import pytest

from ixl.cli import main


@pytest.mark.slow
def test_calibration_within_15_percent_and_in_measured_order(capsys):
    assert main(["calibrate", "--json"]) == 0
    points = json.loads(capsys.readouterr().out)
    assert len(points) == 7
    for p in points:
        assert set(p) >= {"name", "modeled_us", "measured_us", "ratio"}
        assert 0.85 <= p["ratio"] <= 1.15, p
    add = [p for p in points if p["name"].startswith("add")]
    copy = [p for p in points if p["name"].startswith("copy")]
    for ladder in (add, copy):
        modeled = [p["modeled_us"] for p in ladder]
        assert modeled == sorted(modeled, reverse=True), ladder   # each variant faster
