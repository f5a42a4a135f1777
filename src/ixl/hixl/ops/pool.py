"""Pooling (tier A): MaxPool, AveragePool and their global forms over (N, C, D1, ..., Dk).

A window slides over the spatial dims (kernel_shape, strides, dilations, pads or auto_pad,
ceil_mode); MaxPool takes its largest element (and, as a second output, where it came from),
AveragePool its mean over the real elements, or over the padded window with count_include_pad.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

import numpy as np

from ..database import register
from ..dtypes import ANY_FLOAT, FLOATS
from ..errors import AttrError
from ..schema import ArgSpec, Attr, OpSchema, SampleCase, Shape
from .window import pool_window, spatial, windows

WINDOW_ATTRS = {
    "auto_pad": Attr(str, "NOTSET", "NOTSET (use pads), SAME_UPPER, SAME_LOWER, VALID"),
    "ceil_mode": Attr(int, 0, "1: round the output count up (a window starting in the end "
                              "padding is dropped)"),
    "dilations": Attr(list, None, "one per spatial dim, default 1"),
    "kernel_shape": Attr(list, None, "the window, one per spatial dim", required=True),
    "pads": Attr(list, None, "begins then ends, one pair per spatial dim, default 0"),
    "strides": Attr(list, None, "one per spatial dim, default 1"),
}


def _window(op: str, shape: tuple, attrs: dict):
    return pool_window(op, shape, attrs, tuple(int(k) for k in attrs["kernel_shape"]))


def _window_axes(rank: int) -> tuple[int, ...]:
    """The kernel axes of `windows(...)`: the last `rank`."""
    return tuple(range(-rank, 0))


def _lowest(dtype: np.dtype):
    return -np.inf if dtype.kind == "f" else np.iinfo(dtype).min


# ---- MaxPool ----

def _infer_max_pool(schema, specs, attrs):
    x = specs[0]
    if attrs["storage_order"] not in (0, 1):
        raise AttrError(f"MaxPool: storage_order={attrs['storage_order']} is not allowed "
                        f"(allowed: 0 row major, 1 column major)")
    win = _window("MaxPool", x.shape, attrs)
    shape = x.shape[:2] + win.out
    return [ArgSpec(shape, x.dtype), ArgSpec(shape, "int64")]


def _max_pool(x, storage_order=0, **attrs):
    win = _window("MaxPool", x.shape, attrs)
    rank = len(win.kernel)
    view = windows(x, win, _lowest(x.dtype))
    flat = view.reshape(view.shape[:2 + rank] + (int(np.prod(win.kernel)),))
    y = flat.max(axis=-1, initial=_lowest(x.dtype))
    return y, _max_indices(x.shape, win, flat.argmax(axis=-1), storage_order)


def _max_indices(shape: tuple, win, arg: np.ndarray, storage_order: int) -> np.ndarray:
    """The flat index into x of each maximum (ONNX: over the whole tensor, batch and channel
    included; storage_order 1 numbers the spatial dims column major)."""
    dims = shape[2:]
    offsets = np.unravel_index(arg, win.kernel)
    grid = np.meshgrid(*[np.arange(o) for o in win.out], indexing="ij")
    pos = [g * s - b + k * d for g, s, b, k, d in
           zip(grid, win.strides, win.begin, offsets, win.dilations)]
    order: Literal["C", "F"] = "F" if storage_order else "C"
    inner = np.ravel_multi_index(tuple(np.clip(p, 0, n - 1) for p, n in zip(pos, dims)),
                                 dims, order=order)
    planes = np.arange(shape[0] * shape[1]).reshape(shape[:2] + (1,) * len(dims))
    return inner + planes * int(np.prod(dims, dtype=np.int64))


# ---- AveragePool ----

def _infer_pool(schema, specs, attrs):
    x = specs[0]
    win = _window(schema.name, x.shape, attrs)
    return [ArgSpec(x.shape[:2] + win.out, x.dtype)]


def _average_pool(x, count_include_pad=0, **attrs):
    """Sum over the window divided by its real elements; with count_include_pad the explicit
    padding counts too, ceil_mode's overhang never does."""
    win = _window("AveragePool", x.shape, attrs)
    axes = _window_axes(len(win.kernel))
    total = windows(x, win, 0).sum(axis=axes)
    ones = np.ones((1, 1) + x.shape[2:])
    count = windows(ones, win, 1 if count_include_pad else 0, 0).sum(axis=axes)
    return total / count


# ---- global pools ----

def _infer_global(schema, specs, attrs):
    x = specs[0]
    dims = spatial(schema.name, x.shape)
    return [ArgSpec(x.shape[:2] + (1,) * len(dims), x.dtype)]


def _global(reduce):
    def reference(x):
        axes = tuple(range(2, x.ndim))
        if reduce is np.max:
            return np.max(x, axis=axes, keepdims=True, initial=_lowest(x.dtype))
        return np.sum(x, axis=axes, keepdims=True) / int(np.prod(x.shape[2:]))
    return reference


# ---- sample cases ----

def case(note: str, x: Shape, kernel: Sequence[int], **attrs: Any) -> SampleCase:
    return SampleCase(note, (x,), {"kernel_shape": list(kernel), **attrs})


COMMON_CASES = [
    case("one element", (1, 1, 1, 1), (1, 1)),
    case("2x2 stride 2 (a classifier's downsampling)", (2, 3, 8, 8), (2, 2), strides=[2, 2]),
    case("3x3 stride 2 pads 1 (ResNet's stem)", (1, 4, 9, 9), (3, 3), strides=[2, 2],
         pads=[1, 1, 1, 1]),
    case("ceil_mode, last window starting in the padding", (1, 1, 6, 6), (3, 3), strides=[2, 2],
         pads=[1, 1, 1, 1], ceil_mode=1),
    case("ceil_mode", (1, 2, 7, 5), (2, 2), strides=[2, 2], ceil_mode=1),
    case("auto_pad SAME_UPPER", (1, 2, 5, 5), (2, 2), auto_pad="SAME_UPPER"),
    case("auto_pad SAME_LOWER, stride 2", (1, 2, 5, 5), (3, 3), strides=[2, 2],
         auto_pad="SAME_LOWER"),
    case("auto_pad VALID", (1, 2, 6, 5), (3, 3), auto_pad="VALID"),
    case("dilations 2", (1, 2, 9, 9), (3, 3), dilations=[2, 2]),
    case("1-D", (2, 3, 17), (3,), strides=[2]),
    case("3-D", (1, 2, 4, 5, 6), (2, 2, 2)),
    case("width 7: rows not a multiple of 32 bytes", (1, 4, 5, 7), (3, 3)),
    case("batch of size 0", (0, 3, 5, 5), (3, 3)),
    case("large: a 112x112 map", (1, 32, 112, 112), (3, 3), strides=[2, 2], pads=[1, 1, 1, 1]),
]

AVERAGE_CASES = COMMON_CASES + [
    case("count_include_pad", (1, 4, 9, 9), (3, 3), strides=[2, 2], pads=[1, 1, 1, 1],
         count_include_pad=1),
    case("count_include_pad with ceil_mode overhang", (1, 1, 6, 6), (3, 3), strides=[2, 2],
         pads=[1, 1, 1, 1], ceil_mode=1, count_include_pad=1),
]

GLOBAL_CASES = [
    SampleCase("one element", ((1, 1, 1, 1),)),
    SampleCase("NCHW", ((2, 16, 7, 7),)),
    SampleCase("1-D", ((2, 3, 17),)),
    SampleCase("3-D", ((1, 2, 4, 5, 6),)),
    SampleCase("batch of size 0", ((0, 3, 5, 5),)),
    SampleCase("large", ((1, 512, 56, 56),)),
]

register(OpSchema(
    name="MaxPool", tier="A", family="pool", inputs=("x",), outputs=("y", "indices"),
    dtypes=FLOATS, reference_fn=_max_pool, infer_fn=_infer_max_pool,
    constraints={"T": ANY_FLOAT + ("int8", "uint8")},
    attrs={**WINDOW_ATTRS, "storage_order": Attr(int, 0, "indices: 0 row major, 1 column major")},
    samples=COMMON_CASES,
    doc="y = the largest element of each window; indices: its flat position in x"))
register(OpSchema(
    name="AveragePool", tier="A", family="pool", inputs=("x",), dtypes=FLOATS,
    reference_fn=_average_pool, infer_fn=_infer_pool, constraints={"T": ANY_FLOAT},
    attrs={**WINDOW_ATTRS, "count_include_pad": Attr(int, 0, "1: padding counts in the mean")},
    samples=AVERAGE_CASES, doc="y = the mean of each window (of its real elements unless "
                               "count_include_pad)"))
register(OpSchema(
    name="GlobalMaxPool", tier="A", family="pool", inputs=("x",), dtypes=FLOATS,
    reference_fn=_global(np.max), infer_fn=_infer_global, constraints={"T": ANY_FLOAT},
    samples=GLOBAL_CASES, doc="y = the largest element of each (n, c) plane: (N, C, 1, ...)"))
register(OpSchema(
    name="GlobalAveragePool", tier="A", family="pool", inputs=("x",), dtypes=FLOATS,
    reference_fn=_global(np.mean), infer_fn=_infer_global, constraints={"T": ANY_FLOAT},
    samples=GLOBAL_CASES, doc="y = the mean of each (n, c) plane: (N, C, 1, ...)"))
