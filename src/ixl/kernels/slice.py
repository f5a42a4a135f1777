"""Native Slice on the row-move template: each output dim maps to start + c * step of its
input dim. A step of 1 on the last dim keeps rows contiguous (strided DataCopyPads only); any
other step on the last dim (negative included) reads whole source rows and picks their
elements with the vector Gather."""

from __future__ import annotations

from ..hixl.ops.shape import slice_bounds
from .row_move import DimMap, Part, grid_part, register_moves


def _values(desc):
    return None if desc is None else list(desc.value)


def slice_parts(ins: list, outs: list, attrs: dict) -> list[Part]:
    data, out = ins[0], outs[0]
    given = [_values(d) for d in ins[1:]] + [None] * (5 - len(ins))
    bounds = slice_bounds(data.shape, *given[:4])
    maps = tuple(DimMap(b.indices(d)[0], b.indices(d)[2], "affine", d)
                 for b, d in zip(bounds, data.shape))
    return [grid_part(0, len(ins), out.shape, data.strides, out.strides, maps,
                      src_last=data.shape[-1] if data.shape else 0)]


register_moves("Slice", slice_parts)
