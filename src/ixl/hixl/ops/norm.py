"""Softmax and normalisations (tier A): a reduction along axes, then an elementwise pass.

LayerNormalization and RMSNormalization normalise over every axis from `axis` on (ONNX); their
statistics are computed in float32 (stash_type=1), whatever the input dtype.
"""

from __future__ import annotations

import numpy as np

from ..database import register
from ..dtypes import ANY_FLOAT, FLOATS
from ..errors import AttrError, ShapeMismatch
from ..schema import ArgSpec, Attr, OpSchema, SampleCase, broadcasts_to, normalize_axis

FLOAT_TYPES = {"T": ANY_FLOAT}


# ---- Softmax, LogSoftmax ----

def _infer_softmax(schema: OpSchema, specs: list[ArgSpec], attrs: dict) -> list[ArgSpec]:
    normalize_axis(schema.name, attrs["axis"], len(specs[0].shape))
    return [ArgSpec(specs[0].shape, specs[0].dtype)]


def _shifted(x, axis):
    """x minus its max along axis: exp never overflows."""
    return x - np.max(x, axis=axis, keepdims=True)


def _softmax(x, axis):
    if x.size == 0:
        return x
    e = np.exp(_shifted(x, axis))
    return e / np.sum(e, axis=axis, keepdims=True)


def _log_softmax(x, axis):
    if x.size == 0:
        return x
    s = _shifted(x, axis)
    return s - np.log(np.sum(np.exp(s), axis=axis, keepdims=True))


# ---- LayerNormalization, RMSNormalization ----

NORM_ATTRS = {
    "axis": Attr(int, -1, "first normalised axis; every axis from it on is normalised"),
    "epsilon": Attr(float, 1e-5, "added to the variance; must be > 0"),
    "stash_type": Attr(int, 1, "dtype of the statistics: 1 (float32) only"),
}


def _check_norm(schema: OpSchema, specs: list[ArgSpec], attrs: dict) -> int:
    """Check axis, epsilon, stash_type and the parameter shapes; return the axis in [0, rank)."""
    x = specs[0]
    axis = normalize_axis(schema.name, attrs["axis"], len(x.shape))
    if not attrs["epsilon"] > 0:
        raise AttrError(f"{schema.name}: epsilon must be > 0, got {attrs['epsilon']}")
    if attrs["stash_type"] != 1:
        raise AttrError(f"{schema.name}: stash_type={attrs['stash_type']} is not supported "
                        f"(allowed: 1, statistics in float32)")
    normalized = x.shape[axis:]
    for spec, name in zip(specs[1:], schema.inputs[1:]):
        if spec is None:
            continue
        if not broadcasts_to(spec.shape, normalized):
            raise ShapeMismatch(f"{schema.name}: {name} of shape {spec.shape} does not fit the "
                                f"normalised shape {normalized} = x.shape[{axis}:] (it must "
                                f"equal it or broadcast to it)")
    return axis


def _infer_layer_norm(schema: OpSchema, specs: list[ArgSpec], attrs: dict) -> list[ArgSpec]:
    x = specs[0]
    axis = _check_norm(schema, specs, attrs)
    stats = x.shape[:axis] + (1,) * (len(x.shape) - axis)
    return [ArgSpec(x.shape, x.dtype), ArgSpec(stats, "float32"), ArgSpec(stats, "float32")]


def _infer_rms_norm(schema: OpSchema, specs: list[ArgSpec], attrs: dict) -> list[ArgSpec]:
    _check_norm(schema, specs, attrs)
    return [ArgSpec(specs[0].shape, specs[0].dtype)]


def _mean(x, axes):
    """Mean that is NaN over an empty set without numpy's warning."""
    count = int(np.prod([x.shape[a] for a in axes]))
    return np.sum(x, axis=axes, keepdims=True) / count


def _affine(y, scale, bias):
    if scale is not None:
        y = y * scale
    return y if bias is None else y + bias


def _layer_norm(x, scale=None, bias=None, axis=-1, epsilon=1e-5, stash_type=1):
    axes = tuple(range(axis % x.ndim, x.ndim))
    mean = _mean(x, axes)
    inv_std = 1 / np.sqrt(_mean((x - mean) ** 2, axes) + epsilon)
    return _affine((x - mean) * inv_std, scale, bias), mean, inv_std


def _rms_norm(x, scale=None, axis=-1, epsilon=1e-5, stash_type=1):
    axes = tuple(range(axis % x.ndim, x.ndim))
    return _affine(x / np.sqrt(_mean(x * x, axes) + epsilon), scale, None)


# ---- sample cases ----

ROWS = [
    ("one element", (1,)),
    ("row of 1 element", (37, 1)),
    ("a dim of size 0", (0, 16)),
    ("last dim of 7 elements: bytes not a multiple of 32", (5, 7)),
    ("prime row length", (3, 1009)),
    ("long row", (4, 32768)),
    ("large", (1024, 2048)),
]


def _softmax_cases() -> list[SampleCase]:
    return [SampleCase(note, (shape,)) for note, shape in ROWS] + [
        SampleCase("first axis", ((16, 33),), {"axis": 0}),
        SampleCase("middle axis", ((4, 5, 6),), {"axis": 1})]


def _norm_cases(params: int) -> list[SampleCase]:
    """Rows normalised over the last axis with `params` per-row parameters, then axis and
    parameter variants."""
    def case(note, shape, axis=-1, param_shape=None, count=params, **attrs):
        ps = shape[axis % len(shape):] if param_shape is None else param_shape
        return SampleCase(note, (shape,) + (ps,) * count, {"axis": axis, **attrs})
    return [case(note, shape) for note, shape in ROWS] + [
        case("axis 0: the whole tensor", (2, 3, 5), axis=0),
        case("middle axis, epsilon 0.1", (2, 3, 5), axis=1, epsilon=0.1),
        case("parameters broadcast over the normalised shape", (4, 3, 5), axis=1,
             param_shape=(5,)),
        case("no parameters", (6, 40), count=0)]


register(OpSchema(
    name="Softmax", tier="A", family="norm", inputs=("x",), dtypes=FLOATS,
    reference_fn=_softmax, infer_fn=_infer_softmax, constraints=FLOAT_TYPES,
    attrs={"axis": Attr(int, -1, "the axis normalised to sum 1")}, samples=_softmax_cases(),
    doc="y = exp(x) / sum(exp(x)) along axis"))
register(OpSchema(
    name="LogSoftmax", tier="A", family="norm", inputs=("x",), dtypes=FLOATS,
    reference_fn=_log_softmax, infer_fn=_infer_softmax, constraints=FLOAT_TYPES,
    attrs={"axis": Attr(int, -1, "the axis normalised")}, samples=_softmax_cases(),
    doc="y = x - log(sum(exp(x))) along axis"))
register(OpSchema(
    name="LayerNormalization", tier="A", family="norm", inputs=("x", "scale", "bias"),
    outputs=("y", "mean", "inv_std_dev"), dtypes=FLOATS, reference_fn=_layer_norm,
    infer_fn=_infer_layer_norm, optional=2, constraints=FLOAT_TYPES, attrs=NORM_ATTRS,
    samples=_norm_cases(2) + [SampleCase("bias without scale", ((6, 40), None, (40,)))],
    doc="y = (x - mean) / sqrt(var + epsilon) * scale + bias over axes [axis, rank); also "
        "returns mean and 1 / sqrt(var + epsilon) (float32)"))
register(OpSchema(
    name="RMSNormalization", tier="A", family="norm", inputs=("x", "scale"), dtypes=FLOATS,
    reference_fn=_rms_norm, infer_fn=_infer_rms_norm, optional=1, constraints=FLOAT_TYPES,
    attrs=NORM_ATTRS, samples=_norm_cases(1),
    doc="y = x / sqrt(mean(x^2) + epsilon) * scale over axes [axis, rank)"))
