"""`ixl onnx run` and `ixl onnx inspect`, and bad input to them and to IxlBackend: one clear
error, no traceback, nothing left allocated on the device."""

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import ixl
from ixl.cli import main
from ixl.onnx import IxlBackend

F32 = TensorProto.FLOAT


def _save(tmp_path, nodes, inputs, outputs, inits=None, name="m.onnx"):
    graph = helper.make_graph(nodes, "g", inputs, outputs,
                              initializer=[numpy_helper.from_array(v, k)
                                           for k, v in (inits or {}).items()])
    path = tmp_path / name
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)]), path)
    return path


@pytest.fixture
def relu_model(tmp_path):
    return _save(tmp_path, [helper.make_node("Relu", ["x"], ["y"])],
                 [helper.make_tensor_value_info("x", F32, ["n", 4])],
                 [helper.make_tensor_value_info("y", F32, ["n", 4])])


@pytest.fixture
def gelu_model(tmp_path):
    """The erf Gelu as exported, then a Softmax: --check against the reference."""
    n = helper.make_node
    inits = {"r2": np.float32(2 ** 0.5), "one": np.float32(1), "half": np.float32(0.5)}
    nodes = [n("Div", ["x", "r2"], ["s"]), n("Erf", ["s"], ["e"]), n("Add", ["e", "one"], ["p"]),
             n("Mul", ["x", "p"], ["m"]), n("Mul", ["m", "half"], ["g"]),
             n("Softmax", ["g"], ["y"])]
    return _save(tmp_path, nodes, [helper.make_tensor_value_info("x", F32, [8, 64])],
                 [helper.make_tensor_value_info("y", F32, [8, 64])], inits)


def _error(capsys, argv) -> str:
    assert main(argv) == 2
    text = capsys.readouterr().err
    assert text.startswith("ixl: error: ") and text.count("\n") == 1 and "Traceback" not in text
    return text


def test_run_random_check_prints_errors_cosine_and_the_profile_by_op(gelu_model, capsys):
    assert main(["onnx", "run", str(gelu_model), "--random", "--check"]) == 0
    text = capsys.readouterr().out
    assert "max abs error" in text and "cosine" in text and " ok " in text
    assert "profile by op" in text and "Gelu" in text and "native" in text
    assert "Erf" not in text                      # the decomposition ran as one Gelu


def test_run_without_optimisation_runs_the_graph_as_exported(gelu_model, capsys):
    assert main(["onnx", "run", str(gelu_model), "--random", "--check", "--no-optimize"]) == 0
    assert "Erf" in capsys.readouterr().out


def test_inspect_lists_op_types_with_their_path_and_flags_unsupported_ones(tmp_path, capsys):
    n = helper.make_node
    path = _save(tmp_path, [n("LSTM", ["x", "w", "r"], ["", "h"], hidden_size=3),
                            n("Celu", ["h"], ["y"])],
                 [helper.make_tensor_value_info("x", F32, [5, 2, 4])],
                 [helper.make_tensor_value_info("y", F32, [1, 2, 3])],
                 {"w": np.zeros((1, 12, 4), np.float32), "r": np.zeros((1, 12, 3), np.float32)})
    assert main(["onnx", "inspect", str(path)]) == 1
    text = capsys.readouterr().out
    assert "LSTM" in text and "Split (native)" in text and "Sigmoid (native)" in text
    assert "Celu" in text and "unsupported" in text and "1 unsupported op type(s): Celu" in text


def test_prepare_accepts_a_path(relu_model):
    (y,) = IxlBackend.prepare(relu_model).run([np.full((2, 4), -1.0, np.float32)])
    np.testing.assert_array_equal(y, np.zeros((2, 4), np.float32))
    (y,) = IxlBackend.prepare(str(relu_model)).run([np.ones((3, 4), np.float32)])
    np.testing.assert_array_equal(y, np.ones((3, 4), np.float32))


@pytest.mark.parametrize("source, error, text", [
    ("missing.onnx", ValueError, "no such model file: missing.onnx"),
    (42, TypeError, "a model is an onnx.ModelProto or the path of an .onnx file, got int"),
])
def test_prepare_refuses_what_is_not_a_model(source, error, text):
    with pytest.raises(error, match=text):
        IxlBackend.prepare(source)


def test_an_input_of_another_shape_than_declared_is_refused_before_allocating(tmp_path):
    path = _save(tmp_path, [helper.make_node("Relu", ["x"], ["y"])],
                 [helper.make_tensor_value_info("x", F32, ["n", 4])],
                 [helper.make_tensor_value_info("y", F32, ["n", 4])])
    rep = IxlBackend.prepare(path)
    with ixl.device("910B1") as dev:
        for bad in (np.zeros((2, 5), np.float32), np.zeros((4,), np.float32)):
            with pytest.raises(ValueError, match=r"input x has shape \[.*\], the model declares "
                                                 r"\['n', 4\]"):
                rep.run([bad], dev=dev)
            assert dev.allocator.stats.live_bytes == 0
        rep.run([np.zeros((7, 4), np.float32)], dev=dev)     # a named dim takes any size
        assert dev.allocator.stats.live_bytes == 0


@pytest.mark.parametrize("make_args, text", [
    (lambda p, t: ["--input", f"x={t}", "--input", f"x={t}"], "--input x is given twice"),
    (lambda p, t: ["--input", f"x={p}"], "is not a .npy file (numpy.save writes one)"),
    (lambda p, t: ["--input", "x"], "--input 'x' does not parse: use NAME=FILE.npy"),
    (lambda p, t: ["--input", f"z={t}"], "unknown: z"),
    (lambda p, t: [], "missing: x: float32[n, 4] (give --input NAME=FILE.npy or --random)"),
    (lambda p, t: ["--random"], "input x has the named dim 'n'; give its size with --dim n=SIZE"),
    (lambda p, t: ["--random", "--dim", "n=two"], "--dim n=two: the size must be"),
    (lambda p, t: ["--random", "--dim", "n=2", "--fixed", "q"], "--fixed q: the model has no "
                                                                "input q"),
])
def test_bad_run_arguments_are_one_clear_line(relu_model, tmp_path, capsys, make_args, text):
    good = tmp_path / "x.npy"
    np.save(good, np.zeros((2, 4), np.float32))
    notes = tmp_path / "notes.npy"
    notes.write_text("these are notes, not an array\n")
    assert text in _error(capsys, ["onnx", "run", str(relu_model), *make_args(notes, good)])


@pytest.mark.parametrize("content, text", [
    (b"not a protobuf at all", "is not a readable ONNX model"),
    (None, "no such model file"),
])
def test_a_bad_model_file_is_one_clear_line(tmp_path, capsys, content, text):
    path = tmp_path / "bad.onnx"
    if content is not None:
        path.write_bytes(content)
    for command in ("run", "inspect"):
        assert text in _error(capsys, ["onnx", command, str(path)])


def test_a_failed_check_exits_one(tmp_path, capsys, monkeypatch):
    """A reference that disagrees makes --check fail the run."""
    path = _save(tmp_path, [helper.make_node("Relu", ["x"], ["y"])],
                 [helper.make_tensor_value_info("x", F32, [4])],
                 [helper.make_tensor_value_info("y", F32, [4])])
    from ixl.onnx import cli
    monkeypatch.setattr(cli, "reference_outputs",
                        lambda model, feeds: ([np.full(4, 7.0, np.float32)], "a wrong oracle"))
    assert main(["onnx", "run", str(path), "--random", "--check"]) == 1
    assert "differs" in capsys.readouterr().out
