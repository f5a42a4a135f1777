"""Silero VAD (the `silero-vad` wheel's ONNX models, MIT) against onnxruntime. Its LSTM's
sequence axis and its sample-rate If are known only when it runs, so ixl converts it at the
first run with the concrete shapes and the sample rate's value (onnx/backend.py,
RunConvertedRep): the 8 and 16 kHz models of one file, and the 16 kHz sequence model at two
lengths."""

from importlib import metadata

import numpy as np
import onnxruntime as ort
import pytest

from ixl.onnx import InferenceSession

pytestmark = pytest.mark.slow


def model_path(name: str) -> str:
    try:
        dist = metadata.distribution("silero-vad")
    except metadata.PackageNotFoundError:
        pytest.skip("Silero VAD's models come from a package not installed here: "
                    "pip install --no-deps silero-vad==6.2.3")
    return str(dist.locate_file(f"silero_vad/data/{name}"))


def agree(path: str, feeds: dict) -> InferenceSession:
    expected = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, feeds)
    session = InferenceSession(path)
    got = session.run(None, feeds)
    for ours, theirs in zip(got, expected, strict=True):
        assert ours.shape == theirs.shape
        a, b = ours.ravel().astype(np.float64), theirs.ravel().astype(np.float64)
        assert np.abs(a - b).max() < 1e-5
        assert a @ b / (np.linalg.norm(a) * np.linalg.norm(b)) >= 0.9999
    return session


@pytest.mark.parametrize("rate, window", [(16000, 512), (8000, 256)])
def test_the_streaming_model_gives_onnxruntimes_probability_and_state(rate, window):
    rng = np.random.default_rng(rate)
    session = agree(model_path("silero_vad.onnx"),
                    {"input": rng.standard_normal((1, window)).astype(np.float32) * 0.1,
                     "state": np.zeros((2, 1, 128), np.float32),
                     "sr": np.array(rate, np.int64)})
    runs = session.last_profile.runs
    assert sum(r.path == "native" for r in runs) > 10 * sum(r.path == "shim" for r in runs)


def test_the_sequence_model_runs_at_every_length():
    path = model_path("silero_vad_16k_sequence.onnx")
    rng = np.random.default_rng(0)
    for frames in (2, 5):
        agree(path, {"input": rng.standard_normal((frames, 576)).astype(np.float32) * 0.1,
                     "h": np.zeros((1, 1, 128), np.float32),
                     "c": np.zeros((1, 1, 128), np.float32)})
