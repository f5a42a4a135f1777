"""Native MaxPool and AveragePool over (N, C, D1, ..., Dk): windows with strides, dilations,
explicit or automatic padding and ceil_mode; AveragePool's count_include_pad; MaxPool's
indices (the flat position of each maximum in x).

A window is separable: the kernel first pools each input row along the last dim, then combines
those pooled rows across the outer spatial dims. Along the last dim the window's elements are
strided (a stride of 2 reads every other element), which vector operands, aligned to 32-byte
blocks, cannot do element by element; so each row is spread one value per block (brcb), the
window's taps read those blocks at a block stride of the pooling stride, and a block reduction
packs one value per block back into a row. The padding is blocks of the pad value (-inf for
max, 0 for the average) around the spread row. Across the outer dims the window's taps are
whole rows: plain vector instructions, any stride. MaxPool keeps, beside each running maximum,
the index of its first occurrence in the window's row-major order (compare and select: a later
tap replaces it only when strictly greater), as ONNX's argmax does; the indices are computed in
float32 (exact below 2^24 elements) and widened to int64 in UB. AveragePool divides by the
window's real elements (or its explicitly padded ones): a row of per-column counts comes from
pooling a row of ones the same way, the outer count is the scalar unit's.

A unit is one (n, c) plane's band of output positions along the first spatial dim; the band's
input rows are one contiguous block of GM. Tiling data, host tiling, kernel class, entries.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..ascend import lang as asc
from ..ascend.chips import ChipSpec
from ..hixl.dtypes import FLOATS, to_numpy
from ..hixl.ops.window import pool_window
from ..intmath import ceil_div, round_up
from ..nixl import KernelContext, KernelEntry, LaunchPlan, TensorDesc, register_kernel
from ..nixl.tuning import DoesNotFit, TuningConfig, TuningSpace
from .axis_plan import padded_storage
from .tiling import Tiling, split_bands, ub_total
from .ub import chunks, convert, copy_rows
from .version import BUILT_FOR_RUNTIME

F32, I32, I64 = np.dtype(np.float32), np.dtype(np.int32), np.dtype(np.int64)
EXACT_INDEX = 2 ** 24            # float32 counts every integer below this exactly
TUNING_FIELDS = ("buffer_num", "tile_div", "block_dim")


# ---------------------------------------------------------------- tiling data

@dataclass(frozen=True)
class PoolTiling(Tiling):
    kind: str                    # "max" or "avg"
    dtype: str                   # storage dtype (the kernel computes in float32)
    planes: int                  # N * C independent (n, c) planes
    dims: tuple[int, ...]        # input spatial dims (a 1-D pool gets a leading dim of 1)
    out_dims: tuple[int, ...]    # output spatial dims
    kernel: tuple[int, ...]
    strides: tuple[int, ...]
    dilations: tuple[int, ...]
    begin: tuple[int, ...]       # explicit padding before each dim
    end: tuple[int, ...]         # ... and after it (ceil_mode's overhang is not padding)
    count_include_pad: bool
    indices: bool                # MaxPool's second output
    column_major: bool           # its storage_order=1: spatial positions numbered column major
    band: int                    # output positions of the first dim per unit
    rows_in: int                 # input rows a band reads, at most
    pitch: int                   # UB elements per input row
    out_pitch: int               # elements per pooled row: whole float32 repeats
    packed: int                  # outputs per spread row: a multiple of a widening repeat
    spread_blocks: int           # blocks of a spread row, its padding included
    per_core: int                # units per core
    config: TuningConfig

    @property
    def bands(self) -> int:
        return ceil_div(self.out_dims[0], self.band)

    @property
    def units(self) -> int:
        return self.planes * self.bands

    @property
    def width(self) -> int:
        return self.dims[-1]

    @property
    def out_width(self) -> int:
        return self.out_dims[-1]

    @property
    def inner_rows(self) -> int:
        """Input rows per position of the first dim."""
        return math.prod(self.dims[1:-1])

    @property
    def out_inner_rows(self) -> int:
        return math.prod(self.out_dims[1:-1])

    def taps(self, d: int, o: int) -> list[int]:
        """The input positions along dim d that output position o reads (padding left out)."""
        first = o * self.strides[d] - self.begin[d]
        return [i for i in range(first, first + self.kernel[d] * self.dilations[d],
                                 self.dilations[d]) if 0 <= i < self.dims[d]]

    def count(self, d: int, o: int) -> int:
        """The divisor's share of dim d: the window's real positions, or with
        count_include_pad its positions inside the explicit padding."""
        if not self.count_include_pad:
            return len(self.taps(d, o))
        first = o * self.strides[d] - self.begin[d]
        return sum(1 for i in range(first, first + self.kernel[d] * self.dilations[d],
                                    self.dilations[d])
                   if -self.begin[d] <= i < self.dims[d] + self.end[d])


# ---------------------------------------------------------------- host tiling

def plan(x: TensorDesc, attrs: dict, chip: ChipSpec, config: TuningConfig | None, kind: str,
         op: str) -> LaunchPlan:
    config = (config or TuningConfig()).only(TUNING_FIELDS, "the pool kernels")
    win = pool_window(op, x.shape, attrs, tuple(int(k) for k in attrs["kernel_shape"]))
    lead = (1,) if len(win.kernel) == 1 else ()
    zero = (0,) if lead else ()
    geometry: dict[str, Any] = dict(
        dims=lead + tuple(x.shape[2:]), out_dims=lead + win.out, kernel=lead + win.kernel,
        strides=lead + win.strides, dilations=lead + win.dilations, begin=zero + win.begin,
        end=zero + win.end)
    planes = x.shape[0] * x.shape[1]
    s_isz, blk = x.itemsize, chip.block_elems(F32.itemsize)
    per_rep = chip.repeat_bytes // chip.block_bytes
    width, out_width = geometry["dims"][-1], geometry["out_dims"][-1]
    sw, dw, kw = geometry["strides"][-1], geometry["dilations"][-1], geometry["kernel"][-1]
    if per_rep * sw > chip.max_repeat:
        raise DoesNotFit(f"a stride of {sw} along the last dim exceeds the repeat stride a "
                         f"vector instruction can take ({chip.max_repeat} blocks per repeat)")
    packed = round_up(out_width, chip.lanes(I32.itemsize) // 2)     # int64 per widening repeat
    geometry.update(
        pitch=round_up(width, max(chip.block_elems(s_isz), blk)),
        out_pitch=round_up(out_width, chip.lanes(F32.itemsize)), packed=packed,
        spread_blocks=max(geometry["begin"][-1] + round_up(width, blk),
                          (packed - 1) * sw + (kw - 1) * dw + 1))
    indices = kind == "max"
    if (1 + indices) * config.buffers > chip.event_ids_per_position:
        raise DoesNotFit(f"{1 + indices} output queues x {config.buffers} buffers need "
                         f"{(1 + indices) * config.buffers} event ids; VECOUT has "
                         f"{chip.event_ids_per_position} on {chip.name}")
    base: dict[str, Any] = dict(kind=kind, dtype=x.dtype, planes=planes, count_include_pad=bool(
        attrs.get("count_include_pad", 0)), indices=indices,
        column_major=bool(attrs.get("storage_order", 0)), config=config, **geometry)
    if planes == 0 or math.prod(geometry["out_dims"]) == 0:
        return LaunchPlan(0, PoolTiling(band=1, rows_in=0, per_core=0, **base))
    probe = PoolTiling(band=1, rows_in=0, per_core=0, **base)
    for d in range(len(probe.dims) - 1):
        if any(not probe.taps(d, o) for o in range(probe.out_dims[d])):
            raise DoesNotFit(f"a window along spatial dim {d} lies wholly in the padding")

    def rows_in(band: int) -> int:
        ext = (probe.kernel[0] - 1) * probe.dilations[0] + 1
        return min(probe.dims[0], (band - 1) * probe.strides[0] + ext) * probe.inner_rows

    band, block_dim, per_core = split_bands(
        planes, probe.out_dims[0], lambda b: _ub(probe, b, rows_in(b), s_isz, chip).total, chip,
        config, f"a {list(probe.dims)} plane")
    return LaunchPlan(block_dim, PoolTiling(band=band, rows_in=rows_in(band),
                                            per_core=per_core, **base))


@dataclass(frozen=True)
class _Ub:
    """Bytes of each UB buffer of a unit (queues per slot); `total` is what the plan sizes."""

    in_slot: int
    out_slot: int
    index_slot: int
    work: int
    pooled: int              # one pooled row per input row (values, and indices)
    spread: int              # one spread row (values, and the column of each block)
    taps: int                # the running window along the last dim, and a candidate
    row: int                 # a combined output row (values, indices) and a temporary
    mask: int
    total: int


def _ub(t: PoolTiling, band: int, rows_in: int, s_isz: int, chip: ChipSpec) -> _Ub:
    blk, f = chip.block_elems(F32.itemsize), F32.itemsize
    rows_out = band * t.out_inner_rows
    ways = 2 if t.indices else 1
    sizes = dict(
        in_slot=rows_in * t.pitch * s_isz,
        out_slot=rows_out * round_up(t.out_width, chip.block_elems(s_isz)) * s_isz,
        index_slot=rows_out * t.packed * I64.itemsize if t.indices else 0,
        work=rows_in * t.pitch * f if s_isz != f else 0,
        pooled=ways * rows_in * t.out_pitch * f,
        spread=ways * t.spread_blocks * blk * f,
        taps=2 * ways * t.packed * blk * f,
        row=3 * t.out_pitch * f,
        mask=max(t.packed * blk, t.out_pitch) // 8)
    return _Ub(**sizes, total=ub_total(sizes, ("in_slot", "out_slot", "index_slot"),
                                       t.config.buffers, chip))


# ---------------------------------------------------------------- the device kernel

class PoolQueues:
    """The UB plan of a pooling as queues and buffers (input rows, output rows and int64
    indices; the pooled, spread, tap and row buffers in float32), and the output
    conversions: values to the output type, float indices to int64."""

    def __init__(self, ctx: KernelContext, x: asc.GlobalTensor, y: asc.GlobalTensor,
                 indices: asc.GlobalTensor | None = None) -> None:
        """Init: the queues and buffers of the UB plan."""
        t: PoolTiling = ctx.tiling
        self.ctx, self.t, self.chip, self.x, self.y, self.idx_gm = ctx, t, ctx.chip, x, y, indices
        self.sdt = to_numpy(t.dtype)
        self.blk, self.lanes = self.chip.block_elems(F32.itemsize), self.chip.lanes(F32.itemsize)
        self.per_rep = self.chip.repeat_bytes // self.chip.block_bytes
        self.pad = -np.inf if t.kind == "max" else 0.0
        self.out_row = round_up(t.out_width, self.chip.block_elems(self.sdt.itemsize))
        ub = _ub(t, t.band, t.rows_in, self.sdt.itemsize, self.chip)
        self.pipe = asc.TPipe()
        self.in_q = self._queue(asc.TPosition.VECIN, ub.in_slot)
        self.out_q = self._queue(asc.TPosition.VECOUT, ub.out_slot)
        self.idx_q = self._queue(asc.TPosition.VECOUT, ub.index_slot) if t.indices else None
        self.work = self._buf(ub.work, F32) if ub.work else None
        ways = 2 if t.indices else 1
        pooled = self._buf(ub.pooled, F32)
        self.pooled = [pooled[w * t.rows_in * t.out_pitch] for w in range(ways)]
        spread = self._buf(ub.spread, F32)
        self.spread = [spread[w * t.spread_blocks * self.blk] for w in range(ways)]
        taps = self._buf(ub.taps, F32)
        self.taps = [taps[w * t.packed * self.blk] for w in range(2 * ways)]
        row = self._buf(ub.row, F32)
        self.row = [row[w * t.out_pitch] for w in range(3)]
        self.mask = self._buf(ub.mask, np.uint8)

    def _queue(self, position, nbytes):
        q = asc.TQue(position)
        self.pipe.init_buffer(q, self.t.config.buffers, nbytes)
        return q

    def _buf(self, nbytes, dtype):
        b = asc.TBuf()
        self.pipe.init_buffer(b, nbytes)
        return b.get(dtype)

    def emit(self, dst: asc.LocalTensor, value: asc.LocalTensor, count: int) -> None:
        """A float32 row of results in the output type."""
        if self.sdt == F32:
            asc.adds(dst, value, 0.0, count)
        else:
            asc.cast(dst, value, asc.RoundMode.CAST_RINT, count)

    def widen(self, dst: asc.LocalTensor, index: asc.LocalTensor) -> None:
        """Float indices (integers below 2^24) to int64 in UB: to int32, each spread over a
        block of its own (brcb), then four masked copies put value j at int32 lane 2j, whose
        neighbour (the high word) is 0."""
        t, per_rep = self.t, self.per_rep
        ints = self.row[2].reinterpret(I32)
        asc.cast(ints, index, asc.RoundMode.CAST_RINT, t.packed)
        spread = self.taps[1].reinterpret(I32)
        blk = self.chip.block_elems(I32.itemsize)
        for q0, n in chunks(t.packed // per_rep, self.chip.max_repeat, per_rep * I32.itemsize,
                            self.chip.block_bytes):
            asc.brcb(spread[q0 * per_rep * blk], ints[q0 * per_rep], n)
        words = dst.reinterpret(I32)
        asc.duplicate(words, 0, 2 * t.packed)
        lanes = self.chip.lanes(I32.itemsize)
        per_block = blk // 2                  # int64 values per 32-byte block
        step = asc.UnaryRepeatParams(1, per_block, per_rep, per_rep * per_block)
        for k in range(per_block):            # value 4b + k to lane 2k of block b
            mask = sum(1 << (2 * k + blk * b) for b in range(per_rep))
            for q0, n in chunks(2 * t.packed // lanes, self.chip.max_repeat,
                                lanes * I32.itemsize, self.chip.block_bytes):
                asc.adds(words[q0 * lanes], spread[(q0 * per_rep * per_block + k) * blk], 0,
                         [mask, 0], n, step)


class PoolKernel(PoolQueues):
    """One core's units: (plane, band of output positions along the first dim)."""

    def __init__(self, ctx: KernelContext, x: asc.GlobalTensor, y: asc.GlobalTensor,
                 indices: asc.GlobalTensor | None = None) -> None:
        """Init: the queues and buffers; the spread rows' padding, MaxPool's column of each
        spread block, AveragePool's reciprocal counts along the last dim."""
        super().__init__(ctx, x, y, indices)
        self.init_spread()

    def init_spread(self) -> None:
        t, blk = self.t, self.blk
        total = t.spread_blocks * blk
        if t.indices:                      # the column of each block, clipped into the row
            col = self.spread[1]
            for e in range(t.spread_blocks):
                asc.duplicate(col[e * blk], float(min(max(e - t.begin[-1], 0), t.width - 1)),
                              blk)
        if t.kind == "avg":
            self.recip = self.row[2]
            self.count_columns(total)
        asc.duplicate(self.spread[0], self.pad, total)

    def count_columns(self, total: int) -> None:
        """1 / (the window's counted positions) per output column: a row of ones (and of the
        explicit padding, with count_include_pad) pooled like the data."""
        t, blk, ones = self.t, self.blk, self.spread[0]
        begin, width = t.begin[-1], t.width
        asc.duplicate(ones, 0.0, total)
        lo, hi = (0, begin + width + t.end[-1]) if t.count_include_pad else (begin, begin + width)
        asc.duplicate(ones[lo * blk], 1.0, (min(hi, t.spread_blocks) - lo) * blk)
        self.pool_row(asc.add, self.recip, None)
        asc.reciprocal(self.recip, self.recip, t.out_pitch)

    # ---- the unit loop ----
    def process(self) -> None:
        t = self.t
        start = self.ctx.block_idx * t.per_core
        for u in range(start, min(start + t.per_core, t.units)):
            plane, band = divmod(u, t.bands)
            first = band * t.band
            last = min(first + t.band, t.out_dims[0])
            lo = max(0, first * t.strides[0] - t.begin[0])
            hi = min(t.dims[0], (last - 1) * t.strides[0] - t.begin[0]
                     + (t.kernel[0] - 1) * t.dilations[0] + 1)
            self.copy_in(plane, lo, hi)
            self.compute(plane, first, last, lo)
            self.copy_out(plane, first, last)

    def copy_in(self, plane: int, lo: int, hi: int) -> None:
        """The band's input rows, one contiguous block of GM; each row's last block padded
        with the pad value."""
        t = self.t
        rows = (hi - lo) * t.inner_rows
        slot = self.in_q.alloc_tensor(self.sdt)
        offset = (plane * math.prod(t.dims) + lo * t.inner_rows * t.width)
        copy_rows(slot, self.x[offset], rows, t.width, t.width, t.pitch, self.pad)
        self.in_q.enque(slot)
        self.rows = rows

    def compute(self, plane: int, first: int, last: int, lo: int) -> None:
        t = self.t
        slot = self.in_q.deque()
        rows = slot
        if self.work is not None:
            convert(self.work, slot, self.rows * t.pitch)
            rows = self.work
        for r in range(self.rows):
            self.spread_row(rows[r * t.pitch])
            self.pool_row(asc.max if t.kind == "max" else asc.add,
                          self.pooled[0][r * t.out_pitch],
                          self.pooled[1][r * t.out_pitch] if t.indices else None)
        self.in_q.free_tensor(slot)
        y = self.out_q.alloc_tensor(self.sdt)
        idx = self.idx_q.alloc_tensor(I64) if self.idx_q is not None else None
        outer = [range(first, last)] + [range(n) for n in t.out_dims[1:-1]]
        for q, o in enumerate(itertools.product(*outer)):
            value, index = self.combine_rows(o, lo)
            self.emit(y[q * self.out_row], value, count=t.out_width)
            if idx is not None:
                assert index is not None            # combine_rows keeps indices when asked
                asc.adds(index, index, float(plane * math.prod(t.dims)), t.out_pitch)
                self.widen(idx[q * t.packed], index)
        self.out_q.enque(y)
        if self.idx_q is not None and idx is not None:
            self.idx_q.enque(idx)

    def copy_out(self, plane: int, first: int, last: int) -> None:
        t = self.t
        rows = (last - first) * t.out_inner_rows
        offset = (plane * math.prod(t.out_dims) + first * t.out_inner_rows * t.out_width)
        y = self.out_q.deque()
        copy_rows(self.y[offset], y, rows, t.out_width, t.out_width, self.out_row)
        self.out_q.free_tensor(y)
        if self.idx_q is not None:
            assert self.idx_gm is not None          # the indices output exists
            idx = self.idx_q.deque()
            copy_rows(self.idx_gm[offset], idx, rows, t.out_width, t.out_width, t.packed)
            self.idx_q.free_tensor(idx)

    # ---- along the last dim ----
    def spread_row(self, row: asc.LocalTensor) -> None:
        """Value c of the row into block begin + c of the spread row (brcb, eight values per
        repeat); the padding blocks around it keep the pad value."""
        t, blk, per_rep = self.t, self.blk, self.per_rep
        base = self.spread[0][t.begin[-1] * blk]
        for q0, n in chunks(ceil_div(t.width, per_rep), self.chip.max_repeat,
                            per_rep * F32.itemsize, self.chip.block_bytes):
            asc.brcb(base[q0 * per_rep * blk], row[q0 * per_rep], n)

    def pool_row(self, combine: Callable[..., None], value: asc.LocalTensor,
                 index: asc.LocalTensor | None) -> None:
        """The window along the last dim, one output per block: tap k of output j reads spread
        block j * stride + k * dilation (a block stride of the pooling stride); with `index`,
        a tap replaces the running maximum's column only when strictly greater. Then one value
        per block packs into the pooled row."""
        t, blk, lanes = self.t, self.blk, self.lanes
        sw, dw = t.strides[-1], t.dilations[-1]
        acc, cand = self.taps[0], self.taps[1]
        count = t.packed * blk
        reps = count // lanes
        take = asc.UnaryRepeatParams(1, sw, self.per_rep, self.per_rep * sw)
        fold = asc.BinaryRepeatParams(1, 1, sw, self.per_rep, self.per_rep, self.per_rep * sw)
        for k in range(t.kernel[-1]):
            tap = k * dw * blk
            for q0, n in chunks(reps, self.chip.max_repeat, lanes * F32.itemsize,
                                self.chip.block_bytes):
                src = q0 * self.per_rep * sw * blk + tap
                if k == 0:
                    asc.adds(acc[q0 * lanes], self.spread[0][src], 0.0, lanes, n, take)
                    if index is not None:
                        asc.adds(self.taps[2][q0 * lanes], self.spread[1][src], 0.0, lanes, n,
                                 take)
                elif index is None:
                    combine(acc[q0 * lanes], acc[q0 * lanes], self.spread[0][src], lanes, n,
                            fold)
                else:
                    asc.adds(cand[q0 * lanes], self.spread[0][src], 0.0, lanes, n, take)
                    asc.adds(self.taps[3][q0 * lanes], self.spread[1][src], 0.0, lanes, n,
                             take)
            if k and index is not None:
                asc.compare(self.mask, cand, acc, asc.CmpMode.GT, count)
                asc.max(acc, acc, cand, count)
                asc.select(self.taps[2], self.mask, self.taps[3], self.taps[2], count)
        packing = [(acc, value)] + ([(self.taps[2], index)] if index is not None else [])
        for src, dst in packing:
            for q0, n in chunks(reps, self.chip.max_repeat, lanes * F32.itemsize,
                                self.chip.block_bytes):
                asc.block_reduce_max(dst[q0 * self.per_rep], src[q0 * lanes], lanes, n)

    # ---- across the outer dims ----
    def combine_rows(self, o: tuple, lo: int) -> tuple[asc.LocalTensor, asc.LocalTensor | None]:
        """Output row o: the pooled input rows its window reads, in row-major order, combined
        (a maximum keeps the first index that reaches it); the average divided by its count."""
        t = self.t
        value, index, tmp = self.row
        n = t.out_pitch
        positions = [t.taps(d, od) for d, od in enumerate(o)]
        strides = [math.prod(t.dims[d + 1:-1]) for d in range(len(o))]
        for k, at in enumerate(itertools.product(*positions)):
            flat = sum(i * s for i, s in zip(at, strides))
            r = flat - lo * t.inner_rows
            pooled = self.pooled[0][r * n]
            if k == 0:
                asc.adds(value, pooled, 0.0, n)
                if t.indices:
                    self.position(index, self.pooled[1][r * n], at, flat)
                continue
            if t.kind == "avg":
                asc.add(value, value, pooled, n)
                continue
            asc.compare(self.mask, pooled, value, asc.CmpMode.GT, n)
            asc.max(value, value, pooled, n)
            self.position(tmp, self.pooled[1][r * n], at, flat)
            asc.select(index, self.mask, tmp, index, n)
        if t.kind == "avg":
            asc.mul(value, value, self.recip, n)
            asc.muls(value, value, 1.0 / math.prod(t.count(d, od) for d, od in enumerate(o)), n)
        return value, (index if t.indices else None)

    def position(self, dst: asc.LocalTensor, columns: asc.LocalTensor, at: tuple,
                 flat: int) -> None:
        """dst = the position in the plane of each column of input row `at` (its outer
        indices; `flat` its row number): row major, or with storage_order=1 column major."""
        t, n = self.t, self.t.out_pitch
        if not t.column_major:
            asc.adds(dst, columns, float(flat * t.width), n)
            return
        outer = t.dims[:-1]
        asc.muls(dst, columns, float(math.prod(outer)), n)
        asc.adds(dst, dst, float(sum(i * math.prod(outer[:d]) for d, i in enumerate(at))), n)


def _max_pool_kernel(ctx: KernelContext, x, y, indices) -> None:
    PoolKernel(ctx, x, y, indices).process()


def _average_pool_kernel(ctx: KernelContext, x, y) -> None:
    PoolKernel(ctx, x, y).process()


_max_pool_kernel.__name__ = "max_pool_kernel"
_average_pool_kernel.__name__ = "average_pool_kernel"


# ---------------------------------------------------------------- registration

def _declines(op: str):
    def declines(in_descs, attrs) -> str | None:
        x = in_descs[0]
        if op == "MaxPool" and x.size >= EXACT_INDEX:
            return (f"MaxPool's indices are computed in float32, exact below {EXACT_INDEX} "
                    f"elements; x has {x.size}")
        return padded_storage(in_descs)
    return declines


def _tiling(op: str, kind: str):
    def tiling(ins, outs, attrs, chip, config):
        return plan(ins[0], attrs, chip, config, kind, op)
    return tiling


TUNING_SPACE = TuningSpace(buffer_num=(1, 2), tile_div=(1, 2), core_div=(1, 2))
for _op, _kind, _kernel in (("MaxPool", "max", _max_pool_kernel),
                            ("AveragePool", "avg", _average_pool_kernel)):
    register_kernel(KernelEntry(
        op=_op, kernel=_kernel, tiling=_tiling(_op, _kind), dtypes=FLOATS,
        built_for_runtime=BUILT_FOR_RUNTIME, declines=_declines(_op),
        tuning_space=TUNING_SPACE))
