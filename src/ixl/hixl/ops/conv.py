"""2-D convolution (tier B): ONNX Conv on NCHW with strides, pads / auto_pad, dilations, groups
and an optional bias. On the chip this is a Cube op over fractal layouts; here is what it means.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..database import register
from ..dtypes import ANY_FLOAT, FLOATS
from ..errors import AttrError, ShapeMismatch
from ..schema import ArgSpec, Attr, OpSchema, SampleCase
from .matmul import TOLERANCES

AUTO_PADS = ("NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID")


@dataclass(frozen=True)
class ConvGeometry:
    pads: tuple[int, int, int, int]     # top, left, bottom, right
    strides: tuple[int, int]
    dilations: tuple[int, int]
    out_hw: tuple[int, int]


def _pair(attrs: dict, name: str, default: int) -> tuple[int, int]:
    value = attrs[name]
    if value is None:
        return (default, default)
    if len(value) != 2 or any(v < 1 for v in value):
        raise AttrError(f"Conv: {name} must be two positive ints (H, W), got {list(value)}")
    return tuple(int(v) for v in value)


def _pads(attrs: dict, hw, kernel, strides) -> tuple[int, int, int, int]:
    mode = attrs["auto_pad"]
    if mode not in AUTO_PADS:
        raise AttrError(f"Conv: auto_pad={mode!r} is not allowed (allowed: {', '.join(AUTO_PADS)})")
    if mode == "NOTSET":
        pads = attrs["pads"] or (0, 0, 0, 0)
        if len(pads) != 4 or any(p < 0 for p in pads):
            raise AttrError(f"Conv: pads must be four non-negative ints (top, left, bottom, "
                            f"right), got {list(pads)}")
        return tuple(int(p) for p in pads)
    if attrs["pads"] is not None and any(attrs["pads"]):
        raise AttrError(f"Conv: pads {list(attrs['pads'])} and auto_pad={mode} exclude each other")
    if mode == "VALID":
        return (0, 0, 0, 0)
    begin, end = [], []
    for size, k, s in zip(hw, kernel, strides):
        total = max(0, (-(-size // s) - 1) * s + k - size)   # output = ceil(size / stride)
        small = total // 2
        begin.append(small if mode == "SAME_UPPER" else total - small)
        end.append(total - begin[-1])
    return (begin[0], begin[1], end[0], end[1])


def conv_geometry(x: tuple, w: tuple, attrs: dict) -> ConvGeometry:
    """Check a 2-D convolution and give its padding and output size."""
    if len(x) != 4 or len(w) != 4:
        raise ShapeMismatch(f"Conv: 2-D only: x must be (N, C, H, W) and w (M, C/group, kH, kW), "
                            f"got shapes {x} and {w}")
    group = attrs["group"]
    if group < 1 or x[1] % group or w[0] % group or w[1] * group != x[1]:
        raise ShapeMismatch(f"Conv: x has {x[1]} channels, w {w} expects {w[1]} per group and "
                            f"group={group}: channels must equal w.shape[1] * group and both "
                            f"channel counts divide by group")
    kernel = tuple(w[2:])
    if attrs["kernel_shape"] is not None and tuple(attrs["kernel_shape"]) != kernel:
        raise AttrError(f"Conv: kernel_shape {list(attrs['kernel_shape'])} differs from w's "
                        f"spatial dims {list(kernel)}")
    strides = _pair(attrs, "strides", 1)
    dilations = _pair(attrs, "dilations", 1)
    extent = tuple((k - 1) * d + 1 for k, d in zip(kernel, dilations))
    pads = _pads(attrs, x[2:], extent, strides)
    out = []
    for size, lo, hi, e, s in zip(x[2:], pads[:2], pads[2:], extent, strides):
        if size + lo + hi < e:
            raise ShapeMismatch(f"Conv: the dilated kernel spans {e} but the padded input is only "
                                f"{size + lo + hi} ({x} with pads {list(pads)})")
        out.append((size + lo + hi - e) // s + 1)
    return ConvGeometry(pads, strides, dilations, tuple(out))


def _infer_conv(schema: OpSchema, specs: list[ArgSpec], attrs: dict) -> list[ArgSpec]:
    x, w, b = (specs + [None])[:3]
    geo = conv_geometry(x.shape, w.shape, attrs)
    if b is not None and b.shape != (w.shape[0],):
        raise ShapeMismatch(f"Conv: bias must have shape ({w.shape[0]},), one per output "
                            f"channel, got {b.shape}")
    return [ArgSpec((x.shape[0], w.shape[0]) + geo.out_hw, x.dtype)]


def _conv(x, w, b=None, **attrs):
    geo = conv_geometry(x.shape, w.shape, attrs)
    (pt, pl, pb, pr), (sh, sw) = geo.pads, geo.strides
    (dh, dw), (oh, ow) = geo.dilations, geo.out_hw
    n, g = x.shape[0], attrs["group"]
    m, cg, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pt, pb), (pl, pr)))
    windows = np.lib.stride_tricks.sliding_window_view(
        xp, ((kh - 1) * dh + 1, (kw - 1) * dw + 1), axis=(2, 3))
    windows = windows[:, :, ::sh, ::sw, ::dh, ::dw][:, :, :oh, :ow]
    windows = windows.reshape(n, g, cg, oh, ow, kh, kw)
    y = np.einsum("ngchwij,gmcij->ngmhw", windows, w.reshape(g, m // g, cg, kh, kw),
                  optimize=True).reshape(n, m, oh, ow)
    return y if b is None else y + b.reshape(1, m, 1, 1)


def case(note, x, w, bias=True, **attrs) -> SampleCase:
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
]

register(OpSchema(
    name="Conv", tier="B", family="conv", inputs=("x", "w", "b"), dtypes=FLOATS,
    reference_fn=_conv, infer_fn=_infer_conv, optional=1, constraints={"T": ANY_FLOAT},
    attrs={"auto_pad": Attr(str, "NOTSET", "NOTSET (use pads), SAME_UPPER, SAME_LOWER, VALID"),
           "dilations": Attr(list, None, "(dH, dW), default 1"),
           "group": Attr(int, 1, "channel groups (C for depthwise)"),
           "kernel_shape": Attr(list, None, "(kH, kW); must match w when given"),
           "pads": Attr(list, None, "(top, left, bottom, right), default 0"),
           "strides": Attr(list, None, "(sH, sW), default 1")},
    samples=CASES, input_range=(-1.0, 1.0), tolerances=TOLERANCES,
    doc="y = conv2d(x, w) + b on NCHW, ONNX Conv"))
