"""Native Resize of the last two dims (the spatial dims of NCHW): nearest, linear and cubic,
every coordinate transformation mode but tf_crop_and_resize, exclude_outside, scales or sizes.

Resize is separable, and its source positions and weights depend on the shapes alone, so the
host tiling computes them per output index, as ONNX defines them (hixl.ops.resize), and the
kernel only gathers and weighs. Along the last dim the gather is element-granular, which vector
operands (aligned to 32-byte blocks) cannot do element by element: each input row is spread one
value per block (brcb), output columns that follow a period (P outputs for Q inputs: a scale of
P / Q) are gathered and weighted together, one vector instruction per tap reading blocks at a
block stride of Q and writing at a stride of P, and a block reduction packs one value per block
back into a row. Along the next dim the taps are whole rows: rows gathered from the tile and
weighted with scalar weights. A unit is one plane's band of output rows; the band's input rows
are one contiguous block of GM.

Tiling data, host tiling, kernel class, entries, as a vendor sample.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from ..ascend import lang as asc
from ..ascend.chips import ChipSpec
from ..hixl.dtypes import FLOATS, to_numpy
from ..hixl.ops import resize as golden
from ..intmath import ceil_div, round_up
from ..nixl import KernelContext, KernelEntry, LaunchPlan, TensorDesc, register_kernel
from ..nixl.tuning import DoesNotFit, TuningConfig, TuningSpace
from .axis_plan import padded_storage
from .tiling import Tiling, split_bands, ub_total
from .ub import chunks, convert, copy_rows
from .version import BUILT_FOR_RUNTIME

F32 = np.dtype(np.float32)
TUNING_FIELDS = ("buffer_num", "tile_div", "block_dim")
MOST_PERIOD = 64           # longest output period grouped into strided instructions


# ---------------------------------------------------------------- tiling data

@dataclass(frozen=True)
class Run:
    """Output columns first, first + step, ... (`count` of them) read input columns
    sources[t] + k * src_step with weight weights[t], for each tap t."""

    first: int
    count: int
    step: int
    src_step: int
    sources: tuple[int, ...]
    weights: tuple[float, ...]


@dataclass(frozen=True)
class ResizeTiling(Tiling):
    dtype: str
    planes: int                  # product of the dims before the last two
    height: int                  # input rows per plane
    width: int
    out_height: int
    out_width: int
    rows: tuple                  # per output row: ((input row, weight), ...); () = the row itself
    runs: tuple                  # Runs covering the output columns; () = the columns themselves
    band: int                    # output rows per unit
    rows_in: int                 # input rows a band reads, at most
    pitch: int                   # UB elements per input row
    out_pitch: int               # UB elements per resized row (float32 and storage aligned)
    spread_blocks: int           # blocks of a spread input row
    packed_blocks: int           # blocks of a gathered row: whole repeats
    per_core: int
    config: TuningConfig

    @property
    def bands(self) -> int:
        return ceil_div(self.out_height, self.band)

    @property
    def units(self) -> int:
        return self.planes * self.bands

    def input_rows(self, first: int, last: int) -> tuple[int, int]:
        """The input rows output rows [first, last) read: [lo, hi)."""
        if not self.rows:
            return first, last
        used = [i for taps in self.rows[first:last] for i, _ in taps]
        return min(used), max(used) + 1


# ---------------------------------------------------------------- host tiling

def axis_map(size: int, out: int, scale: float, roi: tuple, attrs: dict) -> tuple[np.ndarray,
             np.ndarray]:
    """(indices, weights) per output index of one axis, as the golden computes them: the
    source coordinates, their neighbours and weights, exclude_outside's renormalisation, the
    neighbours clamped into the axis."""
    x = golden.source_coordinates(attrs["coordinate_transformation_mode"], out, size, scale,
                                  roi)
    idx, weights = golden.neighbours(x, attrs)
    if attrs["exclude_outside"] and attrs["mode"] != "nearest":
        weights = np.where((idx < 0) | (idx >= size), 0.0, weights)
        total = weights.sum(axis=1, keepdims=True)
        weights = weights / np.where(total == 0, 1.0, total)
    return np.clip(idx, 0, size - 1), weights


def _taps(idx, weights) -> list[tuple]:
    """Per output index, its (source, weight) taps with a weight, same sources merged."""
    out = []
    for row_idx, row_w in zip(idx, weights):
        taps: dict[int, float] = {}
        for i, w in zip(row_idx.tolist(), row_w.tolist()):
            if w != 0.0:
                taps[i] = taps.get(i, 0.0) + w
        out.append(tuple(taps.items()) or ((int(row_idx[0]), 0.0),))
    return out


def column_runs(taps: list[tuple], period: int, src_step: int) -> tuple[Run, ...]:
    """Group output columns into runs: columns `period` apart whose taps read inputs
    `src_step` further on with the same weights (each phase of the period a run, broken
    where the edges clamp)."""
    runs = []
    n = len(taps)
    for phase in range(min(period, n)):
        k = phase
        while k < n:
            sources, weights = zip(*taps[k])
            count = 1
            while k + count * period < n:
                nxt = taps[k + count * period]
                if len(nxt) != len(sources) or any(
                        s + count * src_step != s2 or not math.isclose(w, w2, rel_tol=1e-12)
                        for (s2, w2), s, w in zip(nxt, sources, weights)):
                    break
                count += 1
            steps = (period, src_step) if count > 1 else (1, 1)   # one column: no stride
            runs.append(Run(k, count, *steps, sources, weights))
            k += count * period
    return tuple(runs)


def _period(size: int, out: int) -> tuple[int, int]:
    """(outputs, inputs) per period of a resize from `size` to `out`: the reduced ratio."""
    ratio = Fraction(out, size)
    if max(ratio.numerator, ratio.denominator) > MOST_PERIOD:
        return out, 0                # no short period: every column its own run
    return ratio.numerator, ratio.denominator


def plan(ins: list, out: TensorDesc, attrs: dict, chip: ChipSpec,
         config: TuningConfig | None) -> LaunchPlan:
    config = (config or TuningConfig()).only(TUNING_FIELDS, "the resize kernel")
    x, *given = (list(ins) + [None] * 3)[:4]
    if any(d is not None and d.size and d.value is None for d in given):
        raise DoesNotFit("the host tiling needs the contents of roi, scales and sizes")
    shape = tuple(x.shape)
    out_dims, scale, bounds = golden.plan(shape, attrs, *(
        None if d is None or d.size == 0 else np.asarray(d.value).reshape(-1).tolist()
        for d in given))
    lead = (1,) * max(0, 2 - len(shape))
    shape, dims = lead + shape, lead + tuple(out_dims)
    scale, bounds = [1.0] * len(lead) + scale, [(0.0, 1.0)] * len(lead) + bounds
    resized = [a for a in range(len(shape)) if not (   # (a dim of 1 to 1: every tap is 0)
        dims[a] == shape[a] and (scale[a] == 1.0 and bounds[a] == (0.0, 1.0) or dims[a] == 1))]
    if any(a < len(shape) - 2 for a in resized):
        raise DoesNotFit("the native Resize resizes the last two dims only")
    h, w, oh, ow = shape[-2], shape[-1], dims[-2], dims[-1]
    planes = math.prod(shape[:-2])
    if planes * oh * ow and not h * w:
        raise DoesNotFit("resizing an empty dim to a non-empty one runs on the shim")
    blk, s_isz = chip.block_elems(F32.itemsize), x.itemsize
    per_rep = chip.repeat_bytes // chip.block_bytes
    rows: tuple[tuple, ...] = ()
    runs: tuple[Run, ...] = ()
    if len(shape) - 2 in resized and h and oh:
        rows = tuple(_taps(*axis_map(h, oh, scale[-2], bounds[-2], attrs)))
    if len(shape) - 1 in resized and w and ow:
        period, src_step = _period(w, ow)
        runs = column_runs(_taps(*axis_map(w, ow, scale[-1], bounds[-1], attrs)), period,
                           src_step)
    step = max(chip.block_elems(s_isz), blk)
    base = dict(dtype=x.dtype, planes=planes, height=h, width=w, out_height=oh, out_width=ow,
                rows=rows, runs=runs, pitch=round_up(w, step),
                out_pitch=round_up(ow, max(chip.block_elems(s_isz), chip.lanes(F32.itemsize))),
                spread_blocks=round_up(w, per_rep), packed_blocks=round_up(ow, per_rep),
                config=config)
    if planes * oh * ow == 0:
        return LaunchPlan(0, ResizeTiling(band=1, rows_in=0, per_core=0, **base))
    probe = ResizeTiling(band=1, rows_in=0, per_core=0, **base)

    def rows_in(band: int) -> int:
        return max(hi - lo for lo, hi in (probe.input_rows(a, min(a + band, oh))
                                          for a in range(0, oh, band)))

    band, block_dim, per_core = split_bands(
        planes, oh, lambda b: _ub(probe, b, rows_in(b), s_isz, chip).total, chip, config,
        f"{ow} elements from rows of {w}")
    return LaunchPlan(block_dim, ResizeTiling(band=band, rows_in=rows_in(band),
                                              per_core=per_core, **base))


@dataclass(frozen=True)
class _Ub:
    in_slot: int
    out_slot: int
    work: int                # input rows in float32
    resized: int             # input rows resized along the last dim
    spread: int              # one input row spread one value per block
    gathered: int            # the gathered columns (one per block) and a tap's products
    row: int                 # an output row being weighed, and a tap's product
    total: int


def _ub(t: ResizeTiling, band: int, rows_in: int, s_isz: int, chip: ChipSpec) -> _Ub:
    blk, f = chip.block_elems(F32.itemsize), F32.itemsize
    sizes = dict(
        in_slot=rows_in * t.pitch * s_isz, out_slot=band * t.out_pitch * s_isz,
        work=rows_in * t.pitch * f if s_isz != f else 0,
        resized=rows_in * t.out_pitch * f if t.runs else 0,
        spread=t.spread_blocks * blk * f if t.runs else 0,
        gathered=2 * t.packed_blocks * blk * f if t.runs else 0,
        row=2 * t.out_pitch * f)
    return _Ub(**sizes, total=ub_total(sizes, ("in_slot", "out_slot"), t.config.buffers, chip))


# ---------------------------------------------------------------- the device kernel

class ResizeKernel:
    """One core's units: (plane, band of output rows)."""

    def __init__(self, ctx: KernelContext, x: asc.GlobalTensor, y: asc.GlobalTensor) -> None:
        t: ResizeTiling = ctx.tiling
        self.ctx, self.t, self.chip, self.x, self.y = ctx, t, ctx.chip, x, y
        self.sdt = to_numpy(t.dtype)
        self.blk, self.lanes = self.chip.block_elems(F32.itemsize), self.chip.lanes(F32.itemsize)
        self.per_rep = self.chip.repeat_bytes // self.chip.block_bytes
        ub = _ub(t, t.band, t.rows_in, self.sdt.itemsize, self.chip)
        self.pipe = asc.TPipe()
        self.in_q, self.out_q = asc.TQue(asc.TPosition.VECIN), asc.TQue(asc.TPosition.VECOUT)
        self.pipe.init_buffer(self.in_q, t.config.buffers, ub.in_slot)
        self.pipe.init_buffer(self.out_q, t.config.buffers, ub.out_slot)
        self.work = self._buf(ub.work)
        self.resized = self._buf(ub.resized)
        self.spread = self._buf(ub.spread)
        gathered = self._buf(ub.gathered)
        if gathered is not None:
            self.gathered, self.product = gathered, gathered[t.packed_blocks * self.blk]
        row = self._buf(ub.row)
        self.row, self.tmp = row, row[t.out_pitch]

    def _buf(self, nbytes: int):
        if not nbytes:
            return None
        b = asc.TBuf()
        self.pipe.init_buffer(b, nbytes)
        return b.get(F32)

    def process(self) -> None:
        t = self.t
        start = self.ctx.block_idx * t.per_core
        for u in range(start, min(start + t.per_core, t.units)):
            plane, band = divmod(u, t.bands)
            first = band * t.band
            last = min(first + t.band, t.out_height)
            lo, hi = t.input_rows(first, last)
            self.copy_in(plane, lo, hi)
            self.compute(first, last, lo, hi)
            self.copy_out(plane, first, last)

    def copy_in(self, plane: int, lo: int, hi: int) -> None:
        t = self.t
        slot = self.in_q.alloc_tensor(self.sdt)
        copy_rows(slot, self.x[(plane * t.height + lo) * t.width], hi - lo, t.width, t.width,
                  t.pitch)
        self.in_q.enque(slot)

    def compute(self, first: int, last: int, lo: int, hi: int) -> None:
        t = self.t
        slot = self.in_q.deque()
        rows, pitch = slot, t.pitch
        if self.work is not None:
            convert(self.work, slot, (hi - lo) * t.pitch)
            rows = self.work
        if t.runs:                              # along the last dim, each input row
            for r in range(hi - lo):
                self.resize_row(rows[r * t.pitch], self.resized[r * t.out_pitch])
            rows, pitch = self.resized, t.out_pitch
        y = self.out_q.alloc_tensor(self.sdt)
        for q, o in enumerate(range(first, last)):   # along the dim before, each output row
            taps = t.rows[o] if t.rows else ((o, 1.0),)
            self.weigh(y[q * t.out_pitch], rows, pitch, taps, lo)
        self.in_q.free_tensor(slot)
        self.out_q.enque(y)

    def copy_out(self, plane: int, first: int, last: int) -> None:
        t = self.t
        y = self.out_q.deque()
        copy_rows(self.y[(plane * t.out_height + first) * t.out_width], y, last - first,
                  t.out_width, t.out_width, t.out_pitch)
        self.out_q.free_tensor(y)

    # ---- along the last dim ----
    def resize_row(self, row: asc.LocalTensor, dst: asc.LocalTensor) -> None:
        """The row spread one value per block, each run's taps gathered at its block strides
        and weighed, one value per block packed into dst."""
        t, blk, per_rep = self.t, self.blk, self.per_rep
        for q0, n in chunks(t.spread_blocks // per_rep, self.chip.max_repeat,
                            per_rep * F32.itemsize, self.chip.block_bytes):
            asc.brcb(self.spread[q0 * per_rep * blk], row[q0 * per_rep], n)
        for run in t.runs:
            for k, (src, weight) in enumerate(zip(run.sources, run.weights)):
                if k == 0:
                    self.strided(asc.muls, self.gathered[run.first * blk],
                                 self.spread[src * blk], weight, run, run.step)
                    continue
                self.strided(asc.muls, self.product, self.spread[src * blk], weight, run, 1)
                self.accumulate(self.gathered[run.first * blk], self.product, run)
        for q0, n in chunks(t.packed_blocks // per_rep, self.chip.max_repeat,
                            self.lanes * F32.itemsize, self.chip.block_bytes):
            asc.block_reduce_max(dst[q0 * per_rep], self.gathered[q0 * self.lanes], self.lanes, n)

    def _pieces(self, run: Run, dst_step: int):
        """(first output of the piece, outputs, mask, repeats, whether a repeat holds a block
        per output of up to eight): eight outputs per repeat where the strides fit the
        repeat-stride fields, else one."""
        per_rep, most = self.per_rep, self.chip.max_repeat
        if per_rep * max(dst_step, run.src_step, 1) <= most:
            full, rest = divmod(run.count, per_rep)
            pieces = [(k0 * per_rep, min(most, full - k0) * per_rep, self.lanes,
                       min(most, full - k0), per_rep) for k0 in range(0, full, most)]
            if rest:
                pieces.append((full * per_rep, rest, rest * self.blk, 1, per_rep))
            return pieces
        return [(k0, min(most, run.count - k0), self.blk, min(most, run.count - k0), 1)
                for k0 in range(0, run.count, most)]

    def strided(self, instr: Callable[..., None], dst: asc.LocalTensor, src: asc.LocalTensor,
                weight: float, run: Run, dst_step: int) -> None:
        """dst block k * dst_step = weight * src block k * src_step, k < run.count."""
        blk = self.blk
        for k0, _, mask, reps, per in self._pieces(run, dst_step):
            params = asc.UnaryRepeatParams(dst_step, run.src_step, per * dst_step,
                                           per * run.src_step)
            instr(dst[k0 * dst_step * blk], src[k0 * run.src_step * blk], weight, mask, reps,
                  params)

    def accumulate(self, dst: asc.LocalTensor, product: asc.LocalTensor, run: Run) -> None:
        """dst block k * step += product block k."""
        blk, step = self.blk, run.step
        for k0, _, mask, reps, per in self._pieces(run, step):
            params = asc.BinaryRepeatParams(step, step, 1, per * step, per * step, per)
            asc.add(dst[k0 * step * blk], dst[k0 * step * blk], product[k0 * blk], mask, reps,
                    params)

    # ---- along the dim before ----
    def weigh(self, dst: asc.LocalTensor, rows: asc.LocalTensor, pitch: int, taps: tuple,
              lo: int) -> None:
        """dst (an output slot row) = the taps' rows, weighed and summed, in the storage
        dtype."""
        n = self.t.out_width
        acc = self.row
        for k, (i, weight) in enumerate(taps):
            src = rows[(i - lo) * pitch]
            if k == 0:
                asc.muls(acc, src, weight, n)
            else:
                asc.muls(self.tmp, src, weight, n)
                asc.add(acc, acc, self.tmp, n)
        if self.sdt == F32:
            asc.adds(dst, acc, 0.0, self.t.out_width)
        else:
            asc.cast(dst, acc, asc.RoundMode.CAST_RINT, self.t.out_width)


def resize_kernel(ctx: KernelContext, x: asc.GlobalTensor, *rest: asc.GlobalTensor) -> None:
    ResizeKernel(ctx, x, rest[-1]).process()


# ---------------------------------------------------------------- registration

def _declines(in_descs, attrs) -> str | None:
    if attrs["coordinate_transformation_mode"] == "tf_crop_and_resize":
        return "tf_crop_and_resize (an extrapolation value outside the roi) runs on the shim"
    return padded_storage(in_descs)


register_kernel(KernelEntry(
    op="Resize", kernel=resize_kernel,
    tiling=lambda ins, outs, attrs, chip, config: plan(ins, outs[0], attrs, chip, config),
    dtypes=FLOATS, built_for_runtime=BUILT_FOR_RUNTIME, declines=_declines,
    tuning_space=TuningSpace(buffer_num=(1, 2), tile_div=(1, 2), core_div=(1, 2))))
