"""Native Gather, GatherND and GatherElements on the row-move template.

- Gather along an axis with elements after it, and GatherND: each output row is one source row
  (an embedding lookup: a row of the table per index). Per tile the index window is read into
  UB and, after an MTE2 -> S flag, by the scalar unit (a negative index counts from the end);
  rows evenly spaced in the table still go in one strided DataCopyPad. An index out of range
  reads outside the table: the chip's "aicore memory out of bound".
- Gather along the last axis: every row picks the same elements, so the indices become the
  offset table of a row map once per core (vector arithmetic: the low word of an int64, a
  negative index plus the dim, times the element size) and the vector Gather picks them.
- GatherElements: every output element has its own index, so each tile's index rows become
  Gather offsets into the tile's source rows (the last axis indexed) or into the slab of the
  indexed axis and the dims after it, which the tile's rows share (an earlier axis).
The vector Gather takes 16- and 32-bit lanes: 8-byte data takes the row path only.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..ascend import lang as asc
from ..ascend.chips import ChipSpec
from ..hixl.dtypes import to_numpy
from ..hixl.schema import normalize_axis
from ..intmath import round_up
from ..nixl import KernelContext, KernelEntry, LaunchPlan, register_kernel
from ..nixl.tuning import DoesNotFit, TuningConfig
from .row_move import (
    MOVE_DTYPES,
    TUNING_SPACE,
    Axis,
    DimMap,
    Part,
    RowMoveKernel,
    RowMoveTiling,
    Tile,
    make_kernel,
    plan,
)
from .version import BUILT_FOR_RUNTIME

# UB for a tile's index window when the indices do not fit whole ([U]: a budget, not a fact).
INDEX_WINDOW_BYTES = 16 * 1024


# ---------------------------------------------------------------- index arithmetic in UB

def as_int32(dst: asc.LocalTensor, src: asc.LocalTensor, count: int) -> asc.LocalTensor:
    """`count` indices as int32: an int64's low word (GatherMask of the even words), an int32
    as it is."""
    if src.itemsize == 4:
        return src
    asc.gather_mask(dst, src.reinterpret(np.int32), 1, 2 * count)
    return dst


def byte_offsets(dst: asc.LocalTensor, idx: asc.LocalTensor, flt: asc.LocalTensor, size: int,
                 scale: int, count: int) -> None:
    """dst = (idx + size where idx < 0) x scale, int32, for |idx| below 2^24. In float32 a
    negative index's flag is min(-min(idx, 0), 1)."""
    asc.cast(flt, idx, asc.RoundMode.CAST_NONE, count)
    asc.mins(flt, flt, 0.0, count)
    asc.muls(flt, flt, -1.0, count)
    asc.mins(flt, flt, 1.0, count)
    asc.muls(flt, flt, float(size), count)
    wrap = flt.reinterpret(np.int32)
    asc.cast(wrap, flt, asc.RoundMode.CAST_RINT, count)
    asc.add(dst, idx, wrap, count)
    asc.muls(dst, dst, scale, count)


# ---------------------------------------------------------------- rows found through indices

@dataclass(frozen=True)
class Lookup:
    """Row r reads index tuple r mod `tuples` (`arity` values each, of the flattened index
    tensor); value t is wrapped into `extents[t]` and scaled by `strides[t]`; the row adds
    (r // `per_batch`) x `batch_stride`."""

    tuples: int
    arity: int
    strides: tuple[int, ...]
    extents: tuple[int, ...]
    per_batch: int
    batch_stride: int


@dataclass(frozen=True)
class LookupTiling(RowMoveTiling):
    lookup: Lookup | None = None
    window: int = 0                 # index entries the window holds


class RowLookupKernel(RowMoveKernel):
    """Gather (an axis with elements after it) and GatherND: row sources through an index
    window that the scalar unit reads, a copy per row (as a lookup kernel issues them; its
    modeled time then does not depend on which rows the indices pick, beyond alignment)."""

    merge_runs = False

    def init_extra(self) -> None:
        tiling = self.tiling
        assert isinstance(tiling, LookupTiling) and tiling.lookup is not None
        assert tiling.index_dtype is not None
        self.lookup = tiling.lookup
        self.idx_dtype = to_numpy(tiling.index_dtype)
        buf = asc.TBuf()
        self.pipe.init_buffer(buf, tiling.window * self.idx_dtype.itemsize)
        self.window = buf.get(self.idx_dtype)
        self.event = self.pipe.alloc_event_id(asc.HardEvent.MTE2_S)
        self.whole = self.lookup.tuples * self.lookup.arity <= tiling.window
        if self.whole:
            self._load(0, self.lookup.tuples)

    def _load(self, first: int, count: int) -> None:
        """Tuples first .. first + count - 1 (mod the tuple count) into the window: the part
        up to the end of the index tensor at 0, the wrapped part after it."""
        lk, isz = self.lookup, self.idx_dtype.itemsize
        assert self.tiling.index_arg is not None
        indices = self.gm[self.tiling.index_arg]
        head = min(count, lk.tuples - first)
        asc.data_copy_pad(self.window, indices[first * lk.arity],
                          asc.DataCopyExtParams(1, head * lk.arity * isz, 0, 0))
        self.first, self.wrapped_at = first, round_up(head * lk.arity,
                                                      self.ctx.chip.block_elems(isz))
        if count > head:
            asc.data_copy_pad(self.window[self.wrapped_at], indices[0],
                              asc.DataCopyExtParams(1, (count - head) * lk.arity * isz, 0, 0))
        asc.set_flag(asc.HardEvent.MTE2_S, self.event)
        asc.wait_flag(asc.HardEvent.MTE2_S, self.event)

    def sources(self, tile: Tile) -> np.ndarray:
        lk = self.lookup
        rows = np.arange(tile.row, tile.row + tile.rows, dtype=np.int64)
        tuples = rows % lk.tuples
        if not self.whole:
            self._load(int(tuples[0]), min(tile.rows, lk.tuples))
        offsets = tile.part.src_base + rows // lk.per_batch * lk.batch_stride
        for n, t in enumerate(tuples.tolist()):
            at = (t - self.first) * lk.arity if t >= self.first \
                else self.wrapped_at + t * lk.arity
            for v in range(lk.arity):
                i = int(self.window.get_value(at + v))
                offsets[n] += (i + lk.extents[v] if i < 0 else i) * lk.strides[v]
        return offsets


def lookup_plan(part: Part, lookup: Lookup, ins: list, outs: list, chip: ChipSpec,
                config: TuningConfig | None) -> LaunchPlan:
    """The row-move plan with an index window: all the indices when they fit the budget, else
    a tile's worth (and a block to start the wrapped piece on)."""
    idx = ins[1]
    isz = idx.itemsize
    whole = lookup.tuples * lookup.arity
    blk = chip.block_elems(isz)

    def entries(tile: int) -> int:
        if whole * isz <= INDEX_WINDOW_BYTES:
            return round_up(whole, blk)
        return round_up(tile * lookup.arity, blk) + round_up(tile * lookup.arity, blk)

    base = plan([part], outs[0].dtype, chip, config, index_arg=1, index_dtype=idx.dtype,
                index_bytes=lambda tile: entries(tile) * isz)
    tiling = LookupTiling(**vars(base.tiling), lookup=lookup, window=entries(base.tiling.tile))
    return LaunchPlan(base.block_dim, tiling, base.workspace_bytes)


# ---------------------------------------------------------------- Gather

def _gather_tiling(ins, outs, attrs, chip, config):
    data, indices = ins[0], ins[1]
    axis = normalize_axis("Gather", attrs["axis"], len(data.shape))
    outer = math.prod(data.shape[:axis])
    inner = math.prod(data.shape[axis + 1:])
    size = data.shape[axis]
    if axis == len(data.shape) - 1 and size:
        return _last_axis_plan(ins, outs, outer, size, chip, config)
    m = indices.size
    part = Part(0, 2, (Axis(outer * m, 0, inner),), inner if outer * m else 0)
    lookup = Lookup(max(m, 1), 1, (inner,), (size,), max(m, 1), size * inner)
    return lookup_plan(part, lookup, ins, outs, chip, config)


def _last_axis_plan(ins, outs, rows, size, chip, config):
    """Gather along the last axis: a row map whose offsets come from the indices."""
    indices = ins[1]
    if ins[0].itemsize not in (2, 4):
        raise DoesNotFit(f"Gather along the last axis of {ins[0].itemsize}-byte elements: "
                         f"the vector Gather takes 16- and 32-bit lanes")
    row = DimMap(0, 1, "index", size)
    part = Part(0, 2, (Axis(rows, size, indices.size),), indices.size, row_map=row)
    return plan([part], outs[0].dtype, chip, config, index_arg=1, index_dtype=indices.dtype,
                index_bytes=lambda tile: round_up(indices.size, 8) * 16)


class LastAxisGatherKernel(RowMoveKernel):
    """Gather along the last axis: the row map's offset table made from the indices."""

    def _offset_tables(self) -> dict:
        tiling = self.tiling
        part = tiling.parts[0]
        isz = self.dtype.itemsize
        per_row = tiling.dst_pitch
        assert tiling.index_arg is not None and tiling.index_dtype is not None
        assert part.row_map is not None             # the last axis is remapped
        idx_dtype = to_numpy(tiling.index_dtype)
        raw, words, flt, base, table = (asc.TBuf() for _ in range(5))
        self.pipe.init_buffer(raw, per_row * idx_dtype.itemsize)
        for buf in (words, flt, base):
            self.pipe.init_buffer(buf, per_row * 4)
        self.pipe.init_buffer(table, tiling.tile * per_row * 4)
        raw_t, words_t = raw.get(idx_dtype), words.get(np.int32)
        # The lanes past the indices read element 0: zeros first, the indices over them.
        zeros = raw_t.reinterpret(np.int32)
        asc.duplicate(zeros, 0, zeros.count)
        event = self.pipe.alloc_event_id(asc.HardEvent.V_MTE2)
        asc.set_flag(asc.HardEvent.V_MTE2, event)
        asc.wait_flag(asc.HardEvent.V_MTE2, event)
        asc.data_copy_pad(raw_t, self.gm[tiling.index_arg],
                          asc.DataCopyExtParams(1, part.width * idx_dtype.itemsize, 0, 0),
                          asc.DataCopyPadExtParams(True, 0, 0, 0))
        event = self.pipe.alloc_event_id(asc.HardEvent.MTE2_V)
        asc.set_flag(asc.HardEvent.MTE2_V, event)
        asc.wait_flag(asc.HardEvent.MTE2_V, event)
        idx = as_int32(words_t, raw_t, per_row)
        offsets = base.get(np.int32)
        byte_offsets(offsets, idx, flt.get(np.float32), part.row_map.extent, isz, per_row)
        t = table.get(np.int32)
        for r in range(tiling.tile):
            asc.adds(t[r * per_row], offsets, r * tiling.src_pitch * isz, per_row)
        return {part.row_map: t.reinterpret(np.uint32)}


# ---------------------------------------------------------------- GatherND

def _gather_nd_tiling(ins, outs, attrs, chip, config):
    data, indices = ins[0], ins[1]
    b = attrs["batch_dims"]
    k = indices.shape[-1]
    batch = math.prod(data.shape[:b])
    rows = math.prod(indices.shape[:-1])
    width = math.prod(data.shape[b + k:])
    per_batch = rows // batch if batch else 0
    part = Part(0, 2, (Axis(rows, 0, width),), width if rows else 0)
    lookup = Lookup(max(rows, 1), k, tuple(data.strides[b:b + k]), tuple(data.shape[b:b + k]),
                    max(per_batch, 1), math.prod(data.shape[b:]))
    return lookup_plan(part, lookup, ins, outs, chip, config)


# ---------------------------------------------------------------- GatherElements

@dataclass(frozen=True)
class ElementsTiling(RowMoveTiling):
    axis_stride: int = 1            # source elements per step of the indexed axis
    shared: bool = False            # rows share a slab (an earlier axis): + the lane
    extent: int = 0                 # the indexed dim


class ElementsKernel(RowMoveKernel):
    """GatherElements: each tile's index rows (a second input queue) become Gather offsets:
    ((index x axis stride) + the lane, in a shared slab) x itemsize, plus where the row's
    source sits in the input slot. Lanes past a row are clamped into the slot."""

    def init_extra(self) -> None:
        tiling = self.tiling
        assert isinstance(tiling, ElementsTiling) and tiling.index_dtype is not None
        self.idx_dtype = to_numpy(tiling.index_dtype)
        n = tiling.tile * tiling.dst_pitch
        self.idx_q = asc.TQue(asc.TPosition.VECIN)
        self.pipe.init_buffer(self.idx_q, tiling.config.buffers, n * self.idx_dtype.itemsize)
        self.words, self.offsets, self.lane = (self._scratch(n, np.int32) for _ in range(3))
        self.flt = self._scratch(n, np.float32)
        if tiling.shared:
            asc.create_vec_index(self.lane, 0, tiling.dst_pitch)
            asc.muls(self.lane, self.lane, self.dtype.itemsize, tiling.dst_pitch)

    def _offset_tables(self) -> dict:
        return {}                   # the offsets are made per tile, from its index rows

    def _scratch(self, n: int, dtype) -> asc.LocalTensor:
        buf = asc.TBuf()
        self.pipe.init_buffer(buf, n * 4)
        return buf.get(dtype)

    def copy_in(self, tile: Tile) -> None:
        """The tile's source rows (a slab its rows share is read once), then its index rows."""
        super().copy_in(tile)
        tiling = self.tiling
        isz = self.idx_dtype.itemsize
        idx = self.idx_q.alloc_tensor(self.idx_dtype)
        ub_gap = (tiling.dst_pitch * isz - round_up(tile.width * isz, 32)) // 32
        assert tiling.index_arg is not None
        asc.data_copy_pad(idx, self.gm[tiling.index_arg][tile.row * tile.width],
                          asc.DataCopyExtParams(tile.rows, tile.width * isz, 0, ub_gap))
        self.idx_q.enque(idx)

    def compute(self, tile: Tile) -> None:
        tiling = self.tiling
        assert isinstance(tiling, ElementsTiling)
        isz = self.dtype.itemsize
        x = self.in_q.deque()
        idx = self.idx_q.deque()
        y = self.out_q.alloc_tensor(self.dtype)
        pitch = tiling.dst_pitch
        n = tile.rows * pitch
        index = as_int32(self.words, idx, n)
        byte_offsets(self.offsets, index, self.flt, tiling.extent, tiling.axis_stride * isz, n)
        for run in self.in_runs:                # where each row's source sits in the slot
            for r in range(run.first, run.first + run.count):
                held = run.first if run.stride == 0 else r
                row = self.offsets[r * pitch]
                asc.adds(row, row, held * tiling.src_pitch * isz, pitch)
                if tiling.shared:
                    asc.add(row, row, self.lane, pitch)
        asc.maxs(self.offsets, self.offsets, 0, n)
        asc.mins(self.offsets, self.offsets, (self.pad_at - 1) * isz, n)
        asc.gather(y, x, self.offsets.reinterpret(np.uint32), 0, n)
        self.out_q.enque(y)
        self.idx_q.free_tensor(idx)
        self.in_q.free_tensor(x)


def _elements_tiling(ins, outs, attrs, chip, config):
    data, indices, out = ins[0], ins[1], outs[0]
    rank = len(data.shape)
    axis = normalize_axis("GatherElements", attrs["axis"], rank)
    if data.itemsize not in (2, 4):
        raise DoesNotFit(f"GatherElements of {data.itemsize}-byte elements: the vector Gather "
                         f"takes 16- and 32-bit lanes")
    if axis < rank - 2:
        raise DoesNotFit("GatherElements over an axis with more than one dim after it")
    width = out.shape[-1]
    lead = tuple(Axis(s, st, ot) for s, st, ot in zip(out.shape[:axis], data.strides[:axis],
                                                       out.strides[:axis]))
    if axis == rank - 1:            # output row r picks from data row r
        part = Part(0, 2, lead, width, row_map=DimMap(0, 1, "index", data.shape[-1]))
        stride, shared = 1, False
    else:                           # the rows along the axis share the slab data[lead]
        slab = data.shape[-2] * data.strides[-2]
        part = Part(0, 2, lead + (Axis(out.shape[axis], 0, width),), width,
                    row_map=DimMap(0, 1, "index", slab))
        stride, shared = data.strides[axis], True
    pitch = round_up(width, chip.block_elems(data.itemsize))
    buffers = (config or TuningConfig()).buffers
    base = plan([part], out.dtype, chip, config, index_arg=1, index_dtype=indices.dtype,
                index_bytes=lambda tile: tile * pitch * (indices.itemsize * buffers + 16))
    tiling = ElementsTiling(**vars(base.tiling), axis_stride=stride, shared=shared,
                            extent=data.shape[axis])
    return LaunchPlan(base.block_dim, tiling, base.workspace_bytes)


# ---------------------------------------------------------------- registration

def gather_kernel(ctx: KernelContext, *gm: asc.GlobalTensor) -> None:
    """Gather: rows through indices, or a row map made of them (the last axis)."""
    kernel_class = RowLookupKernel if isinstance(ctx.tiling, LookupTiling) \
        else LastAxisGatherKernel
    kernel_class(ctx, gm).process()


def _declines(in_descs, attrs) -> str | None:
    """An index into an empty dim is out of range whatever it is: the golden says so."""
    data, indices = in_descs[0], in_descs[1]
    if indices.size and 0 in data.shape:
        return "indices into an empty tensor are all out of range"
    return None


def _register(op: str, kernel, tiling) -> None:
    register_kernel(KernelEntry(op=op, kernel=kernel, tiling=tiling, dtypes=MOVE_DTYPES,
                                built_for_runtime=BUILT_FOR_RUNTIME, declines=_declines,
                                tuning_space=TUNING_SPACE))


_register("Gather", gather_kernel, _gather_tiling)
_register("GatherND", make_kernel("gathernd_kernel", RowLookupKernel), _gather_nd_tiling)
_register("GatherElements", make_kernel("gatherelements_kernel", ElementsKernel),
          _elements_tiling)
