"""Sweeps over a model: `ixl tune --model minilm` (every native op at its shapes, a few points
of each tuning space) and `ixl model smollm2 --file` (one generation per line, over the tiny
graph fast, over the real model once)."""

import json

import pytest

from ixl.cli import main
from ixl.executor import OK, Outcome
from ixl.hixl import ArgSpec
from ixl.models import evaluate
from ixl.models.tune import OpCase, Tuned, best_of, save, spread
from ixl.nixl import device, tuning_cache
from ixl.profile import timing_run

from .test_smollm2 import PROMPTS, model, needs_weights, tiny  # noqa: F401 (fixtures)


def test_spread_keeps_the_ends_apart():
    assert spread(list(range(24)), 3) == [0, 8, 16]
    assert spread(list(range(4)), None) == spread(list(range(4)), 9) == [0, 1, 2, 3]


def test_the_best_point_beats_the_default_and_clashing_cases_are_not_saved(tmp_path,
                                                                          monkeypatch):
    monkeypatch.setenv("IXL_TUNING_CACHE", str(tmp_path / "t.json"))
    x = ArgSpec((4, 128), "float16")
    a, b = OpCase("Transpose", (x,), (("perm", [1, 0]),), 1), OpCase("Add", (x, x), (), 2)
    tasks = [a.timing("910B1", ()), a.timing("910B1", (("buffer_num", 1),)),
             a.timing("910B1", (("buffer_num", 4),))]
    times = {tasks[0].id: 5.0, tasks[1].id: 4.0, tasks[2].id: 4.0}
    outcomes = {i: Outcome(i, OK, {"time_us": t, "path": "native"}) for i, t in times.items()}
    best = best_of(a, tasks, outcomes)
    assert (best.best_us, best.config, best.gain) == (4.0, {"buffer_num": 1}, 1.25)
    other = Tuned(OpCase("Transpose", (x,), (("perm", [0, 1]),), 1), 5.0, 5.0)  # default best
    path, clashes = save([best, other, Tuned(b, 3.0, 2.0, {"tile_div": 2})], "910B1")
    assert clashes == ["Transpose (4, 128) float16"]
    assert json.loads((tmp_path / "t.json").read_text()) == {
        tuning_cache.key("910B1", "Add", [(4, 128), (4, 128)], "float16"): {"tile_div": 2}}
    assert path == str(tmp_path / "t.json")


@pytest.mark.slow
def test_tune_model_minilm_on_two_points_per_op(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("IXL_TUNING_CACHE", str(tmp_path / "t.json"))
    assert main(["tune", "--model", "minilm", "--max-points", "2", "--workers", "1",
                 "--json", "--save"]) == 0
    report = json.loads(capsys.readouterr().out)
    cases = report["cases"]
    ops = {c["op"] for c in cases}
    assert {"LayerNormalization", "Softmax", "MatMul", "Add", "Gather"} <= ops  # Cube
    layer_norm = next(c for c in cases if c["op"] == "LayerNormalization")
    assert layer_norm["launches"] == 13 and layer_norm["inputs"][0]["shape"] == [1, 128, 384]
    for c in cases:
        assert c["why_not"] is None and c["best_us"] <= c["default_us"] and c["gain"] >= 1
    assert report["tuned_us"] <= report["default_us"]
    softmax = next(c for c in cases if c["op"] == "Softmax")      # a default, re-timed here
    dev = device("910B1", timing_only=True)
    try:
        alone = timing_run(dev, "Softmax", [ArgSpec((1, 12, 128, 128), "float32")],
                           softmax["attrs"], {})
    finally:
        dev.close()
    assert softmax["default_us"] == alone.time_us
    stored = json.loads((tmp_path / "t.json").read_text())
    assert len(stored) == sum(c["config"] is not None for c in cases) - len(report["not_saved"])


@needs_weights
def test_a_prompts_file_generates_line_by_line(tiny, tmp_path, monkeypatch, capsys):
    tiny_model = tiny[0]
    monkeypatch.setattr(evaluate, "SmolLM2", lambda chip, dtype, rungs: tiny_model)
    prompts = ["<|endoftext|>", "<|im_start|><|endoftext|>"]
    (tmp_path / "p.txt").write_text("\n".join(prompts) + "\n", encoding="utf-8")
    out = tmp_path / "g.jsonl"
    assert main(["model", "smollm2", "--file", str(tmp_path / "p.txt"), "--max-new-tokens",
                 "3", "--out", str(out), "--workers", "1"]) == 0
    assert "wrote" in capsys.readouterr().out
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    for line, (prompt, row) in enumerate(zip(prompts, rows), 1):
        expected = tiny_model.generate(prompt, 3)
        assert row["line"] == line and row["prompt"] == prompt
        assert row["tokens"] == expected.tokens and row["text"] == expected.text
        assert row["ttft_us"] == expected.ttft_us and row["tpot_us"] == expected.tpot_us


@needs_weights
@pytest.mark.parametrize("argv, message", [
    (["--prompt", "Hi", "--out", "g.jsonl"], "--out goes with --file"),
    (["--prompt", "Hi", "--workers", "2"], "--workers: it goes with --file"),
    (["--file", "p.txt", "--out", "g.npy"], "give a .jsonl (one generation per line) or .json"),
])
def test_prompts_file_flags_are_checked(argv, message, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "p.txt").write_text("Hi\n")
    assert main(["model", "smollm2", *argv]) == 2
    assert message in capsys.readouterr().err


@needs_weights
@pytest.mark.slow
def test_smollm2_file_with_two_prompts_gives_the_reference_tokens(model, tmp_path, capsys):
    """The real model through the file path (that a line's modeled times are a single prompt
    run's is test_a_prompts_file_generates_line_by_line's, over the tiny graph); the second
    line is short, a prefill of one token, so that the second generation costs little."""
    prompts = [PROMPTS[0]["prompt"], "Hi"]
    (tmp_path / "p.txt").write_text("\n".join(prompts) + "\n", encoding="utf-8")
    out = tmp_path / "g.json"
    assert main(["model", "smollm2", "--file", str(tmp_path / "p.txt"), "--max-new-tokens", "1",
                 "--out", str(out), "--workers", "1", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    rows = json.loads(out.read_text())
    assert report["generations"] == rows and report["out"] == str(out)
    assert [r["line"] for r in rows] == [1, 2] and all(len(r["tokens"]) == 1 for r in rows)
    assert not PROMPTS[0]["chat"] and rows[0]["tokens"] == PROMPTS[0]["new_ids"][:1]
    for row in rows:
        assert row["text"] == model.tokenizer.decode(row["tokens"], skip_special_tokens=True)
        assert row["ttft_us"] > 0 and row["tpot_us"] is None     # one token: no decode step
