"""Small models of each family, built with onnx.helper, through ixl and against onnx's
ReferenceEvaluator: a classifier (Conv-BN-ReLU-MaxPool-GAP-Gemm), a detector head (Resize,
Concat), recurrent cells (LSTM, GRU), a decoder block (rotary Cos/Sin, a Trilu/Where causal mask,
the RMSNorm decomposition), control flow (If, Loop). `ixl onnx inspect` finds no unsupported op
in any of them."""

from unittest import mock

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

from ixl.hixl import ArgSpec
from ixl.nixl import REGISTRY
from ixl.onnx import IxlBackend
from ixl.onnx.backend import IxlBackendRep
from ixl.onnx.passes import optimize
from ixl.onnx.support import inspect_model

F32, I64 = TensorProto.FLOAT, TensorProto.INT64
node = helper.make_node
rng = np.random.default_rng(11)


def weights(*shape, scale=0.3):
    return (rng.standard_normal(shape) * scale).astype(np.float32)


def model(nodes, inputs, outputs, inits, opset=18):
    graph = helper.make_graph(nodes, "family", inputs, outputs,
                              initializer=[numpy_helper.from_array(np.asarray(v), k)
                                           for k, v in inits.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def value(name, shape, dtype=F32):
    return helper.make_tensor_value_info(name, dtype, shape)


def classifier():
    c = 8
    inits = {"w1": weights(c, 3, 3, 3), "b1": weights(c), "s": np.abs(weights(c)) + 0.5,
             "bb": weights(c), "mu": weights(c), "var": np.abs(weights(c)) + 0.5,
             "w2": weights(c, c, 3, 3), "fc": weights(10, c), "fb": weights(10)}
    nodes = [node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1], strides=[2, 2]),
             node("BatchNormalization", ["c1", "s", "bb", "mu", "var"], ["n1"]),
             node("Relu", ["n1"], ["r1"]),
             node("MaxPool", ["r1"], ["p1"], kernel_shape=[3, 3], strides=[2, 2],
                  pads=[1, 1, 1, 1]),
             node("Conv", ["p1", "w2"], ["c2"], pads=[1, 1, 1, 1]),
             node("HardSwish", ["c2"], ["a2"]),
             node("GlobalAveragePool", ["a2"], ["g"]), node("Flatten", ["g"], ["f"]),
             node("Gemm", ["f", "fc", "fb"], ["y"], transB=1)]
    return model(nodes, [value("x", [2, 3, 32, 32])], [value("y", [2, 10])], inits)


def detector_head():
    inits = {"wa": weights(8, 4, 1, 1), "wb": weights(6, 12, 3, 3), "scales":
             np.array([1, 1, 2, 2], np.float32), "slope": np.full((4, 1, 1), 0.1, np.float32)}
    nodes = [node("Conv", ["deep", "wa"], ["lat"]), node("Sigmoid", ["lat"], ["sig"]),
             node("Mul", ["lat", "sig"], ["act"]),
             node("Resize", ["act", "", "scales"], ["up"], mode="nearest",
                  coordinate_transformation_mode="asymmetric", nearest_mode="floor"),
             node("PRelu", ["shallow", "slope"], ["sh"]),
             node("Concat", ["up", "sh"], ["cat"], axis=1),
             node("Conv", ["cat", "wb"], ["box"], pads=[1, 1, 1, 1]),
             node("Resize", ["box", "", "scales"], ["y"], mode="linear",
                  coordinate_transformation_mode="half_pixel")]
    return model(nodes, [value("deep", [1, 4, 5, 5]), value("shallow", [1, 4, 10, 10])],
                 [value("y", [1, 6, 20, 20])], inits)


def recurrent(op):
    hidden, gates = 6, 4 if op == "LSTM" else 3
    inits = {"W": weights(1, gates * hidden, 5), "R": weights(1, gates * hidden, hidden),
             "B": weights(1, 2 * gates * hidden)}
    outputs = ["Y", "Y_h"]
    nodes = [node(op, ["x", "W", "R", "B"], outputs, hidden_size=hidden),
             node("Squeeze", ["Y_h", "zero"], ["h"]), node("ReduceSum", ["Y", "zero"], ["s"])]
    inits["zero"] = np.array([0], np.int64)
    return model(nodes, [value("x", [7, 3, 5])], [value("h", [3, hidden]),
                                                   value("s", [3, 1, hidden])], inits)


def decoder_block():
    """Rotary embedding (Cos/Sin of positions), a causal mask from Trilu and Where, attention,
    and the RMSNorm decomposition a Llama export leaves."""
    s, d = 6, 8
    pos = np.arange(s, dtype=np.float32)[:, None] * (1.0 / 10000 ** (np.arange(d // 2) / (d // 2)))
    inits = {"freqs": np.concatenate([pos, pos], -1).astype(np.float32),
             "wq": weights(d, d), "wk": weights(d, d), "wv": weights(d, d),
             "ones": np.ones((s, s), np.float32), "neg": np.float32(-1e9), "zero_f": np.float32(0),
             "two": np.float32(2), "axes": np.array([-1], np.int64), "eps": np.float32(1e-6),
             "gamma": np.abs(weights(d)) + 0.5, "half": np.array([d // 2, d // 2], np.int64),
             "scale": np.float32(d ** -0.5)}
    nodes = [
        # RMSNorm as exported
        node("Pow", ["x", "two"], ["sq"]), node("ReduceMean", ["sq", "axes"], ["ms"]),
        node("Add", ["ms", "eps"], ["mse"]), node("Sqrt", ["mse"], ["rms"]),
        node("Div", ["x", "rms"], ["xn"]), node("Mul", ["xn", "gamma"], ["h"]),
        node("MatMul", ["h", "wq"], ["q"]), node("MatMul", ["h", "wk"], ["k"]),
        node("MatMul", ["h", "wv"], ["v"]),
        # rotary: q * cos + rotate_half(q) * sin
        node("Cos", ["freqs"], ["cos"]), node("Sin", ["freqs"], ["sin"]),
        node("Split", ["q", "half"], ["q1", "q2"], axis=-1), node("Neg", ["q2"], ["nq2"]),
        node("Concat", ["nq2", "q1"], ["qr"], axis=-1), node("Mul", ["q", "cos"], ["qc"]),
        node("Mul", ["qr", "sin"], ["qs"]), node("Add", ["qc", "qs"], ["qrot"]),
        # causal mask
        node("Trilu", ["ones"], ["lower"], upper=0), node("Cast", ["lower"], ["keep"],
                                                           to=TensorProto.BOOL),
        node("Transpose", ["k"], ["kt"], perm=[1, 0]), node("MatMul", ["qrot", "kt"], ["sc"]),
        node("Mul", ["sc", "scale"], ["sc2"]), node("Where", ["keep", "sc2", "neg"], ["masked"]),
        node("Softmax", ["masked"], ["p"], axis=-1), node("MatMul", ["p", "v"], ["o"]),
        node("Add", ["x", "o"], ["y"])]
    return model(nodes, [value("x", [s, d])], [value("y", [s, d])], inits)


def control_flow():
    """An If on a runtime condition (tiny branches: both run on the device, a Where selects)
    and a Loop of constant trip count (unrolled)."""
    then = helper.make_graph([node("Mul", ["x", "x"], ["t"])], "then", [], [value("t", [4])])
    other = helper.make_graph([node("Neg", ["x"], ["e"])], "else", [], [value("e", [4])])
    body = helper.make_graph(
        [node("Identity", ["c_in"], ["c_out"]), node("Add", ["acc", "x"], ["acc2"]),
         node("Cast", ["i"], ["fi"], to=F32), node("Mul", ["acc2", "fi"], ["scan"])],
        "body", [value("i", [], I64), value("c_in", [], TensorProto.BOOL), value("acc", [4])],
        [value("c_out", [], TensorProto.BOOL), value("acc2", [4]), value("scan", [4])])
    nodes = [node("ReduceSum", ["x"], ["total"], keepdims=0),
             node("Greater", ["total", "zero"], ["cond"]),
             node("If", ["cond"], ["branch"], then_branch=then, else_branch=other),
             node("Loop", ["three", "yes", "branch"], ["acc", "scans"], body=body)]
    inits = {"zero": np.float32(0), "three": np.array(3, np.int64), "yes": np.array(True)}
    return model(nodes, [value("x", [4])], [value("acc", [4]), value("scans", [3, 4])], inits,
                 opset=18)


FAMILIES = {"classifier": classifier, "detector head": detector_head,
            "LSTM": lambda: recurrent("LSTM"), "GRU": lambda: recurrent("GRU"),
            "decoder block": decoder_block, "control flow": control_flow}


def feeds_for(m):
    return {v.name: rng.standard_normal([d.dim_value for d in v.type.tensor_type.shape.dim]
                                        ).astype(np.float32) for v in m.graph.input}


@pytest.mark.parametrize("family", FAMILIES)
def test_a_family_matches_the_reference_evaluator_as_converted_and_optimised(family):
    m = FAMILIES[family]()
    feeds = feeds_for(m)
    expected = ReferenceEvaluator(m).run(None, feeds)
    rep = IxlBackend.prepare(m)
    converted = rep.run(feeds)
    graph = optimize(rep.graph, {k: ArgSpec(v.shape, "float32") for k, v in feeds.items()})
    fast = IxlBackendRep(type(rep.converted)(graph, rep.converted.inputs, rep.converted.outputs,
                                             rep.converted.opset)).run(feeds)
    for ours, opt, theirs in zip(converted, fast, expected):
        np.testing.assert_allclose(ours, theirs, rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(opt, theirs, rtol=1e-4, atol=1e-5)
    assert all(row.status != "unsupported" for row in inspect_model(m).rows)


def test_the_optimised_classifier_and_decoder_run_the_fused_ops():
    for build, feeds_shape, wanted, gone in (
            (classifier, (2, 3, 32, 32), set(), {"BatchNormalization"}),
            (decoder_block, (6, 8), {"RMSNormalization"}, {"Pow", "Sqrt", "Trilu", "Cos"})):
        rep = IxlBackend.prepare(build())
        graph = optimize(rep.graph, {rep.graph.inputs[0]: ArgSpec(feeds_shape, "float32")})
        ops = {n.op for n in graph.nodes}
        assert wanted <= ops and not gone & ops


def classifier_head(classes: int = 4):
    """A MobileNet-style network's end: GlobalAveragePool, Reshape, a 1280 x `classes` MatMul
    (few outputs over a long K: the Cube kernel's split-K path)."""
    inits = {"shape": np.array([1, 1280], np.int64), "w": weights(1280, classes, scale=0.05)}
    nodes = [node("GlobalAveragePool", ["x"], ["g"]), node("Reshape", ["g", "shape"], ["f"]),
             node("MatMul", ["f", "w"], ["y"])]
    return model(nodes, [value("x", [1, 1280, 7, 7])], [value("y", [1, classes])], inits)


def test_a_classifier_head_matches_the_reference_on_every_run():
    """The head that once read L0B nothing wrote (logits off by up to 0.24, different each
    run): cosine >= 0.9999 and max abs <= 1e-3 against the reference, three runs."""
    for classes in (4, 8):
        m = classifier_head(classes)
        feeds = feeds_for(m)
        expected = ReferenceEvaluator(m).run(None, feeds)[0].ravel()
        rep = IxlBackend.prepare(m)
        for _ in range(3):
            got = rep.run(feeds)[0].ravel()
            cosine = got @ expected / (np.linalg.norm(got) * np.linalg.norm(expected))
            assert cosine >= 0.9999 and np.abs(got - expected).max() <= 1e-3, (classes, got)


def runtime_if(n: int):
    """An If on a runtime condition over n elements: x * x if sum(x) > 0 else -x."""
    then = helper.make_graph([node("Mul", ["x", "x"], ["t"])], "then", [], [value("t", [n])])
    other = helper.make_graph([node("Neg", ["x"], ["e"])], "else", [], [value("e", [n])])
    return model([node("ReduceSum", ["x"], ["total"], keepdims=0),
                  node("Greater", ["total", "zero"], ["cond"]),
                  node("If", ["cond"], ["y"], then_branch=then, else_branch=other)],
                 [value("x", [n])], [value("y", [n])], {"zero": np.float32(0)}, opset=18)


def check_both_ways(m, n):
    rep = IxlBackend.prepare(m)
    for x in (np.ones(n, np.float32), -np.ones(n, np.float32)):
        for a, b in zip(rep.run({"x": x}), ReferenceEvaluator(m).run(None, {"x": x})):
            np.testing.assert_allclose(a, b, rtol=1e-6)
        yield x, rep.last_graph.runs


def test_a_runtime_if_reads_its_condition_back_and_runs_the_branch_natively():
    """Branches on 512 KiB are not tiny: the condition goes to the host, one branch runs."""
    n = 128 * 1024
    for x, runs in check_both_ways(runtime_if(n), n):
        at = next(k for k, r in enumerate(runs) if r.op == "If")
        assert runs[at].path == "host" and runs[at].time_us > 0      # the condition's copy
        branch_op = "Mul" if x[0] > 0 else "Neg"
        assert (runs[at + 1].op, runs[at + 1].path) == (branch_op, "native")
        assert runs[at + 1].nodes[0].startswith(runs[at].nodes[0] + "/")
        assert {r.op for r in runs} == {"ReduceSum", "Greater", "If", branch_op}
    row = next(r for r in inspect_model(runtime_if(n)).rows if r.op_type == "If")
    assert row.status == "native + host" and set(row.ixl_ops) == {"If", "Mul", "Neg"}


def test_a_runtime_if_with_tiny_branches_runs_both_and_selects_on_the_device():
    for _, runs in check_both_ways(runtime_if(4), 4):
        assert [r.op for r in runs] == ["ReduceSum", "Greater", "Mul", "Neg", "Where"]
        assert all(r.path == "native" for r in runs)


def test_a_runtime_if_costs_what_its_route_costs():
    """The select route costs the other branch and a Where; the host route a copy of the
    condition: on 4 elements the select is the cheaper, which is why it is taken."""
    m = runtime_if(4)
    rep = IxlBackend.prepare(m)
    rep.run({"x": np.ones(4, np.float32)})
    selected = rep.last_graph.time_us
    kept = IxlBackendRep(type(rep.converted)(rep.graph, rep.converted.inputs,
                                             rep.converted.outputs, rep.converted.opset))
    with mock.patch("ixl.onnx.if_select.MAX_LAUNCHES", 0):
        kept.run({"x": np.ones(4, np.float32)})
    assert any(r.op == "If" for r in kept.last_graph.runs)
    assert selected < kept.last_graph.time_us


def test_an_if_whose_branch_returns_its_input_gives_each_output_its_own_reference():
    """A branch that passes a value through (twice) must not hand the same device memory to
    two owners: each output is a view holding its own reference."""
    n = 128 * 1024
    same = helper.make_graph([node("Identity", ["x"], ["a"])], "same", [],
                             [value("a", [n]), value("a", [n])])
    other = helper.make_graph([node("Neg", ["x"], ["e"]), node("Neg", ["e"], ["f"])], "other",
                              [], [value("e", [n]), value("f", [n])])
    m = model([node("ReduceSum", ["x"], ["t"], keepdims=0),
               node("Greater", ["t", "zero"], ["c"]),
               node("If", ["c"], ["p", "q"], then_branch=same, else_branch=other),
               node("Add", ["p", "q"], ["y"])],
              [value("x", [n])], [value("y", [n]), value("p", [n])], {"zero": np.float32(0)},
              opset=18)
    for _, runs in check_both_ways(m, n):
        assert any(r.op == "If" and r.path == "host" for r in runs)


@pytest.mark.parametrize("family", FAMILIES)
def test_a_family_spends_most_of_its_modeled_time_on_the_native_path(family):
    m = FAMILIES[family]()
    rep = IxlBackend.prepare(m)
    rep.run(feeds_for(m))
    runs = rep.last_graph.runs
    native = sum(r.time_us for r in runs if r.path == "native")
    assert native / rep.last_graph.time_us >= 0.9, \
        [(r.op, r.path, round(r.time_us, 2)) for r in runs if r.path != "native"]


RECURRENT_VARIANTS = {
    "LSTM, sequence_lens shorter than the sequence": (
        node("LSTM", ["X", "W", "R", "B", "L"], ["Y", "Yh"], hidden_size=4),
        {"X": (5, 3, 2), "W": (1, 16, 2), "R": (1, 16, 4), "B": (1, 32)}),
    "LSTM bidirectional, peepholes, clip, initial state": (
        node("LSTM", ["X", "W", "R", "B", "", "H0", "C0", "P"], ["Y", "Yh"], hidden_size=4,
             direction="bidirectional", clip=0.7),
        {"X": (4, 3, 2), "W": (2, 16, 2), "R": (2, 16, 4), "B": (2, 32), "H0": (2, 3, 4),
         "C0": (2, 3, 4), "P": (2, 12)}),
    "GRU bidirectional, linear_before_reset, initial state": (
        node("GRU", ["X", "W", "R", "B", "", "H0"], ["Y", "Yh"], hidden_size=4,
             direction="bidirectional", linear_before_reset=1),
        {"X": (4, 3, 2), "W": (2, 12, 2), "R": (2, 12, 4), "B": (2, 24), "H0": (2, 3, 4)}),
    "GRU reverse": (node("GRU", ["X", "W", "R", "B"], ["Y", "Yh"], hidden_size=4,
                         direction="reverse"),
                    {"X": (3, 4, 2), "W": (1, 12, 2), "R": (1, 12, 4), "B": (1, 24)}),
}


@pytest.mark.parametrize("variant", RECURRENT_VARIANTS)
def test_recurrent_variants_match_onnxruntime(variant):
    """onnx's ReferenceEvaluator runs one direction and ignores sequence_lens: onnxruntime (the
    `ort` extra) is the reference for these."""
    ort = pytest.importorskip("onnxruntime")
    rnn, shapes = RECURRENT_VARIANTS[variant]
    feeds = {k: weights(*s, scale=1.0) for k, s in shapes.items()}
    if "L" in rnn.input:
        feeds["L"] = np.array([5, 2, 3], np.int32)
    inputs = [value(k, list(v.shape), TensorProto.INT32 if v.dtype == np.int32 else F32)
              for k, v in feeds.items()]
    m = model([rnn], inputs, [value("Y", []), value("Yh", [])], {}, opset=22)
    expected = ort.InferenceSession(m.SerializeToString(),
                                    providers=["CPUExecutionProvider"]).run(None, feeds)
    for ours, theirs in zip(IxlBackend.prepare(m).run(feeds), expected):
        np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("family", FAMILIES)
def test_only_ops_without_a_native_kernel_run_on_the_shim(family):
    """The families' ops of issue 16 run natively; what is left on the shim is tier B (Conv,
    Gemm, MatMul), tier C (Concat, Gather, Split, Transpose, Trilu), a runtime If, and Cast to
    or from bool and int64 (tier C's casts), and dtypes a native kernel has no path for
    (float32 MatMul until tier B's)."""
    m = FAMILIES[family]()
    rep = IxlBackend.prepare(m)
    rep.run(feeds_for(m))
    shim = {(r.op, r.reason) for r in rep.last_graph.runs if r.path == "shim"}
    assert all(REGISTRY.native(op) is None or op == "Cast"
               or reason.startswith("native kernel has no") for op, reason in shim), shim
