"""Native Pad on the row-move template: each padded dim maps output coordinate c to
c - pad_before, folded into the input dim by the mode (constant: the pad value; edge: clamped;
reflect: mirrored without the edge; wrap: modulo). Padded leading dims give pad rows (the pad
value spread in UB) or rows read from their folded source; a padded last dim is a row map:
the vector Gather picks each output element from the source row or the pad block."""

from __future__ import annotations

from ..hixl.ops.shape import pad_widths
from .row_move import DimMap, Part, grid_part, register_moves


def pad_parts(ins: list, outs: list, attrs: dict) -> list[Part]:
    data, out = ins[0], outs[0]
    axes = ins[3].value if len(ins) > 3 and ins[3] is not None else None
    widths = pad_widths(data.shape, list(ins[1].value), axes)
    mode = attrs["mode"]
    maps = tuple(DimMap(-lo, 1, "affine" if lo <= 0 and hi <= 0 else mode, d)
                 for d, (lo, hi) in zip(data.shape, widths))
    return [grid_part(0, len(ins), out.shape, data.strides, out.strides, maps,
                      src_last=data.shape[-1] if data.shape else 1)]


def _pad_value(ins, attrs):
    """The constant_value input (a scalar of the data's type), when given."""
    return 2 if attrs["mode"] == "constant" and len(ins) > 2 and ins[2] is not None else None


register_moves("Pad", pad_parts, pad_arg=_pad_value)
