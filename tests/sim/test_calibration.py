"""`ixl calibrate`: every measured 910B1 point within 10% (the launches and the Add's vector time
per core), each ladder in measured order; a chip with no measurements lists what its costs rest
on and gives no deviation."""

import json

import pytest

from ixl.cli import main


@pytest.mark.slow
def test_calibration_within_10_percent_and_in_measured_order(capsys):
    assert main(["calibrate", "--json"]) == 0
    points = json.loads(capsys.readouterr().out)
    assert len(points) == 8
    for p in points:
        assert set(p) >= {"name", "modeled_us", "measured_us", "ratio"}
        assert 0.90 <= p["ratio"] <= 1.10, p
    vector = [p for p in points if p["name"].endswith("vector time per core")]
    assert [p["measured_us"] for p in vector] == [6.95]
    launches = [p for p in points if p not in vector]
    add = [p for p in launches if p["name"].startswith("add")]
    copy = [p for p in launches if p["name"].startswith("copy")]
    for ladder in (add, copy):
        modeled = [p["modeled_us"] for p in ladder]
        assert modeled == sorted(modeled, reverse=True), ladder   # each variant faster


@pytest.mark.parametrize("chip", ["950", "310P3"])
def test_a_chip_with_no_measurements_says_so_and_gives_no_deviation(capsys, chip):
    assert main(["calibrate", "--chip", chip]) == 0
    text = capsys.readouterr().out
    assert "there are no measurements for" in text and "deviation" in text
    assert "measured (us)" not in text and "worst deviation" not in text
    assert main(["calibrate", "--chip", chip, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["measurements"] == []
    costs = dict((c["cost"], c["provenance"]) for c in report["costs"])
    # what it inherits from the 910B1's table is assumed, and says where it comes from
    assert costs["mte.port_bytes_per_cycle"].startswith("assumed [U]: carried over from dav-c220")
    assert all(p.split()[0] in ("published", "assumed", "fitted") for p in costs.values())


def test_the_measured_chip_lists_its_fitted_published_and_assumed_costs(capsys):
    from ixl.calibration import provenance
    kinds = {p.split()[0] for _, p in provenance("910B1")}
    assert kinds == {"published", "fitted", "assumed"}
