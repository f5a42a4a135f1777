"""The ONNX passes, each on a graph built with onnx.helper: the graph before and after the pass
against onnx's ReferenceEvaluator, and the pass's effect on the nodes that run."""

import math

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

from ixl.hixl import ArgSpec
from ixl.onnx import IxlBackend
from ixl.onnx.backend import IxlBackendRep
from ixl.onnx.passes import fold_batch_norm, fold_constants, optimize, specialize
from ixl.onnx.patterns import fuse_patterns

F32 = TensorProto.FLOAT
node = helper.make_node
rng = np.random.default_rng(7)


def model(nodes, inputs, outputs, initializers=(), opset=18):
    graph = helper.make_graph(nodes, "g", inputs, outputs,
                              initializer=[numpy_helper.from_array(v, k)
                                           for k, v in dict(initializers).items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def value(name, shape, dtype=F32):
    return helper.make_tensor_value_info(name, dtype, shape)


def run(m, feeds, rewrite=None):
    """Outputs of the model through ixl (after `rewrite` of its graph), and the nodes that ran."""
    rep = IxlBackend.prepare(m)
    if rewrite is not None:
        graph = rewrite(rep.graph)
        inputs = [s for s in rep.converted.inputs if s.name in graph.inputs]   # fixed ones go
        rep = IxlBackendRep(rep.converted.__class__(graph, inputs, rep.converted.outputs,
                                                    rep.converted.opset))
        feeds = {k: v for k, v in feeds.items() if k in graph.inputs}
    outs = rep.run(feeds)
    return outs, [r.op for r in rep.last_graph.runs]


def check(m, feeds, rewrite, rtol=1e-5, atol=1e-5):
    expected = ReferenceEvaluator(m).run(None, feeds)
    before, ops_before = run(m, feeds)
    after, ops_after = run(m, feeds, rewrite)
    for a, b, e in zip(before, after, expected):
        np.testing.assert_allclose(a, e, rtol=rtol, atol=atol)
        np.testing.assert_allclose(b, e, rtol=rtol, atol=atol)
    return ops_before, ops_after


def test_constant_folding_computes_every_constant_subgraph_not_only_shapes():
    w = rng.standard_normal((6, 4)).astype(np.float32)
    nodes = [node("Transpose", ["w"], ["wt"], perm=[1, 0]),
             node("Constant", [], ["two"], value=numpy_helper.from_array(np.float32(2), "c")),
             node("Mul", ["wt", "two"], ["w2"]), node("Tanh", ["w2"], ["w3"]),
             node("MatMul", ["x", "w3"], ["y"])]
    m = model(nodes, [value("x", [3, 4])], [value("y", [3, 6])], {"w": w})
    x = rng.standard_normal((3, 4)).astype(np.float32)
    before, after = check(m, {"x": x}, fold_constants)
    assert before == ["Transpose", "Constant", "Mul", "Tanh", "MatMul"] and after == ["MatMul"]


def _conv_bn(bias=True):
    c, m_ = 3, 4
    inits = {"w": rng.standard_normal((m_, c, 3, 3)).astype(np.float32),
             "s": rng.uniform(0.5, 2, m_).astype(np.float32),
             "bb": rng.standard_normal(m_).astype(np.float32),
             "mu": rng.standard_normal(m_).astype(np.float32),
             "var": rng.uniform(0.5, 2, m_).astype(np.float32)}
    conv_in = ["x", "w"]
    if bias:
        inits["b"] = rng.standard_normal(m_).astype(np.float32)
        conv_in.append("b")
    nodes = [node("Conv", conv_in, ["h"], pads=[1, 1, 1, 1]),
             node("BatchNormalization", ["h", "s", "bb", "mu", "var"], ["y"], epsilon=1e-3)]
    return model(nodes, [value("x", [2, c, 6, 6])], [value("y", [2, m_, 6, 6])], inits)


@pytest.mark.parametrize("bias", [True, False])
def test_batch_norm_folds_into_the_conv_before_it(bias):
    x = rng.standard_normal((2, 3, 6, 6)).astype(np.float32)
    before, after = check(_conv_bn(bias), {"x": x}, fold_batch_norm, rtol=1e-4, atol=1e-4)
    assert before == ["Conv", "BatchNormalization"] and after == ["Conv"]


def test_conv1d_runs_as_a_2d_conv():
    w = rng.standard_normal((5, 3, 4)).astype(np.float32)
    m = model([node("Conv", ["x", "w"], ["y"], pads=[1, 2], strides=[2], dilations=[1])],
              [value("x", [2, 3, 16])], [value("y", [2, 5, 8])], {"w": w})
    x = rng.standard_normal((2, 3, 16)).astype(np.float32)
    (ours,), ops = run(m, {"x": x})
    np.testing.assert_allclose(ours, ReferenceEvaluator(m).run(None, {"x": x})[0],
                               rtol=1e-5, atol=1e-5)
    assert ops == ["Unsqueeze", "Unsqueeze", "Conv", "Squeeze"]


def _rms_nodes(x, out, square="Pow", reciprocal=False):
    nodes = [node("Pow", [x, "two"], ["sq"]) if square == "Pow" else node("Mul", [x, x], ["sq"]),
             node("ReduceMean", ["sq", "axes"], ["ms"]), node("Add", ["ms", "eps"], ["mse"]),
             node("Sqrt", ["mse"], ["rms"])]
    if reciprocal:
        nodes += [node("Reciprocal", ["rms"], ["inv"]), node("Mul", [x, "inv"], ["normed"])]
    else:
        nodes += [node("Div", [x, "rms"], ["normed"])]
    return nodes + [node("Mul", ["normed", "gamma"], [out])]


RMS_CONSTANTS = {"two": np.float32(2), "axes": np.array([-1], np.int64),
                 "eps": np.float32(1e-6)}


@pytest.mark.parametrize("square, reciprocal", [("Pow", False), ("Mul", True)])
def test_rms_norm_decomposition_becomes_rms_normalization(square, reciprocal):
    inits = {**RMS_CONSTANTS, "gamma": rng.standard_normal(16).astype(np.float32)}
    m = model(_rms_nodes("x", "y", square, reciprocal), [value("x", [2, 5, 16])],
              [value("y", [2, 5, 16])], inits)
    x = rng.standard_normal((2, 5, 16)).astype(np.float32)
    _, after = check(m, {"x": x}, fuse_patterns)
    assert after == ["RMSNormalization"]


def test_layer_norm_decomposition_becomes_layer_normalization():
    inits = {"two": np.float32(2), "axes": np.array([-1], np.int64), "eps": np.float32(1e-5),
             "gamma": rng.standard_normal(16).astype(np.float32),
             "beta": rng.standard_normal(16).astype(np.float32)}
    nodes = [node("ReduceMean", ["x", "axes"], ["mu"]), node("Sub", ["x", "mu"], ["d"]),
             node("Pow", ["d", "two"], ["sq"]), node("ReduceMean", ["sq", "axes"], ["var"]),
             node("Add", ["var", "eps"], ["ve"]), node("Sqrt", ["ve"], ["sd"]),
             node("Div", ["d", "sd"], ["n"]), node("Mul", ["n", "gamma"], ["g"]),
             node("Add", ["g", "beta"], ["y"])]
    m = model(nodes, [value("x", [4, 16])], [value("y", [4, 16])], inits)
    x = rng.standard_normal((4, 16)).astype(np.float32)
    _, after = check(m, {"x": x}, fuse_patterns)
    assert after == ["LayerNormalization"]


@pytest.mark.parametrize("form", ["(x*p)*0.5", "(0.5x)*p", "x*(p*0.5)"])
def test_erf_gelu_decomposition_becomes_gelu(form):
    inits = {"root2": np.float32(math.sqrt(2)), "one": np.float32(1), "half": np.float32(0.5)}
    nodes = [node("Div", ["x", "root2"], ["s"]), node("Erf", ["s"], ["e"]),
             node("Add", ["e", "one"], ["p"])]
    nodes += {"(x*p)*0.5": [node("Mul", ["x", "p"], ["m"]), node("Mul", ["m", "half"], ["y"])],
              "(0.5x)*p": [node("Mul", ["x", "half"], ["h"]), node("Mul", ["h", "p"], ["y"])],
              "x*(p*0.5)": [node("Mul", ["p", "half"], ["h"]), node("Mul", ["x", "h"], ["y"])],
              }[form]
    m = model(nodes, [value("x", [8, 32])], [value("y", [8, 32])], inits)
    x = rng.standard_normal((8, 32)).astype(np.float32)
    _, after = check(m, {"x": x}, fuse_patterns)
    assert after == ["Gelu"]


def test_tanh_gelu_decomposition_becomes_gelu_tanh():
    inits = {"three": np.float32(3), "k": np.float32(0.044715),
             "c": np.float32(math.sqrt(2 / math.pi)), "one": np.float32(1),
             "half": np.float32(0.5)}
    nodes = [node("Pow", ["x", "three"], ["x3"]), node("Mul", ["x3", "k"], ["kx3"]),
             node("Add", ["x", "kx3"], ["inner"]), node("Mul", ["inner", "c"], ["u"]),
             node("Tanh", ["u"], ["t"]), node("Add", ["t", "one"], ["p"]),
             node("Mul", ["x", "p"], ["m"]), node("Mul", ["m", "half"], ["y"])]
    m = model(nodes, [value("x", [8, 32])], [value("y", [8, 32])], inits)
    x = rng.standard_normal((8, 32)).astype(np.float32)
    _, after = check(m, {"x": x}, fuse_patterns)
    assert after == ["Gelu"]


def test_a_chain_with_a_second_reader_is_left_alone():
    """The squared values are also a graph output: fusing would lose them."""
    inits = {**RMS_CONSTANTS, "gamma": np.ones(16, np.float32)}
    m = model(_rms_nodes("x", "y"), [value("x", [2, 16])],
              [value("y", [2, 16]), value("sq", [2, 16])], inits)
    x = rng.standard_normal((2, 16)).astype(np.float32)
    before, after = check(m, {"x": x}, fuse_patterns)
    assert before == after


def test_an_attention_mask_subgraph_folds_when_the_mask_is_fixed():
    """mask (1, S) int64 -> float -> (1 - m) * -1e9 -> (1, 1, 1, S), added to the scores."""
    s = 6
    inits = {"one": np.float32(1), "big": np.float32(-1e9), "axes": np.array([1, 2], np.int64)}
    nodes = [node("Cast", ["mask"], ["mf"], to=F32), node("Sub", ["one", "mf"], ["inv"]),
             node("Mul", ["inv", "big"], ["bias"]), node("Unsqueeze", ["bias", "axes"], ["b4"]),
             node("Add", ["scores", "b4"], ["masked"]),
             node("Softmax", ["masked"], ["p"], axis=-1)]
    m = model(nodes, [value("scores", [1, 2, s, s]), value("mask", [1, s], TensorProto.INT64)],
              [value("p", [1, 2, s, s])], inits)
    scores = rng.standard_normal((1, 2, s, s)).astype(np.float32)
    mask = np.array([[1, 1, 1, 1, 0, 0]], np.int64)
    fixed = lambda g: specialize(g, {"scores": ArgSpec((1, 2, s, s), "float32")},  # noqa: E731
                                 fixed={"mask": mask})
    before, after = check(m, {"scores": scores, "mask": mask}, fixed)
    assert len(before) == 6 and after == ["Add", "Softmax"]


def test_an_if_whose_condition_becomes_known_is_replaced_by_its_branch():
    """cond = (Size(x) > 10): known once the input shape is fixed."""
    then = helper.make_graph([node("Relu", ["x"], ["t"])], "then", [], [value("t", [3, 4])])
    other = helper.make_graph([node("Neg", ["x"], ["e"])], "else", [], [value("e", [3, 4])])
    nodes = [node("Size", ["x"], ["n"]), node("Greater", ["n", "ten"], ["cond"]),
             node("If", ["cond"], ["y"], then_branch=then, else_branch=other)]
    m = model(nodes, [value("x", [3, 4])], [value("y", [3, 4])],
              {"ten": np.array(10, np.int64)})
    x = rng.standard_normal((3, 4)).astype(np.float32)
    shaped = lambda g: specialize(g, {"x": ArgSpec((3, 4), "float32")})  # noqa: E731
    before, after = check(m, {"x": x}, shaped)
    # Even unspecialised, each call's host stage takes the branch: only Relu launches.
    assert before == ["Size", "Greater", "If", "Relu"] and after == ["Relu"]


def test_optimize_runs_them_all():
    x = rng.standard_normal((2, 3, 6, 6)).astype(np.float32)
    shaped = lambda g: optimize(g, {"x": ArgSpec((2, 3, 6, 6), "float32")})  # noqa: E731
    _, after = check(_conv_bn(), {"x": x}, shaped, rtol=1e-4, atol=1e-4)
    assert after == ["Conv"]
