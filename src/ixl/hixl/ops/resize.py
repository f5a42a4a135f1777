"""Resize (tier C): ONNX Resize, nearest, linear and cubic, one axis at a time.

Each output index i of a resized axis maps to a source coordinate x(i) by the coordinate
transformation mode (half_pixel, asymmetric, align_corners, pytorch_half_pixel,
half_pixel_symmetric, tf_crop_and_resize); nearest picks one neighbour of x by nearest_mode,
linear weighs two, cubic four (Keys' kernel with cubic_coeff_a); neighbours past an edge repeat
the edge (or, with exclude_outside, drop out and the weights renormalise). Linear and cubic are
separable, so resizing axis after axis is the N-d resize. The output dims are floor(scale * in)
for scales, or the sizes given (keep_aspect_ratio_policy may scale every axis alike).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, TypeGuard

import numpy as np

from ..database import register
from ..dtypes import ANY_FLOAT, FLOATS
from ..errors import AttrError, ShapeMismatch
from ..schema import ArgSpec, Attr, OpSchema, SampleCase, Shape, normalize_axes

MODES = ("nearest", "linear", "cubic")
COORDINATES = ("half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners",
               "asymmetric", "tf_crop_and_resize")
NEAREST_MODES = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")
POLICIES = ("stretch", "not_larger", "not_smaller")


def _choice(attrs: dict, name: str, allowed: tuple[str, ...]) -> None:
    if attrs[name] not in allowed:
        raise AttrError(f"Resize: {name}={attrs[name]!r} is not allowed "
                        f"(allowed: {', '.join(allowed)})")


def _given(spec: ArgSpec | None) -> TypeGuard[ArgSpec]:
    """An optional input counts as given when present and not empty (exporters pass an empty
    tensor for 'none')."""
    return spec is not None and spec.size > 0


def plan(shape: tuple, attrs: dict, roi: Sequence[float] | None, scales: Sequence[float] | None,
         sizes: Sequence[int] | None) -> tuple[list[int], list[float], list]:
    """Output dims, the scale of each dim (for the coordinate mapping) and each dim's roi
    (start, end), from the inputs' contents."""
    rank = len(shape)
    axes = list(range(rank)) if attrs["axes"] is None else list(
        normalize_axes("Resize", attrs["axes"], rank))
    if (scales is None) == (sizes is None):
        raise ShapeMismatch("Resize: give exactly one of scales and sizes (the other omitted or "
                            "empty)")
    given = scales if sizes is None else sizes
    assert given is not None                    # exactly one of them (checked above)
    if len(given) != len(axes):
        raise ShapeMismatch(f"Resize: {'sizes' if sizes is not None else 'scales'} "
                            f"{list(given)} must hold one value per resized axis ({len(axes)})")
    out, scale = list(shape), [1.0] * rank
    if scales is not None:
        for axis, s in zip(axes, scales):
            if not s > 0:
                raise ShapeMismatch(f"Resize: scales must be > 0, got {list(scales)}")
            scale[axis], out[axis] = float(s), int(math.floor(s * shape[axis]))
    else:
        assert sizes is not None
        if any(int(v) < 0 for v in sizes):
            raise ShapeMismatch(f"Resize: sizes must be >= 0, got {list(sizes)}")
        ratios = [int(v) / shape[a] if shape[a] else 1.0 for a, v in zip(axes, sizes)]
        policy = attrs["keep_aspect_ratio_policy"]
        for axis, v, r in zip(axes, sizes, ratios):
            if policy == "stretch":
                scale[axis], out[axis] = r, int(v)
            else:
                common = min(ratios) if policy == "not_larger" else max(ratios)
                scale[axis], out[axis] = common, int(common * shape[axis] + 0.5)
    bounds = [(0.0, 1.0)] * rank
    if roi is not None and len(roi):
        if len(roi) != 2 * len(axes):
            raise ShapeMismatch(f"Resize: roi {list(roi)} must hold a start and an end per "
                                f"resized axis (all starts, then all ends)")
        for i, axis in enumerate(axes):
            bounds[axis] = (float(roi[i]), float(roi[i + len(axes)]))
    return out, scale, bounds


def _infer(schema: OpSchema, specs: list[ArgSpec], attrs: dict) -> list[ArgSpec]:
    x, roi, scales, sizes = (list(specs) + [None] * 3)[:4]
    assert x is not None                        # a required input: check() saw it
    for name, allowed in (("mode", MODES), ("coordinate_transformation_mode", COORDINATES),
                          ("nearest_mode", NEAREST_MODES),
                          ("keep_aspect_ratio_policy", POLICIES)):
        _choice(attrs, name, allowed)
    if attrs["antialias"]:
        raise AttrError("Resize: antialias=1 is not supported (allowed: 0)")
    value = lambda s: s.value if _given(s) else None  # noqa: E731
    for s, name in ((roi, "roi"), (scales, "scales"), (sizes, "sizes")):
        if _given(s) and s.value is None:
            raise ShapeMismatch(f"Resize: the output shape depends on the contents of {name}, "
                                f"which the host must know")
    out, _, _ = plan(x.shape, attrs, value(roi), value(scales), value(sizes))
    return [ArgSpec(tuple(out), x.dtype)]


def source_coordinates(mode: str, out: int, size: int, scale: float, roi: tuple) -> np.ndarray:
    """x(i) for each output index i of one axis."""
    i = np.arange(out, dtype=np.float64)
    length = scale * size                  # the output length before flooring
    if mode == "align_corners":
        return np.zeros(out) if length == 1 else i * (size - 1) / (length - 1)
    if mode == "asymmetric":
        return i / scale
    if mode == "pytorch_half_pixel":
        return np.full(out, -0.5) if length == 1 else (i + 0.5) / scale - 0.5
    if mode == "half_pixel_symmetric":
        offset = size / 2 * (1 - out / length)
        return offset + (i + 0.5) / scale - 0.5
    if mode == "tf_crop_and_resize":
        start, end = roi
        if length == 1:
            return np.full(out, (end - start) * (size - 1) / 2 + start * (size - 1))
        return i * (end - start) * (size - 1) / (length - 1) + start * (size - 1)
    return (i + 0.5) / scale - 0.5         # half_pixel


def _keys(t: np.ndarray, a: float) -> np.ndarray:
    """Keys' cubic convolution kernel at distance t (0 beyond 2)."""
    t = np.abs(t)
    near = ((a + 2) * t - (a + 3)) * t * t + 1
    far = ((a * t - 5 * a) * t + 8 * a) * t - 4 * a
    return np.where(t <= 1, near, np.where(t < 2, far, 0.0))


def neighbours(x: np.ndarray, attrs: dict) -> tuple[np.ndarray, np.ndarray]:
    """(indices, weights), each (out, taps): the source positions each output reads."""
    mode = attrs["mode"]
    base = np.floor(x)
    frac = x - base
    if mode == "nearest":
        rule = attrs["nearest_mode"]
        if rule == "floor":
            pick = base
        elif rule == "ceil":
            pick = np.ceil(x)
        else:
            up = frac > 0.5 if rule == "round_prefer_floor" else frac >= 0.5
            pick = np.where(up, base + 1, base)
        return pick[:, None].astype(np.int64), np.ones((len(x), 1))
    if mode == "linear":
        return (base[:, None] + np.arange(2)).astype(np.int64), np.stack([1 - frac, frac], -1)
    offsets = np.arange(-1, 3)
    return ((base[:, None] + offsets).astype(np.int64),
            _keys(frac[:, None] - offsets, attrs["cubic_coeff_a"]))


def resize_axis(data: np.ndarray, axis: int, out: int, scale: float, roi: tuple,
                attrs: dict) -> np.ndarray:
    size = data.shape[axis]
    mode = attrs["coordinate_transformation_mode"]
    x = source_coordinates(mode, out, size, scale, roi)
    idx, weights = neighbours(x, attrs)
    if attrs["exclude_outside"] and attrs["mode"] != "nearest":
        weights = np.where((idx < 0) | (idx >= size), 0.0, weights)
        total = weights.sum(axis=1, keepdims=True)
        weights = weights / np.where(total == 0, 1.0, total)
    picked = np.take(data, np.clip(idx, 0, max(size - 1, 0)), axis=axis)
    shape = (1,) * axis + weights.shape + (1,) * (data.ndim - axis - 1)
    result = (picked * weights.reshape(shape)).sum(axis=axis + 1)
    if mode == "tf_crop_and_resize":
        outside = ((x < 0) | (x > size - 1)).reshape((1,) * axis + (out,)
                                                       + (1,) * (data.ndim - axis - 1))
        result = np.where(outside, attrs["extrapolation_value"], result)
    return result


def _resize(x, roi=None, scales=None, sizes=None, **attrs):
    flat = lambda a: None if a is None or a.size == 0 else a.reshape(-1).tolist()  # noqa: E731
    out, scale, bounds = plan(x.shape, attrs, flat(roi), flat(scales), flat(sizes))
    y = x
    for axis, (n_out, s, b) in enumerate(zip(out, scale, bounds)):
        if n_out == x.shape[axis] and s == 1.0 and b == (0.0, 1.0):
            continue                       # this axis is not resized
        if x.shape[axis] == 0 or n_out == 0:
            y = np.zeros(y.shape[:axis] + (n_out,) + y.shape[axis + 1:], y.dtype)
            continue
        y = resize_axis(y, axis, n_out, s, b, attrs)
    return y


def case(note: str, x: Shape, scales: Sequence[float] | None = None,
         sizes: Sequence[int] | None = None, **attrs: Any) -> SampleCase:
    """A sample with scales or sizes over every axis (the common NCHW form), roi omitted."""
    if scales is not None:
        return SampleCase(note, (x, None, (len(scales),)), attrs, values={"scales": scales})
    assert sizes is not None                    # scales or sizes
    return SampleCase(note, (x, None, None, (len(sizes),)), attrs, values={"sizes": sizes})


CASES = [
    case("one element, nearest x2", (1, 1, 1, 1), scales=[1, 1, 2, 2]),
    case("nearest x2 (a detector's upsampling)", (1, 3, 5, 7), scales=[1, 1, 2, 2],
         coordinate_transformation_mode="asymmetric", nearest_mode="floor"),
    case("nearest to sizes, round_prefer_ceil", (1, 2, 4, 6), sizes=[1, 2, 7, 9],
         nearest_mode="round_prefer_ceil"),
    case("linear half_pixel x2", (2, 3, 4, 5), scales=[1, 1, 2, 2], mode="linear"),
    case("linear align_corners to sizes", (1, 2, 5, 5), sizes=[1, 2, 9, 3], mode="linear",
         coordinate_transformation_mode="align_corners"),
    case("linear pytorch_half_pixel, downsample", (1, 2, 8, 8), sizes=[1, 2, 3, 1],
         mode="linear", coordinate_transformation_mode="pytorch_half_pixel"),
    case("linear asymmetric x1.5", (1, 1, 6, 4), scales=[1, 1, 1.5, 1.5], mode="linear",
         coordinate_transformation_mode="asymmetric"),
    case("cubic, exclude_outside", (1, 1, 6, 6), scales=[1, 1, 1.7, 0.8], mode="cubic",
         exclude_outside=1),
    case("keep_aspect_ratio_policy not_larger", (1, 1, 4, 8), sizes=[1, 1, 6, 6],
         keep_aspect_ratio_policy="not_larger"),
    case("batch of size 0", (0, 3, 4, 4), scales=[1, 1, 2, 2]),
    case("large: 64 channels 80x80 to 160x160", (1, 64, 80, 80), scales=[1, 1, 2, 2]),
]

register(OpSchema(
    name="Resize", tier="C", family="resize", inputs=("x", "roi", "scales", "sizes"),
    dtypes=FLOATS, reference_fn=_resize, infer_fn=_infer, optional=3,
    host_inputs=("roi", "scales", "sizes"),
    type_of={"roi": "T2", "scales": "S", "sizes": "I"},
    constraints={"T": ANY_FLOAT, "T2": ANY_FLOAT, "S": ("float32",), "I": ("int64",)},
    attrs={"antialias": Attr(int, 0, "0 only"),
           "axes": Attr(list, None, "the axes resized (default: all)"),
           "coordinate_transformation_mode": Attr(str, "half_pixel", ", ".join(COORDINATES)),
           "cubic_coeff_a": Attr(float, -0.75, "Keys' kernel parameter"),
           "exclude_outside": Attr(int, 0, "1: neighbours past an edge weigh 0"),
           "extrapolation_value": Attr(float, 0.0, "tf_crop_and_resize: value outside x"),
           "keep_aspect_ratio_policy": Attr(str, "stretch", ", ".join(POLICIES)),
           "mode": Attr(str, "nearest", ", ".join(MODES)),
           "nearest_mode": Attr(str, "round_prefer_floor", ", ".join(NEAREST_MODES))},
    samples=CASES, input_range=(-1.0, 1.0),
    doc="y = x resized by scales or to sizes: nearest, linear or cubic interpolation"))
