"""Dynamic shapes: an ONNX graph prepared once runs any input shape; its shape arithmetic is
evaluated on the host at each call (no launch, no device time); host tilings are cached by
shape; shape buckets pad named dims and crop the outputs; no-op Casts and Identity chains
vanish; the shim charges what a fallback reads."""

import os
import subprocess
import sys

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

import ixl
from ixl.ascend.costs import cost_table
from ixl.hixl import BadInput, get_op
from ixl.nixl import tiling_cache
from ixl.nixl.registry import Registry
from ixl.nixl.shim import run_shim
from ixl.onnx import IxlBackend

F32, I64 = TensorProto.FLOAT, TensorProto.INT64
node = helper.make_node
rng = np.random.default_rng(3)


def heads_model():
    """x (batch, seq, 64) -> (batch, 4, seq, 16) through the shape arithmetic an exporter
    writes: Shape, Gather, Unsqueeze, Concat, Reshape, then a Transpose and a Relu."""
    const = lambda name, v: node("Constant", [], [name],  # noqa: E731
                                 value=numpy_helper.from_array(np.array(v, np.int64), name))
    nodes = [node("Shape", ["x"], ["shape"]),
             const("zero", 0), const("one", 1), const("tail", [4, 16]),
             node("Gather", ["shape", "zero"], ["b"], axis=0),
             node("Gather", ["shape", "one"], ["s"], axis=0),
             node("Unsqueeze", ["b", "ax"], ["b1"]), node("Unsqueeze", ["s", "ax"], ["s1"]),
             node("Concat", ["b1", "s1", "tail"], ["target"], axis=0),
             node("Reshape", ["x", "target"], ["r"]),
             node("Transpose", ["r"], ["t"], perm=[0, 2, 1, 3]),
             node("Identity", ["t"], ["i1"]), node("Identity", ["i1"], ["i2"]),
             node("Cast", ["i2"], ["c"], to=F32),
             node("Relu", ["c"], ["y"])]
    graph = helper.make_graph(
        nodes, "heads", [helper.make_tensor_value_info("x", F32, ["batch", "seq", 64])],
        [helper.make_tensor_value_info("y", F32, ["batch", 4, "seq", 16])],
        initializer=[numpy_helper.from_array(np.array([0], np.int64), "ax")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])


def test_one_preparation_runs_every_shape_with_the_shape_arithmetic_on_the_host():
    model = heads_model()
    rep = IxlBackend.prepare(model)
    for batch, seq in ((1, 7), (2, 128), (3, 33)):
        x = rng.standard_normal((batch, seq, 64)).astype(np.float32)
        (y,) = rep.run({"x": x})
        np.testing.assert_array_equal(y, ReferenceEvaluator(model).run(None, {"x": x})[0])
        runs = rep.last_graph.runs
        host = [r for r in runs if r.path == "host"]
        assert {r.op for r in host} == {"Shape", "Constant", "Gather", "Unsqueeze", "Concat"}
        assert all(r.time_us == 0 and r.launch is None for r in host)
        device = [(r.op, r.path) for r in runs if r.path != "host"]
        # Reshape is a view; the Identities and the Cast to float32 of a float32 vanish.
        assert device == [("Reshape", "view"), ("Transpose", "native"), ("Relu", "native")]


def test_host_tilings_are_cached_by_shape():
    rep = IxlBackend.prepare(heads_model())
    x = rng.standard_normal((2, 50, 64)).astype(np.float32)
    rep.run({"x": x})
    before = tiling_cache.stats()
    rep.run({"x": x})
    after = tiling_cache.stats()
    assert after.hits - before.hits == 2 and after.misses == before.misses   # Transpose, Relu
    rep.run({"x": x[:, :49]})
    assert tiling_cache.stats().misses - after.misses == 2                   # a new shape


def test_the_debug_log_counts_tiling_cache_hits_and_misses():
    script = ("import numpy as np, ixl\n"
              "dev = ixl.device('910B1')\n"
              "x = dev.tensor(np.ones(1000, np.float16))\n"
              "dev.run('Relu', x); dev.run('Relu', x)\n")
    env = {**os.environ, "IXL_LOG": "debug"}
    err = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                         text=True, check=True).stderr
    assert "tiling cache miss Relu (hits 0, misses 1)" in err
    assert "tiling cache hit Relu (hits 1, misses 1)" in err


def test_buckets_pad_named_dims_and_crop_the_outputs():
    model = heads_model()
    rep = IxlBackend.prepare(model, buckets={"seq": 32})
    x = rng.standard_normal((1, 45, 64)).astype(np.float32)
    (y,) = rep.run({"x": x})
    np.testing.assert_array_equal(y, ReferenceEvaluator(model).run(None, {"x": x})[0])
    transpose = next(r for r in rep.last_graph.runs if r.op == "Transpose")
    assert transpose.shapes == [(1, 64, 4, 16)]                     # 45 padded to 64
    with pytest.raises(BadInput, match="positive integer"):
        IxlBackend.prepare(model, buckets={"seq": 0})


def test_named_dims_stay_within_their_declared_ranges():
    rep = IxlBackend.prepare(heads_model(), dim_ranges={"seq": (1, 64)})
    rep.run({"x": np.zeros((1, 64, 64), np.float32)})
    with pytest.raises(BadInput, match=r"dim seq is 65, outside its declared range \[1, 64\]"):
        rep.run({"x": np.zeros((1, 65, 64), np.float32)})


def test_the_cli_takes_buckets():
    from ixl.onnx.cli import parse_buckets
    assert parse_buckets(["128"]) == {"*": 128}
    assert parse_buckets(["seq=64", "batch=2"]) == {"seq": 64, "batch": 2}
    for bad in (["0"], ["seq=x"], ["=4"], ["4", "8"]):
        with pytest.raises(BadInput):
            parse_buckets(bad)


def test_inputs_read_only_as_shapes_fold_on_the_host():
    """Range's bounds and ConstantOfShape's shape are graph inputs: the host reads them."""
    nodes = [node("Range", ["start", "limit", "delta"], ["r"]),
             node("ConstantOfShape", ["shape"], ["z"],
                  value=numpy_helper.from_array(np.array([2.0], np.float32), "v"))]
    graph = helper.make_graph(
        nodes, "host", [helper.make_tensor_value_info(n, I64, []) for n in
                        ("start", "limit", "delta")]
        + [helper.make_tensor_value_info("shape", I64, [2])],
        [helper.make_tensor_value_info("r", I64, [None]),
         helper.make_tensor_value_info("z", F32, [None, None])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    rep = IxlBackend.prepare(model)
    feeds = {"start": np.array(2, np.int64), "limit": np.array(11, np.int64),
             "delta": np.array(3, np.int64), "shape": np.array([2, 3], np.int64)}
    r, z = rep.run(feeds)
    np.testing.assert_array_equal(r, [2, 5, 8])
    np.testing.assert_array_equal(z, np.full((2, 3), 2, np.float32))
    assert [(x.op, x.path) for x in rep.last_graph.runs] == [("Range", "host"),
                                                            ("ConstantOfShape", "host")]


def test_a_shim_gather_moves_the_rows_it_picks_not_the_table():
    dev = ixl.device("910B1", registry=Registry(load_library=False))
    table = dev.empty((30522, 384), "float32")
    idx = dev.tensor(np.arange(5, dtype=np.int64))
    out = dev.empty((5, 384), "float32")
    record = run_shim(dev, get_op("Gather"), [table, idx], [out], {"axis": 0}, "test")
    costs = cost_table(dev.chip.arch)
    want = (costs.host_copy_us(5 * 8) + costs.host_copy_us(5 * 384 * 4)
            + costs.host_copy_us(5 * 384 * 4))
    assert record.host_us == pytest.approx(want)
    assert record.host_us < costs.host_copy_us(30522 * 384 * 4) / 10
    shape_only = run_shim(dev, get_op("Shape"), [table], [dev.empty((2,), "int64")], {
        "start": 0, "end": None}, "test")
    assert shape_only.host_us == pytest.approx(costs.host_copy_us(16))   # the output only


def test_dims_declared_minus_one_are_dynamic():
    """PaddlePaddle's exports declare unknown dims as -1; onnxruntime takes them as dynamic."""
    graph = helper.make_graph(
        [node("Relu", ["x"], ["y"])], "paddle",
        [helper.make_tensor_value_info("x", F32, [-1, 3, -1])],
        [helper.make_tensor_value_info("y", F32, [-1, 3, -1])])
    rep = IxlBackend.prepare(helper.make_model(graph,
                                               opset_imports=[helper.make_opsetid("", 17)]))
    for shape in ((2, 3, 4), (5, 3, 1)):
        x = rng.standard_normal(shape).astype(np.float32)
        (y,) = rep.run({"x": x})
        np.testing.assert_array_equal(y, np.maximum(x, 0))
