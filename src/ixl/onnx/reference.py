"""The outputs a model should give, from a runtime that is not ixl: onnxruntime when it is
installed (the `ixl[ort]` extra), else onnx's own ReferenceEvaluator; and how close ixl came."""

from __future__ import annotations

from dataclasses import dataclass
from typing import cast

import numpy as np
import onnx


def reference_outputs(model: onnx.ModelProto, feeds: dict[str, np.ndarray]
                      ) -> tuple[list[np.ndarray], str]:
    """The model's outputs for `feeds` and the name of what computed them."""
    try:
        import onnxruntime
    except ImportError:
        onnxruntime = None
    if onnxruntime is not None:
        session = onnxruntime.InferenceSession(model.SerializeToString(),
                                               providers=["CPUExecutionProvider"])
        return session.run(None, feeds), f"onnxruntime {onnxruntime.__version__}"
    from onnx.reference import ReferenceEvaluator
    outputs = ReferenceEvaluator(model).run(None, feeds)    # all outputs: a list
    return cast(list[np.ndarray], outputs), "onnx ReferenceEvaluator"


@dataclass(frozen=True)
class OutputComparison:
    max_abs_err: float
    cosine: float
    ok: bool
    reason: str = ""


def compare_outputs(ours: np.ndarray, theirs: np.ndarray, tolerance: float
                    ) -> OutputComparison:
    """|ours - theirs| <= tolerance * (1 + |theirs|) everywhere (NaN where NaN), and the cosine
    of the two as vectors."""
    theirs = np.asarray(theirs)
    if ours.shape != theirs.shape:
        return OutputComparison(float("nan"), float("nan"), False,
                                f"shape {list(ours.shape)} vs {list(theirs.shape)}")
    a, b = ours.astype(np.float64).reshape(-1), theirs.astype(np.float64).reshape(-1)
    same_nan = np.isnan(a) == np.isnan(b)
    finite = ~np.isnan(a) & ~np.isnan(b)
    diff = np.abs(a[finite] - b[finite])
    diff = np.where(np.isinf(a[finite]) & (a[finite] == b[finite]), 0.0, diff)
    err = float(diff.max()) if diff.size else 0.0
    norm = np.linalg.norm(a[finite]) * np.linalg.norm(b[finite])
    cosine = float(a[finite] @ b[finite] / norm) if norm else float(
        np.array_equal(a[finite], b[finite]))
    bad = ~(diff <= tolerance * (1 + np.abs(b[finite])))
    if not same_nan.all():
        return OutputComparison(err, cosine, False, "NaN in one and not the other")
    if bad.any():
        return OutputComparison(err, cosine, False, f"{int(bad.sum())} of {a.size} elements")
    return OutputComparison(err, cosine, True)
