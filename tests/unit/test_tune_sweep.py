"""`ixl tune` as a sweep: the ladder and the chosen configuration are the in-process tuner's
whichever way the points run, and a results file resumes the ladder without running a point
again."""

import json

import pytest

from ixl.cli import main
from ixl.executor import InProcess, ProcessPool, run_sweep
from ixl.hixl import ArgSpec
from ixl.nixl import NixlError
from ixl.profile.tune import NotTunable, Tuner
from ixl.profile.tune_sweep import LadderSweep

RELU = ("910B1", "Relu", [ArgSpec((256, 256), "float16")], {}, ["Exp"])


def in_process_ladder(chip, op, specs, attrs, then):
    tuner = Tuner(chip, op, specs, attrs, then)
    try:
        return tuner.ladder()
    finally:
        tuner.close()


def test_the_sweep_asks_for_every_point_of_the_ladder():
    sweep = LadderSweep(*RELU).sweep()
    variants = [task.variant for task in sweep.tasks]
    assert variants[:3] == ["single buffer", "double buffer", "4-slot pipeline"]
    assert variants.count("tuned") == variants.count("fused") == 24     # the whole space
    assert len({task.id for task in sweep.tasks}) == len(sweep.tasks)


def test_the_pool_gives_the_in_process_ladder_and_choice():
    expected = in_process_ladder(*RELU)
    ladder = LadderSweep(*RELU)
    for backend in (InProcess(), ProcessPool(2)):
        report = run_sweep(ladder.sweep(), backend)
        assert ladder.ladder(report.outcomes) == expected, backend.describe()
    rows, chosen = expected
    assert [r.variant for r in rows][-1] == "fused" and chosen.time_us == min(
        r.time_us for r in rows)


def test_an_error_of_a_point_ends_the_ladder_as_in_process():
    shim = ("910B1", "Pow", [ArgSpec((4, 5), "float16")] * 2, {}, [])
    with pytest.raises(NotTunable) as in_process:
        in_process_ladder(*shim)
    ladder = LadderSweep(*shim)
    with pytest.raises(NixlError) as swept:
        ladder.ladder(run_sweep(ladder.sweep()).outcomes)
    assert type(swept.value) is NotTunable and str(swept.value) == str(in_process.value)


def test_cli_through_the_pool_and_resumed(tmp_path, capsys):
    argv = ["tune", "Add", "--shape", "512,512", "--json"]
    assert main(argv) == 0
    alone = json.loads(capsys.readouterr().out)
    results = str(tmp_path / "tune.jsonl")
    assert main([*argv, "--workers", "2", "--results", results]) == 0
    assert json.loads(capsys.readouterr().out) == alone
    lines = (tmp_path / "tune.jsonl").read_text().splitlines()
    assert json.loads(lines[0])["kind"] == "tune" and len(lines) == 1 + 3 + 24
    assert main([*argv[:-1], "--results", results, "--resume"]) == 0
    text = capsys.readouterr().out
    assert "chosen: tuned" in text and "│    27 │                    27 │       0 │" in text
    assert (tmp_path / "tune.jsonl").read_text().splitlines() == lines   # nothing ran again


@pytest.mark.parametrize("argv, message", [
    (["tune"], "give an op and its --shape (or --model NAME"),
    (["tune", "Add", "--shape", "4", "--max-points", "3"], "--max-points goes with --model"),
    (["tune", "Add", "--model", "minilm"], "drop OP"),
    (["tune", "--model", "minilm", "--shape", "4", "--then", "Exp"], "drop --shape, --then"),
    (["tune", "--model", "minilm", "--max-points", "0"], "--max-points 0: give at least 1"),
    (["tune", "--model", "minilm", "--dtype", "bfloat16"], "runs in float32, float16"),
    (["tune", "Add", "--shape", "4", "--workers", "2", "--ray", "auto"], "choose one"),
])
def test_tune_flags_are_checked(argv, message, capsys):
    assert main(argv) == 2
    assert message in capsys.readouterr().err
