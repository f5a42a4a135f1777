"""Native ConvTranspose (1-D and 2-D) on the Cube: the convolution of its input dilated by its
strides with its kernel flipped, as the Conv kernel runs it (conv.py).

ConvTranspose scatters each input position through the kernel into the output, s positions
apart. The same sums come out of a stride-1 convolution of the input with s - 1 zeros
between its samples, padded by (k - 1) x dilation less the ConvTranspose's own pads (a
negative pad crops) and by output_padding at the end, with the kernel flipped and its
input/output channel dims swapped: the vector cores lay the dilated map out (zeroed first,
each input position's row of C0 placed s rows and s columns apart) and the flipped weights,
and the Cube runs the img2col product, so every output row comes out contiguous as NCHW.
The zeros cost s x s the multiply-adds of the direct scatter (and the profile shows it); a
col2im scatter-add would save them at the price of strided vector writes.
"""

from __future__ import annotations

from ..hixl.dtypes import FLOATS
from ..hixl.ops.conv_transpose import geometry as transpose_geometry
from ..nixl import KernelEntry, TensorDesc, register_kernel
from ..nixl.backend import KernelType
from .conv import conv_kernel, declines, launch_plan, relu_anchor
from .conv_tiling import ConvGeometry
from .fusion_provider import FUSION
from .matmul import TUNING_SPACE
from .version import BUILT_FOR_RUNTIME


def geometry(x: TensorDesc, w: TensorDesc, attrs: dict) -> ConvGeometry:
    """The stride-1 convolution over the dilated input that a ConvTranspose is."""
    geo = transpose_geometry(x.shape, w.shape, attrs)
    dims = [(1, 1, 1, 1, 0, 0, 0, 1)] if len(x.shape) == 3 else []
    for i, n in enumerate(x.shape[2:]):
        dims.append((n, geo.strides[i], geo.dilations[i], w.shape[2 + i], geo.begin[i],
                     geo.end[i], geo.output_padding[i], geo.out[i]))
    (h, sh, dh, kh, bh, eh, oh, ho), (wd, sw, dw, kw, bw, ew, ow, wo) = dims
    groups = attrs["group"]
    return ConvGeometry(
        x.shape[0], x.shape[1], (h - 1) * sh + 1, (wd - 1) * sw + 1, w.shape[1] * groups,
        groups, kh, kw, 1, 1, dh, dw, (kh - 1) * dh - bh, (kw - 1) * dw - bw,
        (kh - 1) * dh - eh + oh, (kw - 1) * dw - ew + ow, ho, wo, h, wd, sh, sw, flip=True)


def _plan(ins, outs, attrs, chip, config=None):
    return launch_plan(geometry(ins[0], ins[1], attrs), ins, chip, config, relu=False)


def _declines(descs: list, attrs: dict) -> str | None:
    x, w = descs[0], descs[1]
    return declines(geometry(x, w, attrs) if len(x.shape) in (3, 4) else None, descs)


register_kernel(KernelEntry(
    op="ConvTranspose", kernel=conv_kernel, tiling=_plan, dtypes=FLOATS,
    built_for_runtime=BUILT_FOR_RUNTIME, declines=_declines, kind=KernelType.MIX,
    tuning_space=TUNING_SPACE))
FUSION.add_anchor("ConvTranspose", relu_anchor("ConvTranspose", geometry))
