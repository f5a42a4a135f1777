"""1-D and 2-D convolution (tier B): ONNX Conv on NCL / NCHW with strides, pads / auto_pad,
dilations, groups and an optional bias. On the chip this is a Cube op over fractal layouts; here
is what it means.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..database import register
from ..dtypes import ANY_FLOAT, FLOATS
from ..errors import AttrError, ShapeMismatch
from ..schema import ArgSpec, Attr, OpSchema, SampleCase, Shape
from .matmul import TOLERANCES

AUTO_PADS = ("NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID")
DIMS = {1: ("L",), 2: ("H", "W")}          # spatial dims by rank
PADS = {1: "begin, end", 2: "top, left, bottom, right"}


@dataclass(frozen=True)
class ConvGeometry:
    pads: tuple[int, ...]       # ONNX order: the begin of each spatial dim, then each end
    strides: tuple[int, ...]
    dilations: tuple[int, ...]
    out: tuple[int, ...]        # output spatial dims


def _per_dim(attrs: dict, name: str, default: int, rank: int) -> tuple[int, ...]:
    value = attrs[name]
    if value is None:
        return (default,) * rank
    if len(value) != rank or any(v < 1 for v in value):
        raise AttrError(f"Conv: {name} must be {rank} positive int(s) ({', '.join(DIMS[rank])}) "
                        f"for a {rank}-D convolution, got {list(value)}")
    return tuple(int(v) for v in value)


def _pads(attrs: dict, spatial, extent, strides) -> tuple[int, ...]:
    rank = len(spatial)
    mode = attrs["auto_pad"]
    if mode not in AUTO_PADS:
        raise AttrError(f"Conv: auto_pad={mode!r} is not allowed (allowed: {', '.join(AUTO_PADS)})")
    if mode == "NOTSET":
        pads = attrs["pads"] or (0,) * (2 * rank)
        if len(pads) != 2 * rank or any(p < 0 for p in pads):
            raise AttrError(f"Conv: pads must be {2 * rank} non-negative ints ({PADS[rank]}) for "
                            f"a {rank}-D convolution, got {list(pads)}")
        return tuple(int(p) for p in pads)
    if attrs["pads"] is not None and any(attrs["pads"]):
        raise AttrError(f"Conv: pads {list(attrs['pads'])} and auto_pad={mode} exclude each other")
    if mode == "VALID":
        return (0,) * (2 * rank)
    begin, end = [], []
    for size, e, s in zip(spatial, extent, strides):
        total = max(0, (-(-size // s) - 1) * s + e - size)   # output = ceil(size / stride)
        small = total // 2
        begin.append(small if mode == "SAME_UPPER" else total - small)
        end.append(total - begin[-1])
    return tuple(begin + end)


def conv_geometry(x: tuple, w: tuple, attrs: dict) -> ConvGeometry:
    """Check a 1-D or 2-D convolution and give its padding and output size."""
    if len(x) - 2 not in DIMS or len(w) != len(x):
        raise ShapeMismatch(f"Conv: 1-D or 2-D only: x must be (N, C, L) or (N, C, H, W) and w "
                            f"(M, C/group, kL) or (M, C/group, kH, kW), of the same rank; got "
                            f"shapes {x} and {w}")
    rank = len(x) - 2
    group = attrs["group"]
    if group < 1 or x[1] % group or w[0] % group or w[1] * group != x[1]:
        raise ShapeMismatch(f"Conv: x has {x[1]} channels, w {w} expects {w[1]} per group and "
                            f"group={group}: channels must equal w.shape[1] * group and both "
                            f"channel counts divide by group")
    kernel = tuple(w[2:])
    if attrs["kernel_shape"] is not None and tuple(attrs["kernel_shape"]) != kernel:
        raise AttrError(f"Conv: kernel_shape {list(attrs['kernel_shape'])} differs from w's "
                        f"spatial dims {list(kernel)}")
    strides = _per_dim(attrs, "strides", 1, rank)
    dilations = _per_dim(attrs, "dilations", 1, rank)
    extent = tuple((k - 1) * d + 1 for k, d in zip(kernel, dilations))
    pads = _pads(attrs, x[2:], extent, strides)
    out = []
    for size, lo, hi, e, s in zip(x[2:], pads[:rank], pads[rank:], extent, strides):
        if size + lo + hi < e:
            raise ShapeMismatch(f"Conv: the dilated kernel spans {e} but the padded input is only "
                                f"{size + lo + hi} ({x} with pads {list(pads)})")
        out.append((size + lo + hi - e) // s + 1)
    return ConvGeometry(pads, strides, dilations, tuple(out))


def _infer_conv(schema: OpSchema, specs: list[ArgSpec], attrs: dict) -> list[ArgSpec]:
    x, w, b = (specs + [None])[:3]
    assert x is not None and w is not None      # required inputs: check() saw them
    geo = conv_geometry(x.shape, w.shape, attrs)
    if b is not None and b.shape != (w.shape[0],):
        raise ShapeMismatch(f"Conv: bias must have shape ({w.shape[0]},), one per output "
                            f"channel, got {b.shape}")
    return [ArgSpec((x.shape[0], w.shape[0]) + geo.out, x.dtype)]


def _conv(x, w, b=None, **attrs):
    geo = conv_geometry(x.shape, w.shape, attrs)
    rank = x.ndim - 2
    n, g = x.shape[0], attrs["group"]
    m, cg, *kernel = w.shape
    xp = np.pad(x, ((0, 0), (0, 0)) + tuple(zip(geo.pads[:rank], geo.pads[rank:])))
    extent = tuple((k - 1) * d + 1 for k, d in zip(kernel, geo.dilations))
    windows = np.lib.stride_tricks.sliding_window_view(xp, extent, axis=tuple(range(2, 2 + rank)))
    # windows: (n, c, *positions, *extent): every stride-th position, every dilation-th tap
    every = (slice(None),) * 2
    windows = windows[every + tuple(slice(None, None, s) for s in geo.strides)
                      + tuple(slice(None, None, d) for d in geo.dilations)]
    windows = windows[every + tuple(slice(0, o) for o in geo.out)]
    windows = windows.reshape(n, g, cg, *geo.out, *kernel)
    pos, tap = "hw"[:rank], "ij"[:rank]
    y = np.einsum(f"ngc{pos}{tap},gmc{tap}->ngm{pos}", windows,
                  w.reshape(g, m // g, cg, *kernel), optimize=True).reshape(n, m, *geo.out)
    return y if b is None else y + b.reshape(1, m, *(1,) * rank)


def case(note: str, x: Shape, w: Shape, bias: bool = True, **attrs: Any) -> SampleCase:
    return SampleCase(note, (x, w, (w[0],)) if bias else (x, w), attrs)


CASES = [
    case("one element", (1, 1, 1, 1), (1, 1, 1, 1)),
    case("3x3, pads 1", (2, 3, 8, 8), (4, 3, 3, 3), pads=[1, 1, 1, 1]),
    case("stride 2, asymmetric pads", (1, 1, 7, 5), (1, 1, 3, 3), pads=[1, 0, 1, 0],
         strides=[2, 2]),
    case("auto_pad SAME_UPPER, stride 2", (1, 2, 5, 5), (3, 2, 3, 3), auto_pad="SAME_UPPER",
         strides=[2, 2]),
    case("auto_pad SAME_LOWER, even kernel", (1, 2, 6, 6), (2, 2, 2, 2), auto_pad="SAME_LOWER"),
    case("auto_pad VALID", (1, 2, 6, 5), (2, 2, 3, 3), auto_pad="VALID"),
    case("dilation 2", (1, 3, 9, 9), (2, 3, 3, 3), dilations=[2, 2], pads=[1, 1, 1, 1]),
    case("2 groups", (2, 4, 6, 5), (6, 2, 3, 2), group=2),
    case("depthwise", (1, 8, 10, 10), (8, 1, 3, 3), group=8, pads=[1, 1, 1, 1]),
    case("no bias", (2, 3, 6, 5), (4, 3, 3, 2), bias=False),
    case("1x1: a matmul over channels", (1, 16, 7, 7), (8, 16, 1, 1)),
    case("width 7: row bytes not a multiple of 32", (1, 4, 5, 7), (4, 4, 3, 3)),
    case("batch of size 0", (0, 3, 5, 5), (2, 3, 3, 3)),
    case("large: a ResNet 3x3 layer", (1, 32, 28, 28), (32, 32, 3, 3), pads=[1, 1, 1, 1]),
    case("1-D: one element", (1, 1, 1), (1, 1, 1)),
    case("1-D: kernel 3, pads 1", (2, 3, 16), (4, 3, 3), pads=[1, 1]),
    case("1-D: stride 2, dilation 2, asymmetric pads", (1, 2, 17), (3, 2, 3), strides=[2],
         dilations=[2], pads=[2, 1]),
    case("1-D: auto_pad SAME_UPPER, even kernel, stride 2", (1, 2, 9), (2, 2, 4),
         auto_pad="SAME_UPPER", strides=[2]),
    case("1-D: depthwise, no bias", (2, 4, 10), (4, 1, 3), bias=False, group=4),
    case("1-D: batch of size 0", (0, 3, 8), (2, 3, 3)),
    case("1-D large: a speech-model layer", (1, 32, 100), (32, 32, 5), pads=[2, 2]),
]

register(OpSchema(
    name="Conv", tier="B", family="conv", inputs=("x", "w", "b"), dtypes=FLOATS,
    reference_fn=_conv, infer_fn=_infer_conv, optional=1, constraints={"T": ANY_FLOAT},
    attrs={"auto_pad": Attr(str, "NOTSET", "NOTSET (use pads), SAME_UPPER, SAME_LOWER, VALID"),
           "dilations": Attr(list, None, "(dH, dW), or (dL) in 1-D; default 1"),
           "group": Attr(int, 1, "channel groups (C for depthwise)"),
           "kernel_shape": Attr(list, None, "(kH, kW) or (kL); must match w when given"),
           "pads": Attr(list, None, "(top, left, bottom, right), or (begin, end) in 1-D; "
                                    "default 0"),
           "strides": Attr(list, None, "(sH, sW), or (sL) in 1-D; default 1")},
    samples=CASES, input_range=(-1.0, 1.0), tolerances=TOLERANCES,
    doc="y = conv(x, w) + b on NCHW (2-D) or NCL (1-D), ONNX Conv"))
