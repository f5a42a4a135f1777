"""Models that convert only once they run (onnx/backend.py, RunConvertedRep): an LSTM and a
GRU whose sequence axis is a named dim, a Loop whose trip count is the input's length (as
tf2onnx writes recurrent layers) or an input's value. Each runs as onnxruntime does, at every
length, converted once per set of input shapes (and values, where the shapes are not enough)."""

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper

from ixl.onnx import InferenceSession, IxlBackend, NeedsShapes, RunConvertedRep
from ixl.onnx.backend import IxlBackendRep

HIDDEN, FEATURES = 8, 5


def _model(nodes, inputs, outputs, initializers=()) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, "run_converted", inputs, outputs, list(initializers))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def recurrent(op: str) -> onnx.ModelProto:
    """X (seq, 1, FEATURES) with seq a named dim, through one LSTM or GRU layer."""
    gates = 4 if op == "LSTM" else 3
    rng = np.random.default_rng(0)
    w = helper.make_tensor("W", TensorProto.FLOAT, (1, gates * HIDDEN, FEATURES),
                           rng.standard_normal((1, gates * HIDDEN, FEATURES)).ravel() * 0.4)
    r = helper.make_tensor("R", TensorProto.FLOAT, (1, gates * HIDDEN, HIDDEN),
                           rng.standard_normal((1, gates * HIDDEN, HIDDEN)).ravel() * 0.4)
    node = helper.make_node(op, ["X", "W", "R"], ["Y", "Y_h"], hidden_size=HIDDEN)
    return _model([node], [helper.make_tensor_value_info("X", TensorProto.FLOAT,
                                                         ["seq", 1, FEATURES])],
                  [helper.make_tensor_value_info("Y", TensorProto.FLOAT, ["seq", 1, 1, HIDDEN]),
                   helper.make_tensor_value_info("Y_h", TensorProto.FLOAT, [1, 1, HIDDEN])],
                  [w, r])


def running_sum(while_loop: bool = False) -> onnx.ModelProto:
    """A Loop over the rows of x (n, 3), n a named dim: its trip count is Shape(x)[0] (or, as
    tf2onnx writes a while loop, none, the body computing its condition i + 1 < n), the
    carried value the sum of the rows so far, each sum a scan output."""
    if while_loop:
        condition = [helper.make_node("Add", ["i", "one_scalar"], ["next"]),
                     helper.make_node("Less", ["next", "n"], ["cond_out"])]
    else:
        condition = [helper.make_node("Identity", ["cond_in"], ["cond_out"])]
    body = helper.make_graph(
        [*condition,
         helper.make_node("Unsqueeze", ["i", "zero"], ["start"]),
         helper.make_node("Add", ["start", "one"], ["end"]),
         helper.make_node("Slice", ["x", "start", "end"], ["row"]),
         helper.make_node("Add", ["acc_in", "row"], ["acc_out"]),
         helper.make_node("Identity", ["acc_out"], ["scan"])],
        "body",
        [helper.make_tensor_value_info("i", TensorProto.INT64, []),
         helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
         helper.make_tensor_value_info("acc_in", TensorProto.FLOAT, [1, 3])],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("acc_out", TensorProto.FLOAT, [1, 3]),
         helper.make_tensor_value_info("scan", TensorProto.FLOAT, [1, 3])],
        [helper.make_tensor("zero", TensorProto.INT64, [1], [0]),
         helper.make_tensor("one", TensorProto.INT64, [1], [1]),
         helper.make_tensor("one_scalar", TensorProto.INT64, [], [1])])
    nodes = [helper.make_node("Shape", ["x"], ["shape"]),
             helper.make_node("Gather", ["shape", "first"], ["n"], axis=0),
             helper.make_node("Loop", ["" if while_loop else "n", "true", "init"],
                              ["total", "sums"], body=body)]
    return _model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 3])],
                  [helper.make_tensor_value_info("total", TensorProto.FLOAT, [1, 3]),
                   helper.make_tensor_value_info("sums", TensorProto.FLOAT, ["n", 1, 3])],
                  [helper.make_tensor("first", TensorProto.INT64, [], [0]),
                   helper.make_tensor("true", TensorProto.BOOL, [], [True]),
                   helper.make_tensor("init", TensorProto.FLOAT, [1, 3], [0, 0, 0])])


def onnxruntime(model: onnx.ModelProto, feeds: dict) -> list:
    return ort.InferenceSession(model.SerializeToString(),
                                providers=["CPUExecutionProvider"]).run(None, feeds)


@pytest.mark.parametrize("op", ["LSTM", "GRU"])
def test_a_recurrent_layer_of_dynamic_length_runs_at_every_length(op):
    model = recurrent(op)
    rep = IxlBackend.prepare(model)
    assert isinstance(rep, RunConvertedRep)
    rng = np.random.default_rng(1)
    for seq in (3, 7, 3):
        x = rng.standard_normal((seq, 1, FEATURES)).astype(np.float32)
        got = rep.run([x])
        for ours, theirs in zip(got, onnxruntime(model, {"X": x}), strict=True):
            assert ours.shape == theirs.shape
            np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-5)
        runs = rep.last_graph.runs
        assert not [r.op for r in runs if r.path == "shim"]
        # unrolled for this length: the input projection once, the recurrent products each
        # step after the first (whose state is zero): one for LSTM, GRU's two
        per_step = {"LSTM": 1, "GRU": 2}[op]
        assert sum(r.op == "MatMul" for r in runs) == 1 + per_step * (seq - 1)
    assert len(rep._reps) == 2          # one conversion per length, the second 3 a hit


@pytest.mark.parametrize("while_loop", [False, True], ids=["trip count", "condition"])
def test_a_loop_whose_trip_count_is_the_input_length_unrolls_per_length(while_loop):
    model = running_sum(while_loop)
    session = InferenceSession(model.SerializeToString())
    for n in (1, 4):
        x = np.arange(3 * n, dtype=np.float32).reshape(n, 3)
        ours = session.run(None, {"x": x})
        for a, b in zip(ours, onnxruntime(model, {"x": x}), strict=True):
            np.testing.assert_array_equal(a, b)


def test_a_loop_whose_trip_count_is_an_input_converts_per_value():
    """ONNX's own test_loop11: the trip count and the condition are graph inputs."""
    import os

    import onnx.backend.test
    path = os.path.join(os.path.dirname(onnx.backend.test.__file__), "data", "node",
                        "test_loop11", "model.onnx")
    model = onnx.load(path)
    rep = IxlBackend.prepare(model)
    y = np.array([-2.0], np.float32)
    for trips in (5, 2):
        feeds = {"trip_count": np.array(trips, np.int64), "cond": np.array(True), "y": y}
        ours = rep.run(feeds)
        for a, b in zip(ours, onnxruntime(model, feeds), strict=True):
            np.testing.assert_allclose(a, b, rtol=1e-6)


def test_what_a_run_cannot_give_is_still_refused_with_its_reason():
    # every dim declared: the LSTM converts before any run
    model = recurrent("LSTM")
    model.graph.input[0].type.tensor_type.shape.dim[0].dim_value = 4
    model.graph.value_info.clear()
    ok = IxlBackend.prepare(model)
    assert isinstance(ok, IxlBackendRep)      # a declared length converts before any run
    model = running_sum()
    loop = model.graph.node[2]
    loop.input[0] = "x_value"                 # a trip count from the input's values
    model.graph.node.insert(2, helper.make_node("Cast", ["x"], ["xf"], to=TensorProto.INT64))
    model.graph.node.insert(3, helper.make_node("ReduceMax", ["xf"], ["x_value"], keepdims=0))
    rep = IxlBackend.prepare(model)
    # x holds more than SMALL_INPUT values: data, whose values are not read to convert
    with pytest.raises(NeedsShapes, match="trip count x_value.*not known with this run's"):
        rep.run({"x": np.ones((8, 3), np.float32)})
    small = rep.run({"x": np.full((3, 3), 3, np.float32)})      # 9 values: read, 3 trips
    assert small[1].shape == (3, 1, 3)
