"""ixl.onnx.InferenceSession against onnxruntime's: the same calls on the same models give the
same answers (metadata, inputs, outputs, values, and the errors a careless call meets), on
MiniLM and on a small CNN classifier."""

import numpy as np
import onnxruntime
import pytest
from onnx import TensorProto, helper

from ixl.models import minilm
from ixl.models.weights import fill_weights, weight_map
from ixl.onnx import InferenceSession
from ixl.onnx.session import InvalidArgument, MissingInputs

from .test_onnx_families import classifier


def relu_model():
    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"])], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 4])],
        doc_string="a graph")
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                          producer_name="tests", doc_string="a model", domain="ixl.test",
                          model_version=3)
    helper.set_model_props(m, {"purpose": "drop-in"})
    return m.SerializeToString()


@pytest.fixture(scope="module")
def sessions():
    model = relu_model()
    return (onnxruntime.InferenceSession(model, providers=["CPUExecutionProvider"]),
            InferenceSession(model, providers=["CPUExecutionProvider"]))


def test_metadata_inputs_and_outputs_are_onnxruntimes(sessions):
    ort, ixl = sessions
    for call in ("get_inputs", "get_outputs"):
        assert [(a.name, a.shape, a.type) for a in getattr(ixl, call)()] == \
            [(a.name, a.shape, a.type) for a in getattr(ort, call)()]
    fields = ("producer_name", "graph_name", "graph_description", "domain", "description",
              "version", "custom_metadata_map")
    assert {f: getattr(ixl.get_modelmeta(), f) for f in fields} == \
        {f: getattr(ort.get_modelmeta(), f) for f in fields}


def test_run_gives_onnxruntimes_outputs_and_the_modeled_time(sessions):
    ort, ixl = sessions
    x = np.random.default_rng(0).standard_normal((3, 4)).astype(np.float32)
    for names in (None, ["y"]):
        (mine,), (theirs,) = ixl.run(names, {"x": x}), ort.run(names, {"x": x})
        np.testing.assert_array_equal(mine, theirs)
    assert [r.op for r in ixl.last_profile.runs] == ["Relu"] and ixl.last_modeled_us > 0


@pytest.mark.parametrize("names, feed, kind", [
    (None, {"z": np.ones((2, 4), np.float32)}, MissingInputs),
    (None, {}, MissingInputs),
    (None, {"x": np.ones((2, 5), np.float32)}, InvalidArgument),
    (None, {"x": np.ones(4, np.float32)}, InvalidArgument),
    (None, {"x": np.ones((2, 4))}, InvalidArgument),
    (["q"], {"x": np.ones((2, 4), np.float32)}, InvalidArgument)],
    ids=["unknown input", "no input", "a wrong dim", "a wrong rank", "a wrong dtype",
         "an unknown output"])
def test_a_careless_call_fails_as_onnxruntime_fails(sessions, names, feed, kind):
    ort, ixl = sessions
    with pytest.raises(Exception) as theirs:
        ort.run(names, feed)
    with pytest.raises(kind) as mine:
        ixl.run(names, feed)
    assert str(mine.value).startswith(str(theirs.value))
    assert isinstance(mine.value, ValueError) or not isinstance(theirs.value, ValueError)


def test_a_small_cnn_matches_onnxruntime():
    model = classifier().SerializeToString()
    ort, ixl = onnxruntime.InferenceSession(model), InferenceSession(model)
    x = np.random.default_rng(1).standard_normal((2, 3, 32, 32)).astype(np.float32)
    (mine,), (theirs,) = ixl.run(None, {"x": x}), ort.run(None, {"x": x})
    assert mine.shape == theirs.shape
    np.testing.assert_allclose(mine, theirs, rtol=1e-4, atol=1e-4)
    assert any(r.op.startswith("Fused") or r.op == "Conv" for r in ixl.last_profile.runs)


def test_minilm_matches_onnxruntime():
    folder = minilm.model_dir()
    model = fill_weights(minilm.GRAPH, folder / weight_map(minilm.GRAPH)["file"])
    ort = onnxruntime.InferenceSession(model.SerializeToString())
    ixl = InferenceSession(model.SerializeToString())
    assert [(a.name, a.shape, a.type) for a in ixl.get_inputs()] == \
        [(a.name, a.shape, a.type) for a in ort.get_inputs()]
    tokens = minilm.load_tokenizer(folder).encode("A session that drops in.")
    feed = {"input_ids": np.array([tokens.ids], np.int64),
            "attention_mask": np.array([tokens.attention_mask], np.int64),
            "token_type_ids": np.array([tokens.type_ids], np.int64)}
    feed = {k: v for k, v in feed.items() if k in {a.name for a in ort.get_inputs()}}
    for mine, theirs in zip(ixl.run(None, feed), ort.run(None, feed)):
        a, b = mine.reshape(-1).astype(np.float64), theirs.reshape(-1).astype(np.float64)
        assert a @ b / (np.linalg.norm(a) * np.linalg.norm(b)) >= 0.9999
        assert np.abs(a - b).max() <= 1e-3


def test_the_ixl_provider_picks_the_chip_and_bad_options_are_named():
    session = InferenceSession(relu_model(),
                               providers=[("IxlExecutionProvider", {"chip": "910B4"})])
    session.run(None, {"x": np.ones((2, 4), np.float32)})
    assert session.get_providers() == ["IxlExecutionProvider"]
    assert {r.chip for r in session.last_profile.runs} == {"910B4"}
    with pytest.raises(ValueError, match="IxlExecutionProvider options: chipp unknown"):
        InferenceSession(relu_model(), providers=[("IxlExecutionProvider", {"chipp": "x"})])
    with pytest.raises(ValueError, match="the bytes are not an ONNX model"):
        InferenceSession(b"not a model")
