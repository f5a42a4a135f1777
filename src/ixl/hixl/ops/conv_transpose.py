"""ConvTranspose (tier B): the gradient of Conv with respect to its input, as decoders and
segmentation heads upsample with it. Any number of spatial dims; strides, pads / auto_pad /
output_shape, output_padding, dilations, groups and an optional bias.

Each input position scatters its channels through the kernel into a window of the output that
starts at position * stride; the full result is then cropped by the pads (or, for an
output_shape larger than it, extended with zeros).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..database import register
from ..dtypes import ANY_FLOAT, FLOATS
from ..errors import AttrError, ShapeMismatch
from ..schema import ArgSpec, Attr, OpSchema, SampleCase, Shape
from .matmul import TOLERANCES
from .window import check_auto_pad, explicit_pads, ints, spatial


@dataclass(frozen=True)
class TransposeGeometry:
    strides: tuple[int, ...]
    dilations: tuple[int, ...]
    begin: tuple[int, ...]
    end: tuple[int, ...]
    output_padding: tuple[int, ...]
    out: tuple[int, ...]


def geometry(x: tuple, w: tuple, attrs: dict) -> TransposeGeometry:
    op = "ConvTranspose"
    dims = spatial(op, x)
    rank = len(dims)
    group = attrs["group"]
    if len(w) != len(x):
        raise ShapeMismatch(f"{op}: w must be (C, M/group, k1, ...) of the rank of x {x}, "
                            f"got {w}")
    if group < 1 or x[1] != w[0] or x[1] % group:
        raise ShapeMismatch(f"{op}: x has {x[1]} channels, w {w} expects {w[0]} and group="
                            f"{group}: w.shape[0] must equal the channels, which divide by group")
    kernel = tuple(w[2:])
    if attrs["kernel_shape"] is not None and tuple(attrs["kernel_shape"]) != kernel:
        raise AttrError(f"{op}: kernel_shape {list(attrs['kernel_shape'])} differs from w's "
                        f"spatial dims {list(kernel)}")
    strides = ints(op, attrs, "strides", rank, 1)
    dilations = ints(op, attrs, "dilations", rank, 1)
    extra = ints(op, attrs, "output_padding", rank, 0, low=0)
    if any(p >= max(s, d) for p, s, d in zip(extra, strides, dilations)):
        raise AttrError(f"{op}: output_padding {list(extra)} must be below the stride or the "
                        f"dilation of its dim ({list(strides)}, {list(dilations)})")
    full = tuple(s * (n - 1) + p + (k - 1) * d + 1
                 for n, s, p, k, d in zip(dims, strides, extra, kernel, dilations))
    mode = check_auto_pad(op, attrs)
    if attrs["output_shape"] is not None or mode in ("SAME_UPPER", "SAME_LOWER"):
        wanted = (tuple(int(v) for v in attrs["output_shape"][-rank:])
                  if attrs["output_shape"] is not None else tuple(n * s for n, s in
                                                                  zip(dims, strides)))
        if len(wanted) != rank:
            raise AttrError(f"{op}: output_shape {list(attrs['output_shape'])} must give the "
                            f"{rank} spatial dims")
        totals = [f - o for f, o in zip(full, wanted)]    # negative: zeros are added
        upper = mode == "SAME_UPPER"
        begin = tuple(t // 2 if upper else t - t // 2 for t in totals)
        end = tuple(t - b for t, b in zip(totals, begin))
    elif mode == "VALID":
        begin = end = (0,) * rank
    else:
        begin, end = explicit_pads(op, attrs, rank)
    out = tuple(f - b - e for f, b, e in zip(full, begin, end))
    if any(o < 0 for o in out):
        raise ShapeMismatch(f"{op}: pads {list(begin + end)} crop more than the {list(full)} "
                            f"output positions")
    return TransposeGeometry(strides, dilations, begin, end, extra, out)


def _infer(schema: OpSchema, specs: list[ArgSpec], attrs: dict) -> list[ArgSpec]:
    x, w, b = (specs + [None])[:3]
    assert x is not None and w is not None      # required inputs: check() saw them
    geo = geometry(x.shape, w.shape, attrs)
    m = w.shape[1] * attrs["group"]
    if b is not None and b.shape != (m,):
        raise ShapeMismatch(f"ConvTranspose: bias must have shape ({m},), one per output "
                            f"channel, got {b.shape}")
    return [ArgSpec((x.shape[0], m) + geo.out, x.dtype)]


def _conv_transpose(x, w, b=None, **attrs):
    geo = geometry(x.shape, w.shape, attrs)
    n, c = x.shape[:2]
    g = attrs["group"]
    cg, mg = c // g, w.shape[1]
    dims, kernel = x.shape[2:], w.shape[2:]
    full = tuple(s * (d - 1) + p + (k - 1) * dl + 1 for d, s, p, k, dl in
                 zip(dims, geo.strides, geo.output_padding, kernel, geo.dilations))
    y = np.zeros((n, g, mg) + full, np.result_type(x, w))
    xs = x.reshape((n, g, cg) + dims)
    ws = w.reshape((g, cg, mg) + kernel)
    for offset in itertools.product(*[range(k) for k in kernel]):
        # every input position's contribution through kernel tap `offset`
        part = np.einsum("ngc...,gcm->ngm...", xs, ws[(slice(None),) * 3 + offset])
        where = tuple(slice(o * d, o * d + s * (size - 1) + 1, s) for o, d, s, size in
                      zip(offset, geo.dilations, geo.strides, dims))
        y[(slice(None),) * 3 + where] += part
    y = y.reshape((n, g * mg) + full)
    grow = [(0, 0)] * 2 + [(max(-bg, 0), max(-e, 0)) for bg, e in zip(geo.begin, geo.end)]
    y = np.pad(y, grow)[(slice(None), slice(None)) + tuple(
        slice(max(bg, 0), max(bg, 0) + o) for bg, o in zip(geo.begin, geo.out))]
    return y if b is None else y + b.reshape((1, -1) + (1,) * len(dims))


def case(note: str, x: Shape, w: Shape, bias: bool = True, **attrs: Any) -> SampleCase:
    m = w[1] * attrs.get("group", 1)
    return SampleCase(note, (x, w, (m,)) if bias else (x, w), attrs)


CASES = [
    case("one element", (1, 1, 1, 1), (1, 1, 1, 1)),
    case("2x2 stride 2: a decoder's upsampling", (2, 4, 5, 5), (4, 3, 2, 2), strides=[2, 2]),
    case("3x3 stride 2, pads 1, output_padding 1", (1, 3, 4, 4), (3, 2, 3, 3), strides=[2, 2],
         pads=[1, 1, 1, 1], output_padding=[1, 1]),
    case("output_shape", (1, 2, 3, 3), (2, 2, 3, 3), strides=[3, 2], output_shape=[10, 8]),
    case("auto_pad SAME_UPPER", (1, 2, 3, 4), (2, 2, 3, 3), strides=[2, 2],
         auto_pad="SAME_UPPER"),
    case("dilations 2", (1, 2, 4, 4), (2, 3, 3, 3), dilations=[2, 2]),
    case("2 groups", (1, 4, 3, 3), (4, 2, 3, 3), group=2),
    case("1-D", (2, 3, 9), (3, 2, 4), strides=[2]),
    case("3-D", (1, 2, 3, 3, 3), (2, 2, 2, 2, 2), bias=False),
    case("width 7: rows not a multiple of 32 bytes", (1, 4, 5, 7), (4, 4, 3, 3)),
    case("batch of size 0", (0, 3, 4, 4), (3, 2, 3, 3)),
    case("large: a U-Net up step", (1, 64, 28, 28), (64, 32, 2, 2), strides=[2, 2]),
]

register(OpSchema(
    name="ConvTranspose", tier="B", family="conv", inputs=("x", "w", "b"), dtypes=FLOATS,
    reference_fn=_conv_transpose, infer_fn=_infer, optional=1, constraints={"T": ANY_FLOAT},
    attrs={"auto_pad": Attr(str, "NOTSET", "NOTSET (use pads), SAME_UPPER, SAME_LOWER, VALID"),
           "dilations": Attr(list, None, "one per spatial dim, default 1"),
           "group": Attr(int, 1, "channel groups"),
           "kernel_shape": Attr(list, None, "must match w's spatial dims when given"),
           "output_padding": Attr(list, None, "extra positions at the end, default 0"),
           "output_shape": Attr(list, None, "the spatial output dims (the pads follow)"),
           "pads": Attr(list, None, "crop: begins then ends, default 0"),
           "strides": Attr(list, None, "one per spatial dim, default 1")},
    samples=CASES, input_range=(-1.0, 1.0), tolerances=TOLERANCES,
    doc="y = the transposed convolution of x with w (C, M/group, k...) plus b, ONNX "
        "ConvTranspose"))
