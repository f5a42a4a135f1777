"""`ixl tune` as a sweep: the ladder and the chosen configuration are the in-process tuner's
whichever way the points run, and a results file resumes the ladder without running a point
again."""

import json

import numpy as np
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
    (["tune", "--model", "smollm2", "--dtype", "int8"],
     "SmolLM2-135M-Instruct runs in float32, float16, bfloat16"),
    (["tune", "Add", "--shape", "4", "--workers", "2", "--ray", "auto"], "choose one"),
])
def test_tune_flags_are_checked(argv, message, capsys):
    assert main(argv) == 2
    assert message in capsys.readouterr().err


def test_a_model_launch_with_a_host_input_is_timed_with_its_contents():
    """A Slice's starts, ends, axes and steps are read by the host: the case carries them, so
    its timing task runs the launch the model ran (a spec alone would give zero steps)."""
    from onnx import TensorProto, helper

    from ixl.models.tune import launch_cases
    from ixl.onnx import IxlBackend

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [5, 64])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 64])
    ints = {n: helper.make_tensor(n, TensorProto.INT64, [1], [v])
            for n, v in (("s", -1), ("e", 2 ** 63 - 1), ("a", 0), ("t", 1))}
    graph = helper.make_graph([helper.make_node("Exp", ["x"], ["z"]),
                               helper.make_node("Slice", ["z", "s", "e", "a", "t"], ["y"])],
                              "g", [x], [y], list(ints.values()))
    rep = IxlBackend.prepare(helper.make_model(graph))
    feeds = {"x": np.ones((5, 64), np.float32)}
    rep.run(feeds)
    specialised, _ = rep.specialise(feeds)
    cases = launch_cases([(rep.last_graph, specialised, {"x": ArgSpec((5, 64), "float32")})],
                         "910B1")
    sliced = next(c for c in cases if c.op == "Slice")
    assert [s.value for s in sliced.specs[1:]] == [(-1,), (2 ** 63 - 1,), (0,), (1,)]
    ok, found = sliced.timing("910B1", ()).run()
    assert ok and found["path"] == "native" and found["time_us"] > 0
    assert "=[-1]" in sliced.timing("910B1", ()).id
