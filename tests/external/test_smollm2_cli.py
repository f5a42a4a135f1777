"""`ixl model smollm2`: the text streamed, the modeled times, the profile of prefill and
decode, --json, and bad input as one line. The format is checked over SmolLM2's tokenizer with
the tiny graph of test_smollm2 (fast); one run of the real model continues the README's
prompt."""

import json

import pytest

from ixl.cli import main
from ixl.models import smollm2_cli

from .test_smollm2 import PROMPTS, model, needs_weights, tiny  # noqa: F401 (fixtures)

pytestmark = needs_weights


@pytest.fixture
def tiny_cli(tiny, monkeypatch):
    """The command over the tiny graph (whatever chip and dtype it is given)."""
    model = tiny[0]
    monkeypatch.setattr(smollm2_cli, "SmolLM2", lambda chip, dtype, rungs: model)
    return model


def test_the_text_streams_then_the_modeled_times_and_both_profiles(tiny_cli, capsys):
    assert main(["model", "smollm2", "--prompt", "<|endoftext|>", "--max-new-tokens", "3",
                 "--profile"]) == 0
    text = capsys.readouterr().out
    result = tiny_cli.generate("<|endoftext|>", 3)
    lines = text.splitlines()
    assert lines[0] == result.text                        # streamed first, on its own line
    assert f"{result.ttft_us:.1f} us to the first token (prefill of 1 tokens)" in text
    assert f"{result.tpot_us:.1f} us per output token (decode, the mean of 2 steps)" in text
    assert "KV cache: 1 tensors of 4 positions, 64 bytes allocated once on the device" in text
    assert "(1 ScatterND, 16 bytes per step, native launches)" in text
    for title in ("prefill: 1 prompt tokens in one graph run", "decode: one step (the mean of 2)",
                  "every run of the first decode step"):
        assert title in text
    assert "ScatterND" in text and "MatMul" in text


def test_json_gives_tokens_text_times_and_shares(tiny_cli, capsys):
    assert main(["model", "smollm2", "--prompt", "<|endoftext|>", "--max-new-tokens", "4",
                 "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)            # nothing but the document
    result = tiny_cli.generate("<|endoftext|>", 4)
    assert doc["tokens"] == result.tokens and doc["text"] == result.text
    assert doc["ttft_us"] == result.ttft_us and doc["tpot_us"] == result.tpot_us
    runs = [run for record in result.records for run in record.runs]
    native = sum(r.time_us for r in runs if r.path == "native")
    assert doc["native_share"] == pytest.approx(native / sum(r.time_us for r in runs))
    assert doc["shim_runs"] == sum(r.path == "shim" for r in runs) == 0     # cache rows native
    assert doc["kv_cache"] == {"tensors": 1, "capacity": 5, "bytes": 80,
                               "writes_per_step": 1, "native_writes_per_step": 1,
                               "bytes_written_per_step": 16}
    assert doc["decode"]["steps"] == len(result.tokens) - 1
    assert sum(op["share"] for op in doc["prefill"]["ops"]) == pytest.approx(1)
    assert doc["prefill"]["time_us"] == pytest.approx(result.ttft_us)
    assert doc["decode"]["time_us"] == pytest.approx(result.tpot_us)


@pytest.mark.parametrize("argv, message", [
    (["--prompt", "hi", "--max-new-tokens", "0"], "--max-new-tokens 0: give at least 1"),
    (["--prompt", ""], "the prompt is empty: give at least one character"),
    (["--prompt", "caf\udce9"], "--prompt is not valid UTF-8: byte(s) e9 at character 3"),
    (["--prompt", "x\udbff"], "--prompt holds a lone surrogate, U+DBFF, at character 1"),
    (["--prompt", "hi", "--chip", "910C"], "910C"),
    (["--prompt", "hi", "--dtype", "int8"], "invalid choice: 'int8'"),
    (["--max-new-tokens", "2"], "one of the arguments --prompt --file is required")])
def test_bad_input_is_one_line(tiny_cli, capsys, argv, message):
    assert main(["model", "smollm2", *argv]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    (line,) = captured.err.splitlines()
    assert line.startswith("ixl: error: ") and message in line, line


@pytest.mark.slow
def test_the_capital_of_france(capsys):
    """The README's command, on the real model (a prefill and one decode step)."""
    assert main(["model", "smollm2", "--prompt", PROMPTS[0]["prompt"], "--max-new-tokens", "2",
                 "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["tokens"] == PROMPTS[0]["new_ids"][:2] and doc["text"] == " Paris."
    assert doc["kv_cache"]["writes_per_step"] == 60 and doc["kv_cache"]["capacity"] == 7
    assert doc["kv_cache"]["native_writes_per_step"] == 60          # the cache rows, natively
    assert doc["decode"]["steps"] == 1
    assert doc["shim_runs"] == 0 and doc["native_share"] == pytest.approx(1)   # the mask too
