"""Native Concat and Split on the row-move template: one part per input of a Concat (its rows
land at its offset along the axis of the output) and one per output of a Split (its rows come
from its offset along the axis of the input)."""

from __future__ import annotations

from ..hixl.schema import normalize_axis
from .row_move import DimMap, Part, grid_part, register_moves


def _identity(rank: int) -> tuple:
    return (DimMap(),) * rank


def concat_parts(ins: list, outs: list, attrs: dict) -> list[Part]:
    out = outs[0]
    axis = normalize_axis("Concat", attrs["axis"], len(out.shape))
    parts, offset = [], 0
    for k, x in enumerate(ins):
        parts.append(grid_part(k, len(ins), x.shape, x.strides, out.strides,
                               _identity(len(x.shape)), dst_base=offset * out.strides[axis]))
        offset += x.shape[axis]
    return parts


def split_parts(ins: list, outs: list, attrs: dict) -> list[Part]:
    x = ins[0]
    axis = normalize_axis("Split", attrs["axis"], len(x.shape))
    parts, offset = [], 0
    for k, out in enumerate(outs):
        parts.append(grid_part(0, len(ins) + k, out.shape, x.strides, out.strides,
                               _identity(len(x.shape)), src_base=offset * x.strides[axis]))
        offset += out.shape[axis]
    return parts


register_moves("Concat", concat_parts)
register_moves("Split", split_parts)
