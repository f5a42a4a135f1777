"""Softmax and normalisations (tier A): a reduction along axes, then an elementwise pass.

LayerNormalization and RMSNormalization normalise over every axis from `axis` on (ONNX); their
statistics are computed in float32 (stash_type=1), whatever the input dtype. The channel
normalisations of (N, C, D1, ...) tensors: BatchNormalization (inference: the statistics are
inputs), InstanceNormalization (per sample and channel), GroupNormalization (per sample and
group of channels).
"""

from __future__ import annotations

import numpy as np

from ..database import register
from ..dtypes import ANY_FLOAT, FLOATS
from ..errors import AttrError, ShapeMismatch
from ..schema import ArgSpec, Attr, OpSchema, SampleCase, broadcasts_to, normalize_axis, uniform

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


# ---- channel normalisations of (N, C, D1, ...) ----

def _channels(op: str, x: ArgSpec, params, names) -> int:
    """Check per-channel parameters (C,) of x (N, C, ...); return C."""
    if len(x.shape) < 2:
        raise ShapeMismatch(f"{op}: x must be (N, C, ...), got shape {x.shape}")
    c = x.shape[1]
    for spec, name in zip(params, names):
        if spec is not None and spec.shape != (c,):
            raise ShapeMismatch(f"{op}: {name} must have shape ({c},), one per channel of x "
                                f"{x.shape}, got {spec.shape}")
    return c


def _per_channel(p, ndim: int):
    return p.reshape((1, -1) + (1,) * (ndim - 2))


def _infer_batch_norm(schema, specs, attrs):
    if attrs["training_mode"] != 0:
        raise AttrError("BatchNormalization: training_mode=1 (batch statistics, running "
                        "updates) is not supported; ixl runs inference (allowed: 0)")
    if not attrs["epsilon"] > 0:
        raise AttrError(f"BatchNormalization: epsilon must be > 0, got {attrs['epsilon']}")
    _channels("BatchNormalization", specs[0], specs[1:], schema.inputs[1:])
    return [ArgSpec(specs[0].shape, specs[0].dtype)]


def _batch_norm(x, scale, bias, mean, var, epsilon=1e-5, momentum=0.9, training_mode=0):
    """Inference: y = (x - mean) / sqrt(var + epsilon) * scale + bias, per channel (axis 1)."""
    c = lambda p: _per_channel(p, x.ndim)  # noqa: E731
    return (x - c(mean)) / np.sqrt(c(var) + epsilon) * c(scale) + c(bias)


def _infer_instance_norm(schema, specs, attrs):
    _channels("InstanceNormalization", specs[0], specs[1:], schema.inputs[1:])
    if len(specs[0].shape) < 3:
        raise ShapeMismatch(f"InstanceNormalization: x must have a spatial dim (N, C, D1, ...), "
                            f"got shape {specs[0].shape}")
    return [ArgSpec(specs[0].shape, specs[0].dtype)]


def _normalized(x, axes, epsilon):
    mean = _mean(x, axes)
    return (x - mean) / np.sqrt(_mean((x - mean) ** 2, axes) + epsilon)


def _instance_norm(x, scale, bias, epsilon=1e-5):
    y = _normalized(x, tuple(range(2, x.ndim)), epsilon)
    return y * _per_channel(scale, x.ndim) + _per_channel(bias, x.ndim)


def _infer_group_norm(schema, specs, attrs):
    x = specs[0]
    c = _channels("GroupNormalization", x, specs[1:], schema.inputs[1:])
    groups = attrs["num_groups"]
    if groups < 1 or c % groups:
        raise AttrError(f"GroupNormalization: num_groups={groups} must be positive and divide "
                        f"the {c} channels of x {x.shape}")
    if attrs["stash_type"] != 1:
        raise AttrError(f"GroupNormalization: stash_type={attrs['stash_type']} is not supported "
                        f"(allowed: 1, statistics in float32)")
    return [ArgSpec(x.shape, x.dtype)]


def _group_norm(x, scale, bias, num_groups, epsilon=1e-5, stash_type=1):
    """Statistics per sample over each group of C / num_groups channels and the spatial dims;
    then the per-channel scale and bias (opset 21)."""
    n, c = x.shape[:2]
    grouped = x.reshape((n, num_groups, c // num_groups * int(np.prod(x.shape[2:]))))
    y = _normalized(grouped, (2,), epsilon).reshape(x.shape)
    return y * _per_channel(scale, x.ndim) + _per_channel(bias, x.ndim)


def _positive_var_inputs(schema, specs, rng, attrs):
    """Variances in [0.25, 2]: a negative variance is no statistic."""
    arrays = [uniform(s, rng, schema.input_range) for s in specs]
    arrays[4] = uniform(specs[4], rng, (0.25, 2.0))
    return arrays


def _channel_cases(params: int, **attrs) -> list[SampleCase]:
    def case(note, x, **extra):
        return SampleCase(note, (x,) + ((x[1],),) * params, {**attrs, **extra})
    return [case("one element", (1, 1, 1, 1)),
            case("NCHW", (2, 6, 5, 5)),
            case("1-D signal", (2, 4, 17)),
            case("3-D volume", (1, 2, 3, 4, 5)),
            case("width 7: rows not a multiple of 32 bytes", (1, 4, 5, 7)),
            case("batch of size 0", (0, 4, 5, 5)),
            case("large: 64 channels of 56x56", (1, 64, 56, 56))]


register(OpSchema(
    name="BatchNormalization", tier="A", family="norm",
    inputs=("x", "scale", "bias", "input_mean", "input_var"), dtypes=FLOATS,
    reference_fn=_batch_norm, infer_fn=_infer_batch_norm, constraints=FLOAT_TYPES,
    attrs={"epsilon": Attr(float, 1e-5, "added to the variance"),
           "momentum": Attr(float, 0.9, "training only; not read in inference"),
           "training_mode": Attr(int, 0, "0 only: inference with the given statistics")},
    make_inputs=_positive_var_inputs, samples=_channel_cases(4)[:-1] + [
        SampleCase("one channel, epsilon 0.01", ((3, 1, 4, 4),) + ((1,),) * 4,
                   {"epsilon": 1e-2}),
        SampleCase("(N, C) without spatial dims", ((8, 5),) + ((5,),) * 4),
        _channel_cases(4)[-1]],
    doc="y = (x - mean) / sqrt(var + epsilon) * scale + bias per channel (inference)"))
register(OpSchema(
    name="InstanceNormalization", tier="A", family="norm", inputs=("x", "scale", "bias"),
    dtypes=FLOATS, reference_fn=_instance_norm, infer_fn=_infer_instance_norm,
    constraints=FLOAT_TYPES, attrs={"epsilon": Attr(float, 1e-5, "added to the variance")},
    samples=_channel_cases(2) + [
        SampleCase("two elements an instance: rows mostly pad", ((3, 15, 2), (15,), (15,)))],
    doc="y = x normalised over the spatial dims of each (n, c), then scale and bias per channel"))
register(OpSchema(
    name="GroupNormalization", tier="A", family="norm", inputs=("x", "scale", "bias"),
    dtypes=FLOATS, reference_fn=_group_norm, infer_fn=_infer_group_norm,
    constraints=FLOAT_TYPES,
    attrs={"num_groups": Attr(int, None, "channel groups; divides C", required=True),
           "epsilon": Attr(float, 1e-5, "added to the variance"),
           "stash_type": Attr(int, 1, "dtype of the statistics: 1 (float32) only")},
    samples=[c for c in _channel_cases(2, num_groups=2) if c.shapes[0][1] % 2 == 0] + [
        SampleCase("one element, one group", ((1, 1, 1, 1), (1,), (1,)), {"num_groups": 1}),
        SampleCase("one group per channel", ((2, 3, 4, 4), (3,), (3,)), {"num_groups": 3}),
        SampleCase("one group", ((2, 6, 4, 4), (6,), (6,)), {"num_groups": 1}),
        SampleCase("groups of two one-element channels", ((2, 76, 1), (76,), (76,)),
                   {"num_groups": 38})],
    doc="y = x normalised over each group of channels (and the spatial dims) per sample, then "
        "scale and bias per channel (opset 21)"))
