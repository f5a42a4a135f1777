"""Native ScatterND (reduction "none") on the row-move template, in two forms.

- Out of place: the output is a copy of data with the update rows written. Each core owns a
  contiguous range of the output's cells (the slices one index tuple addresses): it copies
  those cells of data, then writes the updates that land in them, in the same MTE3 order.
- In place: launched with no output and its data input declared in place (a donated buffer,
  such as a KV cache: nixl.graph runs it so); the same owned cells, without the copy: only
  the update rows move, GM -> UB -> GM.

Before it writes anything, each core reads every index tuple (an index window in UB, read by
the scalar unit after an MTE2 -> S flag), checks it against data's dims as the golden does (an
index out of range is the golden's error, so a donated tensor is never half written) and keeps
the update rows whose cell it owns, in index order. No two cores write one cell (no race, no
SyncAll), and a core writes its rows in order: a repeated index keeps the last update, as the
golden says. Rows that land evenly spaced go in one strided copy, as the template's do; which
core writes how many rows depends on where the indices point, as it would on the chip.

Declined (the shim runs them): the combining reductions (add, mul, max, min read the old value:
a vector step this kernel does not have), indices with an empty last dim (each update is the
whole tensor), indices into an empty tensor (all out of range) and padded layouts.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..hixl.errors import index_out_of_range
from ..intmath import round_up
from ..nixl import LaunchPlan, register_kernel
from ..nixl.registry import KernelEntry
from .gather import INDEX_WINDOW_BYTES, Lookup, LookupTiling, RowLookupKernel
from .row_move import MOVE_DTYPES, TUNING_SPACE, Axis, Part, Tile, make_kernel, plan
from .tiling import split_units
from .version import BUILT_FOR_RUNTIME

DATA, UPDATES, OUT = 0, 2, 3          # kernel arguments: data, indices, updates[, output]


@dataclass(frozen=True)
class ScatterTiling(LookupTiling):
    """A lookup's tiling (the index tuples: arity k, data's first k dims and strides; the
    index entries one window load holds) and the output's cells."""

    cells: int = 0                  # the output's cells (slices an index tuple addresses),
                                    # `per_core` of them owned by each core


# ---------------------------------------------------------------- host tiling

def _scatter_tiling(ins, outs, attrs, chip, config):
    """Out of place (an output given): a copy part (data's cells) and a scatter part (the
    update rows); in place (no output): the scatter part into data. Cores split the cells; in
    place no more cores than update rows, since a core without updates has nothing to do."""
    data, indices = ins[0], ins[1]
    k = indices.shape[-1]
    n = math.prod(indices.shape[:-1])
    cells = math.prod(data.shape[:k])
    width = math.prod(data.shape[k:])
    dst = DATA if not outs else OUT
    parts = [Part(UPDATES, dst, (Axis(n, width, 0),), width)]
    if outs:
        parts.insert(0, Part(DATA, OUT, (Axis(cells, width, width),), width))
    isz = indices.itemsize
    window = round_up(min(n * k, INDEX_WINDOW_BYTES // isz), chip.block_elems(isz))
    base = plan(parts, data.dtype, chip, config, index_arg=1, index_dtype=indices.dtype,
                index_bytes=lambda tile: window * isz)
    most = base.tiling.config.block_dim or chip.aiv_cores
    block_dim, per_core = split_units(cells if width else 0, chip,
                                      most if outs else min(most, n))
    if not outs and not n:
        block_dim = 0
    lookup = Lookup(max(n, 1), k, tuple(data.strides[:k]), tuple(data.shape[:k]), max(n, 1), 0)
    tiling = ScatterTiling(**{**vars(base.tiling), "per_core": per_core}, lookup=lookup,
                           window=window, cells=cells)
    return LaunchPlan(block_dim, tiling, base.workspace_bytes)


# ---------------------------------------------------------------- the device kernel

class ScatterKernel(RowLookupKernel):
    """One core: its cells of data copied (out of place), then the update rows that land in
    them, found through the index window."""

    def init_extra(self) -> None:
        self.picked_rows = self.picked_offsets = np.zeros(0, np.int64)
        if any(p.src == UPDATES for p in self.tiling.parts):     # updates to write: indices
            super().init_extra()

    def process(self) -> None:
        tiling = self.tiling
        assert isinstance(tiling, ScatterTiling)
        lo = self.ctx.block_idx * tiling.per_core
        hi = min(lo + tiling.per_core, tiling.cells)
        scatter = next((p for p in tiling.parts if p.src == UPDATES), None)
        if scatter is not None:
            self.picked_rows, self.picked_offsets = self.owned_updates(lo, hi, scatter.width)
        for part in tiling.parts:
            if part is scatter:
                self.move(part, 0, len(self.picked_rows))
            else:
                self.move(part, lo, hi)

    def owned_updates(self, lo: int, hi: int, width: int) -> tuple[np.ndarray, np.ndarray]:
        """Every index tuple read and checked, in order, window by window; the update rows
        whose cell lies in [lo, hi) and their offsets in the output."""
        lk = self.lookup
        assert isinstance(self.tiling, ScatterTiling)
        per_load = self.tiling.window // lk.arity
        rows, offsets = [], []
        for first in range(0, lk.tuples, per_load):
            count = min(per_load, lk.tuples - first)
            if not self.whole:
                self._load(first, count)
            for t in range(first, first + count):
                at = (t - self.first) * lk.arity
                offset = 0
                for v, (size, stride) in enumerate(zip(lk.extents, lk.strides)):
                    i = int(self.window.get_value(at + v))
                    if not -size <= i < size:
                        raise index_out_of_range("ScatterND", i, size, f"dim {v}")
                    offset += (i + size if i < 0 else i) * stride
                if lo <= offset // width < hi:
                    rows.append(t)
                    offsets.append(offset)
        return np.array(rows, np.int64), np.array(offsets, np.int64)

    def sources(self, tile: Tile) -> np.ndarray:
        if tile.part.src != UPDATES:
            return tile.part.sources(tile.row, tile.rows)
        return self.picked_rows[tile.row:tile.row + tile.rows] * tile.part.width

    def destinations(self, tile: Tile) -> np.ndarray:
        if tile.part.src != UPDATES:
            return tile.part.destinations(tile.row, tile.rows)
        return self.picked_offsets[tile.row:tile.row + tile.rows]


# ---------------------------------------------------------------- registration

def _declines(in_descs, attrs) -> str | None:
    data, indices = in_descs[0], in_descs[1]
    reduction = attrs.get("reduction", "none")
    if reduction != "none":
        return (f"reduction {reduction!r} combines each update with the old value; the kernel "
                f"writes (reduction 'none') only")
    if indices.shape[-1] == 0:
        return "indices with an empty last dim: every update replaces the whole tensor"
    if indices.size and 0 in data.shape[:indices.shape[-1]]:
        return "indices into an empty tensor are all out of range"
    if data.is_padded:
        return f"data in a padded layout ({data.format.value})"
    return None


register_kernel(KernelEntry(
    op="ScatterND", kernel=make_kernel("scatternd_kernel", ScatterKernel),
    tiling=_scatter_tiling, dtypes=MOVE_DTYPES, built_for_runtime=BUILT_FOR_RUNTIME,
    declines=_declines, tuning_space=TUNING_SPACE))
