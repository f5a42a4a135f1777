"""Native Expand and Tile on the row-move template. Expand reads a broadcast dim with a step of
0 (rows read once and repeated in UB; a broadcast last dim is a row map picking element 0);
Tile wraps each output coordinate into its input dim (c mod d)."""

from __future__ import annotations

from .row_move import DimMap, Part, grid_part, register_moves


def expand_parts(ins: list, outs: list, attrs: dict) -> list[Part]:
    x, out = ins[0], outs[0]
    lead = len(out.shape) - len(x.shape)
    strides, maps = [], []
    for i, size in enumerate(out.shape):
        k = i - lead
        wide = k < 0 or (x.shape[k] == 1 and size != 1)
        strides.append(1 if k < 0 else x.strides[k])
        maps.append(DimMap(0, 0 if wide else 1, "affine", 1 if k < 0 else x.shape[k]))
    return [grid_part(0, len(ins), out.shape, tuple(strides), out.strides, tuple(maps),
                      src_last=x.shape[-1] if x.shape else 1)]


def tile_parts(ins: list, outs: list, attrs: dict) -> list[Part]:
    x, out = ins[0], outs[0]
    repeats = ins[1].value
    maps = tuple(DimMap(0, 1, "wrap" if r > 1 else "affine", d)
                 for d, r in zip(x.shape, repeats))
    return [grid_part(0, len(ins), out.shape, x.strides, out.strides, maps,
                      src_last=x.shape[-1] if x.shape else 1)]


register_moves("Expand", expand_parts)
register_moves("Tile", tile_parts)
