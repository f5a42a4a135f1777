"""ixl.onnx beyond ONNX's node cases: older opsets, errors that name what is unsupported,
initializers, the profile of a run and the `ixl onnx run` command."""

import argparse
import warnings

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

from ixl.onnx import IxlBackend, UnsupportedOnnx
from ixl.onnx.cli import add_parser
from ixl.onnx.support import inspect_model

F32 = TensorProto.FLOAT


def model(nodes, inputs, outputs, opset=17, initializers=()):
    graph = helper.make_graph(nodes, "g", inputs, outputs, initializer=list(initializers))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def tensor(name, shape, dtype=F32):
    return helper.make_tensor_value_info(name, dtype, shape)


def _rows_softmax(x, log=False):
    """Softmax before opset 13: x flattened to 2-D at axis 1, each row normalised (onnx's
    reference evaluator applies the opset-13 definition here, so it is no golden for these)."""
    rows = x.reshape(x.shape[0], -1).astype(np.float64)
    e = np.exp(rows - rows.max(axis=1, keepdims=True))
    y = e / e.sum(axis=1, keepdims=True)
    return (np.log(y) if log else y).reshape(x.shape)


@pytest.mark.parametrize("node, opset, x_shape, out_shape, golden", [
    (helper.make_node("Squeeze", ["x"], ["y"], axes=[1]), 11, [2, 1, 4], [2, 4], None),
    (helper.make_node("Unsqueeze", ["x"], ["y"], axes=[0, 4]), 11, [2, 3, 4], [1, 2, 3, 4, 1],
     None),
    (helper.make_node("ReduceSum", ["x"], ["y"], axes=[-1], keepdims=0), 11, [2, 3, 4], [2, 3],
     None),
    (helper.make_node("ReduceMax", ["x"], ["y"], axes=[0, 2]), 17, [2, 3, 4], [1, 3, 1], None),
    (helper.make_node("Softmax", ["x"], ["y"], axis=1), 11, [2, 3, 4], [2, 3, 4], _rows_softmax),
    (helper.make_node("LogSoftmax", ["x"], ["y"]), 11, [2, 3, 4], [2, 3, 4],
     lambda x: _rows_softmax(x, log=True)),
    (helper.make_node("Clip", ["x"], ["y"], min=-0.5, max=0.25), 6, [2, 3, 4], [2, 3, 4], None),
    (helper.make_node("Slice", ["x"], ["y"], starts=[1, -3], ends=[100, -1], axes=[2, 1]), 9,
     [2, 3, 4], [2, 2, 3], None),
    (helper.make_node("TopK", ["x"], ["y", "i"], k=2), 1, [2, 3, 4], [2, 3, 2], None),
])
def test_older_opsets_follow_their_own_definition(node, opset, x_shape, out_shape, golden):
    x = np.random.default_rng(0).standard_normal(x_shape).astype(np.float32)
    outputs = [tensor(n, out_shape, F32 if n == "y" else TensorProto.INT64) for n in node.output]
    m = model([node], [tensor("x", x_shape)], outputs, opset)
    ours = IxlBackend.prepare(m).run([x])
    expected = [golden(x)] if golden else ReferenceEvaluator(m).run(None, {"x": x})
    for a, b in zip(ours, expected):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)


def test_variadic_max_is_a_chain_of_binary_maximum():
    node = helper.make_node("Max", ["a", "b", "c"], ["y"])
    m = model([node], [tensor(n, [3]) for n in "abc"], [tensor("y", [3])])
    rep = IxlBackend.prepare(m)
    a, b, c = (np.array(v, np.float32) for v in ([1, 5, 2], [4, 0, 3], [0, 2, 9]))
    np.testing.assert_array_equal(rep.run([a, b, c])[0], [4, 5, 9])
    assert [n.op for n in rep.graph.nodes] == ["Maximum", "Maximum"]


def test_initializers_are_constants_and_the_profile_names_every_node():
    w = numpy_helper.from_array(np.ones((4, 5), np.float32), "w")
    nodes = [helper.make_node("MatMul", ["x", "w"], ["h"]),
             helper.make_node("Relu", ["h"], ["y"], name="act")]
    m = model(nodes, [tensor("x", [3, 4])], [tensor("y", [3, 5])], initializers=[w])
    rep = IxlBackend.prepare(m, chip="910B2")
    with warnings.catch_warnings():
        warnings.simplefilter("error", ResourceWarning)       # a leak fails the test
        (y,) = rep.run({"x": np.full((3, 4), -1.0, np.float32)})
    np.testing.assert_array_equal(y, np.zeros((3, 5), np.float32))
    assert rep.graph.inputs == ["x"] and "w" in rep.graph.constants
    runs = rep.last_graph.runs
    assert [r.op for r in runs] == ["MatMul", "Relu"] and runs[1].chip == "910B2"
    assert runs[0].path == runs[1].path == "native"        # MatMul on the Cube, Relu on the AIVs


def _weighted_reshape(w: onnx.TensorProto) -> onnx.ModelProto:
    """y = reshape(x @ w, shape): a weight over the structure's threshold and a shape constant
    whose value shape inference reads."""
    shape = numpy_helper.from_array(np.array([2, -1], np.int64), "shape")
    nodes = [helper.make_node("MatMul", ["x", "w"], ["h"]),
             helper.make_node("Reshape", ["h", "shape"], ["y"])]
    return model(nodes, [tensor("x", [4, 64])], [tensor("y", [2, 256])], initializers=[w, shape])


def test_weights_leave_the_checked_structure_and_shapes_are_inferred_as_with_them():
    from ixl.onnx import structure
    from ixl.onnx.convert import value_info
    w = numpy_helper.from_array(np.full((64, 128), 0.5, np.float32), "w")
    m = _weighted_reshape(w)
    light = structure.without_weights(m)
    assert [t.name for t in light.graph.initializer] == ["shape"]
    assert "w" in [v.name for v in light.graph.input] and len(m.graph.initializer) == 2
    full = onnx.shape_inference.infer_shapes(m)
    shapes = {v.name: [d.dim_value for d in v.type.tensor_type.shape.dim]
              for v in (*full.graph.value_info, *full.graph.output)}
    info = value_info(m)
    assert shapes == {"h": [4, 128], "y": [2, 256]}
    assert {n: list(info[n][1]) for n in shapes} == shapes
    (y,) = IxlBackend.prepare(m).run({"x": np.ones((4, 64), np.float32)})
    np.testing.assert_array_equal(y, np.full((2, 256), 32.0, np.float32))


def test_a_weight_stored_twice_or_short_of_its_dims_is_refused():
    from ixl.hixl import BadInput
    twice = numpy_helper.from_array(np.zeros((64, 128), np.float32), "w")
    twice.float_data.append(1.0)
    with pytest.raises(BadInput, match="not valid ONNX: .*w.* one and only one value field"):
        IxlBackend.prepare(_weighted_reshape(twice))
    short = onnx.TensorProto(name="w", data_type=F32, dims=[64, 128], raw_data=b"\0" * 64)
    for read in (IxlBackend.prepare, inspect_model):       # `ixl onnx run` and `inspect`
        with pytest.raises(BadInput, match=r"initializer 'w' of dims \[64, 128\] cannot be "
                                           r"read"):
            read(_weighted_reshape(short))


def _attention_block():
    """A pre-norm attention block with a GELU MLP: the composition a real model asks for."""
    rng = np.random.default_rng(2)
    d = 16
    weights = {name: rng.standard_normal(shape).astype(np.float32) * 0.3 for name, shape in [
        ("ln_w", [d]), ("ln_b", [d]), ("wq", [d, d]), ("wk", [d, d]), ("wv", [d, d]),
        ("w1", [d, 2 * d]), ("w2", [2 * d, d])]}
    weights["scale"] = np.array(d ** -0.5, np.float32)
    node = helper.make_node
    nodes = [
        node("LayerNormalization", ["x", "ln_w", "ln_b"], ["h"], axis=-1, epsilon=1e-5),
        node("MatMul", ["h", "wq"], ["q"]), node("MatMul", ["h", "wk"], ["k"]),
        node("MatMul", ["h", "wv"], ["v"]),
        node("Transpose", ["k"], ["kt"], perm=[0, 2, 1]),
        node("MatMul", ["q", "kt"], ["s"]), node("Mul", ["s", "scale"], ["s2"]),
        node("Softmax", ["s2"], ["p"], axis=-1), node("MatMul", ["p", "v"], ["a"]),
        node("Add", ["x", "a"], ["r"]),
        node("MatMul", ["r", "w1"], ["m"]), node("Gelu", ["m"], ["g"]),
        node("MatMul", ["g", "w2"], ["o"]), node("Add", ["r", "o"], ["y"]),
    ]
    inits = [numpy_helper.from_array(v, k) for k, v in weights.items()]
    return model(nodes, [tensor("x", [2, 8, d])], [tensor("y", [2, 8, d])], 20, inits)


def test_an_attention_block_matches_onnx_reference_evaluator():
    m = _attention_block()
    x = np.random.default_rng(3).standard_normal((2, 8, 16)).astype(np.float32)
    rep = IxlBackend.prepare(m)
    (ours,) = rep.run([x])
    (theirs,) = ReferenceEvaluator(m).run(None, {"x": x})
    np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-5)
    assert len(rep.last_graph.runs) == len(m.graph.node)


def test_an_unsupported_op_is_named_with_its_node():
    node = helper.make_node("Celu", ["x"], ["y"], name="mystery")
    m = model([node], [tensor("x", [3])], [tensor("y", [3])])
    with pytest.raises(UnsupportedOnnx, match=r"node 'mystery' \(Celu\): op type Celu is not "
                                              r"supported by ixl \(supported: Abs, Add"):
        IxlBackend.prepare(m)


@pytest.mark.parametrize("node, text", [
    (helper.make_node("Constant", [], ["y"], value_string="hi"),
     "attribute 'value_string' is not supported"),
    (helper.make_node("Cast", ["x"], ["y"], to=TensorProto.FLOAT8E4M3FN),
     "attribute 'to' has dtype FLOAT8E4M3FN, which ixl does not support"),
])
def test_an_unsupported_attribute_is_named(node, text):
    inputs = [tensor("x", [3])] if node.input else []
    m = model([node], inputs, [tensor("y", [3], TensorProto.FLOAT16)], opset=21)
    with pytest.raises(UnsupportedOnnx, match=text):
        IxlBackend.prepare(m)


def test_a_bad_attribute_value_fails_in_hixl_with_what_is_allowed():
    node = helper.make_node("Gelu", ["x"], ["y"], approximate="erf")
    m = model([node], [tensor("x", [3])], [tensor("y", [3])], opset=20)
    with pytest.raises(ValueError, match="approximate='erf' is not allowed"):
        IxlBackend.prepare(m).run([np.zeros(3, np.float32)])


def test_inputs_are_checked_against_the_declared_dtype_and_count():
    m = model([helper.make_node("Relu", ["x"], ["y"])], [tensor("x", [3])], [tensor("y", [3])])
    rep = IxlBackend.prepare(m)
    with pytest.raises(ValueError, match="input x is float64, the model declares float32"):
        rep.run([np.zeros(3)])
    with pytest.raises(ValueError, match="takes 1 input"):
        rep.run([np.zeros(3, np.float32)] * 2)


def test_only_the_cpu_device_name_is_accepted():
    assert IxlBackend.supports_device("CPU") and not IxlBackend.supports_device("CUDA")


# ---- ixl onnx run ----

def _cli(*argv):
    parser = argparse.ArgumentParser()
    add_parser(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["onnx", "run", *argv])
    return args.func(args)


def test_cli_runs_a_model_file_with_inputs_and_prints_the_profile(tmp_path, capsys):
    nodes = [helper.make_node("Add", ["x", "x"], ["s"]), helper.make_node("Softmax", ["s"], ["y"])]
    path = tmp_path / "m.onnx"
    onnx.save(model(nodes, [tensor("x", [4, 8])], [tensor("y", [4, 8])]), path)
    np.save(tmp_path / "x.npy", np.zeros((4, 8), np.float32))
    assert _cli(str(path), "--input", f"x={tmp_path / 'x.npy'}", "--profile",
                "--save", str(tmp_path / "out")) == 0
    text = capsys.readouterr().out
    assert "y: float32[4, 8] [0.125" in text
    assert "native" in text and "shim" in text and "modeled time" in text
    np.testing.assert_allclose(np.load(tmp_path / "out" / "y.npy"), 0.125)


def test_cli_names_missing_inputs_and_unreadable_files(tmp_path):
    path = tmp_path / "m.onnx"
    onnx.save(model([helper.make_node("Relu", ["x"], ["y"])], [tensor("x", [3])],
                    [tensor("y", [3])]), path)
    with pytest.raises(ValueError, match=r"missing: x: float32\[3\]"):
        _cli(str(path))
    with pytest.raises(ValueError, match="no such model file"):
        _cli(str(tmp_path / "nope.onnx"))
