"""Native BatchNormalization (inference), InstanceNormalization and GroupNormalization of
(N, C, D1, ...) tensors: per-channel scale and shift, with statistics over the channel (or its
group) for the last two.

Each channel's spatial dims form one contiguous row of P elements. A unit is one sample's
group of channel rows (GroupNormalization's C / num_groups channels, one channel for
InstanceNormalization, a chunk of channels for BatchNormalization), held in UB one row per
channel, rows padded to 32 bytes. Every channel's row ends as y = x a_c + b_c: the per-row
coefficients are spread one per block (brcb) and applied row by row with a block stride of 0.
BatchNormalization's coefficients (a = scale / sqrt(var + epsilon), b = bias - mean a) are
computed once per core for every channel; the normalisations first reduce the unit to its mean
and, centred, to its variance (float32, two passes over UB, so a mean far from zero costs no
accuracy), read both with the scalar unit, and scale their per-channel parameters by them.
A BatchNormalization row longer than UB splits into segments; a normalised group must fit in UB.

Tiling data, host tiling, kernel class, entries, as a vendor sample.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..ascend import lang as asc
from ..ascend.chips import ChipSpec
from ..hixl.dtypes import FLOATS, to_numpy
from ..intmath import ceil_div, round_up
from ..nixl import KernelContext, KernelEntry, LaunchPlan, TensorDesc, register_kernel
from ..nixl.tuning import DoesNotFit, TuningConfig, TuningSpace
from .axis_layout import rowwise
from .axis_plan import padded_storage
from .tiling import Tiling, largest_fit, split_units, ub_total
from .ub import chunks, convert, copy, copy_rows
from .version import BUILT_FOR_RUNTIME

F32 = np.dtype(np.float32)
TUNING_FIELDS = ("buffer_num", "tile_div", "block_dim")
PARAMS = {"batch": 4, "instance": 2, "group": 2}   # scale, bias (, mean, var)


# ---------------------------------------------------------------- tiling data

@dataclass(frozen=True)
class ChannelTiling(Tiling):
    kind: str                # "batch", "instance" or "group"
    dtype: str               # storage dtype (the kernel computes in float32)
    batch: int               # N
    channels: int            # C
    plane: int               # P: elements of one channel's spatial dims
    group: int               # channel rows per unit
    rows: int                # channel rows per tile (fewer than a group: the group streams)
    segment: int             # elements of a row per unit (P unless a BatchNorm row splits)
    pitch: int               # UB elements per row
    per_core: int            # units per core
    epsilon: float
    config: TuningConfig

    @property
    def groups(self) -> int:
        return ceil_div(self.channels, self.group)

    @property
    def segments(self) -> int:
        return ceil_div(self.plane, self.segment)

    @property
    def units(self) -> int:
        return self.batch * self.groups * self.segments

    @property
    def tile(self) -> int:
        """Elements of a tile."""
        return self.rows * self.pitch


# ---------------------------------------------------------------- host tiling

def plan(kind: str, x: TensorDesc, attrs: dict, chip: ChipSpec,
         config: TuningConfig | None) -> LaunchPlan:
    config = (config or TuningConfig()).only(TUNING_FIELDS, "the channel normalisation kernels")
    if config.buffers + 1 > chip.event_ids_per_position:     # the parameter queue's slot too
        raise DoesNotFit(f"the input queue's {config.buffers} buffers and the parameter "
                         f"queue's need {config.buffers + 1} event ids; VECIN has "
                         f"{chip.event_ids_per_position} on {chip.name}")
    n, c = x.shape[:2]
    plane = math.prod(x.shape[2:])
    step = max(chip.block_elems(x.itemsize), chip.block_elems(F32.itemsize))
    base: dict[str, Any] = dict(kind=kind, dtype=x.dtype, batch=n, channels=c, plane=plane,
                                epsilon=float(attrs["epsilon"]), config=config)

    def tiling(group: int, segment: int, rows: int | None = None, per_core: int = 0):
        return ChannelTiling(group=group, rows=rows or group, segment=segment,
                             pitch=round_up(segment, step), per_core=per_core, **base)

    def ub(group: int, segment: int, rows: int | None = None) -> int:
        return config.divisor * _ub(tiling(group, segment, rows), x.itemsize, chip).total

    if x.size == 0:
        return LaunchPlan(0, tiling(max(c, 1), max(plane, 1)))
    rows = None
    if kind == "batch":
        group, segment = _batch_shape(n, c, plane, ub, chip, config)
    else:
        group, segment = c // (attrs.get("num_groups") or c), plane
        if ub(group, segment) > chip.ub_bytes:          # the group streams, rows per tile
            rows = largest_fit(lambda k: ub(group, segment, k), chip.ub_bytes, group)
            if rows == 0:
                raise DoesNotFit(f"a channel row of {plane} elements does not fit in "
                                 f"{chip.ub_bytes} bytes of UB at {config.buffers} buffers")
    units = tiling(group, segment, rows).units
    block_dim, per_core = split_units(units, chip, config.block_dim)
    return LaunchPlan(block_dim, tiling(group, segment, rows, per_core))


def _batch_shape(n: int, c: int, plane: int, ub, chip: ChipSpec,
                 config: TuningConfig) -> tuple[int, int]:
    """BatchNormalization's (channels, row elements) per unit: whole rows when a chunk of eight
    channels fits (chunks start on a block of coefficients), else segments of a row; as many
    channels as fit, fewer when that leaves cores idle."""
    chunk = min(c, chip.block_elems(F32.itemsize))
    if ub(chunk, plane) <= chip.ub_bytes:
        most = largest_fit(lambda k: ub(min(c, k * chunk), plane), chip.ub_bytes,
                           ceil_div(c, chunk))
        share = ceil_div(c, ceil_div(config.cores(chip), n))      # channels per core's unit
        group = min(c, chunk * max(1, min(most, ceil_div(share, chunk))))
        return group, plane
    step = chip.block_elems(F32.itemsize) * 2
    segment = step * largest_fit(lambda k: ub(chunk, k * step), chip.ub_bytes,
                                 ceil_div(plane, step))
    if segment == 0:
        raise DoesNotFit(f"no segment of {chunk} channel rows fits in {chip.ub_bytes} bytes of UB")
    return chunk, segment


@dataclass(frozen=True)
class _Ub:
    in_slot: int
    out_slot: int
    param_slot: int
    work: int                # the tile in float32 (storage of another type)
    square: int              # the centred tile squared (normalisations)
    totals: int              # two vectors the sums fold through
    vectors: int             # per-channel float32 vectors: parameters, coefficients
    spread: int              # the coefficients one per block
    total: int


def _ub(t: ChannelTiling, s_isz: int, chip: ChipSpec) -> _Ub:
    lanes, blk, f = chip.lanes(F32.itemsize), chip.block_elems(F32.itemsize), F32.itemsize
    tile = round_up(t.tile, lanes)
    stats = t.kind != "batch"
    span = t.group if stats else t.channels          # channels of the per-channel vectors
    width = round_up(span, blk)
    sizes = dict(
        in_slot=tile * s_isz, out_slot=tile * s_isz,
        param_slot=round_up(span, chip.block_elems(s_isz)) * s_isz,
        work=tile * f if s_isz != f else 0, square=tile * f if stats else 0,
        totals=(2 * round_up(ceil_div(tile, lanes), lanes) + blk) * f if stats else 0,
        vectors=(PARAMS[t.kind] + 2) * width * f,
        spread=2 * round_up(t.group, blk) * chip.block_bytes)
    return _Ub(**sizes, total=ub_total(sizes, ("in_slot", "out_slot"), t.config.buffers, chip))


# ---------------------------------------------------------------- the device kernel

class ChannelNormQueues:
    """The UB plan of a channel normalisation as queues and buffers: input, output and
    parameter queues, the float32 work tiles, the sums the statistics fold through, the
    per-channel vectors and the spread coefficients."""

    def __init__(self, ctx: KernelContext, x: asc.GlobalTensor, params: list,
                 y: asc.GlobalTensor) -> None:
        """Init: queues and buffers (the UB plan of `_ub`), the scalar unit's events."""
        t: ChannelTiling = ctx.tiling
        self.ctx, self.t, self.chip, self.x, self.params, self.y = ctx, t, ctx.chip, x, params, y
        self.sdt = to_numpy(t.dtype)
        self.lanes, self.blk = self.chip.lanes(F32.itemsize), self.chip.block_elems(F32.itemsize)
        ub = _ub(t, self.sdt.itemsize, self.chip)
        self.pipe = asc.TPipe()
        self.in_q, self.out_q = asc.TQue(asc.TPosition.VECIN), asc.TQue(asc.TPosition.VECOUT)
        self.pipe.init_buffer(self.in_q, t.config.buffers, ub.in_slot)
        self.pipe.init_buffer(self.out_q, t.config.buffers, ub.out_slot)
        self.param_q = asc.TQue(asc.TPosition.VECIN)
        self.pipe.init_buffer(self.param_q, 1, ub.param_slot)
        self.work = self._buf(ub.work) if ub.work else None
        self.square = self._buf(ub.square) if ub.square else None
        if ub.totals:                  # two vectors the sums fold through, an accumulator
            totals = self._buf(ub.totals)
            half = (ub.totals // F32.itemsize - self.blk) // 2
            self.totals = (totals, totals[half])
            self.acc = totals[2 * half]
        width = ub.vectors // F32.itemsize // (PARAMS[t.kind] + 2)
        vectors = self._buf(ub.vectors)
        self.vectors = [vectors[k * width] for k in range(PARAMS[t.kind] + 2)]
        spread = self._buf(ub.spread)
        self.spread = (spread, spread[ub.spread // F32.itemsize // 2])
        self.to_scalar = self.pipe.alloc_event_id(asc.HardEvent.V_S)
        self.from_scalar = self.pipe.alloc_event_id(asc.HardEvent.S_V)

    def _buf(self, nbytes: int) -> asc.LocalTensor:
        b = asc.TBuf()
        self.pipe.init_buffer(b, nbytes)
        return b.get(F32)

    def load_vector(self, dst: asc.LocalTensor, src: asc.GlobalTensor, count: int) -> None:
        """`count` parameter values from GM into a float32 vector (through the param queue)."""
        slot = self.param_q.alloc_tensor(self.sdt)
        copy(slot, src, count)
        self.param_q.enque(slot)
        slot = self.param_q.deque()
        convert(dst, slot, count)
        self.param_q.free_tensor(slot)


class ChannelNormKernel(ChannelNormQueues):
    """One core's units: (sample, group of channels, segment of their rows)."""

    def __init__(self, ctx: KernelContext, x: asc.GlobalTensor, params: list,
                 y: asc.GlobalTensor) -> None:
        """Init: the queues and buffers; BatchNormalization's coefficients for every
        channel."""
        super().__init__(ctx, x, params, y)
        if self.t.kind == "batch":
            self.batch_coefficients()

    def batch_coefficients(self) -> None:
        """a = scale / sqrt(var + epsilon), b = bias - mean a, for every channel."""
        c = self.t.channels
        scale, bias, mean, var, a, b = self.vectors
        for dst, src in zip((scale, bias, mean, var), self.params):
            self.load_vector(dst, src, c)
        asc.adds(var, var, self.t.epsilon, c)
        asc.rsqrt(var, var, c)
        asc.mul(a, scale, var, c)
        asc.mul(mean, mean, a, c)
        asc.sub(b, bias, mean, c)

    # ---- the unit loop ----
    def process(self) -> None:
        t = self.t
        start = self.ctx.block_idx * t.per_core
        for u in range(start, min(start + t.per_core, t.units)):
            sample, rest = divmod(u, t.groups * t.segments)
            group, segment = divmod(rest, t.segments)
            c0, s0 = group * t.group, segment * t.segment
            rows, count = min(t.group, t.channels - c0), min(t.segment, t.plane - s0)
            offset = (sample * t.channels + c0) * t.plane + s0
            if t.kind == "batch":
                self.apply_unit(offset, rows, count, self.vectors[4][c0], self.vectors[5][c0])
            elif t.rows == t.group:
                self.resident_unit(offset, c0, rows, count)
            else:
                self.streamed_unit(offset, c0, rows, count)

    def resident_unit(self, offset: int, c0: int, rows: int, count: int) -> None:
        """The group in one tile: its mean, centred its variance, then y."""
        t = self.t
        x = self.load(offset, rows, count)
        size, n = rows * t.pitch, rows * count
        mean = self.scalar(self.total(x, size), 1.0 / n)
        asc.adds(x, x, -mean, size)
        self.zero_pads(x, rows, count)
        assert self.square is not None                    # planned for a variance
        asc.mul(self.square, x, x, size)
        inv = self.inv_std(self.total(self.square, size), rows, count)
        a, b = self.coefficients(c0, rows, inv)
        self.emit(offset, x, rows, count, a, b)

    def streamed_unit(self, offset: int, c0: int, rows: int, count: int) -> None:
        """A group longer than UB, tile by tile: a pass for its mean, a pass for its centred
        variance, a pass for y."""
        t = self.t
        tiles = [(r0, min(t.rows, rows - r0)) for r0 in range(0, rows, t.rows)]
        mean = self.scalar(self.accumulate(offset, tiles, count, None), 1.0 / (rows * count))
        inv = self.inv_std(self.accumulate(offset, tiles, count, mean), rows, count)
        for r0, k in tiles:
            a, b = self.coefficients(c0 + r0, k, inv, mean)
            x = self.load(offset + r0 * t.plane, k, count)
            self.emit(offset + r0 * t.plane, x, k, count, a, b)

    def accumulate(self, offset: int, tiles: list, count: int,
                   mean: float | None) -> asc.LocalTensor:
        """The group's sum over its tiles, or with `mean` its sum of squared deviations."""
        t = self.t
        asc.duplicate(self.acc, 0.0, self.blk)
        for r0, k in tiles:
            x = self.load(offset + r0 * t.plane, k, count)
            size = k * t.pitch
            if mean is not None:
                asc.adds(x, x, -mean, size)
                self.zero_pads(x, k, count)
                assert self.square is not None            # planned for a variance
                asc.mul(self.square, x, x, size)
                x = self.square
            asc.add(self.acc, self.acc, self.total(x, size), 1)
            self.in_q.free_tensor(self.slot)
        return self.acc

    def apply_unit(self, offset: int, rows: int, count: int, a: asc.LocalTensor,
                   b: asc.LocalTensor) -> None:
        self.emit(offset, self.load(offset, rows, count), rows, count, a, b)

    def load(self, offset: int, rows: int, count: int) -> asc.LocalTensor:
        """copy_in and the tile in float32 (the input slot stays held in `self.slot`)."""
        slot = self.in_q.alloc_tensor(self.sdt)
        copy_rows(slot, self.x[offset], rows, count, self.t.plane, self.t.pitch, 0.0)
        self.in_q.enque(slot)
        self.slot = slot = self.in_q.deque()
        if self.work is None:
            return slot
        convert(self.work, slot, rows * self.t.pitch)
        return self.work

    def emit(self, offset: int, x: asc.LocalTensor, rows: int, count: int, a: asc.LocalTensor,
             b: asc.LocalTensor) -> None:
        """y = x a_c + b_c on every channel row (the coefficients spread one per block), then
        copy_out."""
        t = self.t
        y = self.out_q.alloc_tensor(self.sdt)
        dst = y if self.work is None else x
        per_rep = self.chip.repeat_bytes // self.chip.block_bytes
        for k, (fn, coefs) in enumerate(((asc.mul, a), (asc.add, b))):
            spread = self.spread[k]
            for q0, n in chunks(ceil_div(rows, per_rep), self.chip.max_repeat,
                                per_rep * F32.itemsize, self.chip.block_bytes):
                asc.brcb(spread[q0 * per_rep * self.blk], coefs[q0 * per_rep], n)
            rowwise(fn, dst, x if k == 0 else dst, spread, rows, t.pitch, count, per_row=True)
        if dst is not y:
            convert(y, dst, rows * t.pitch)
        self.out_q.enque(y)
        self.in_q.free_tensor(self.slot)
        y = self.out_q.deque()
        copy_rows(self.y[offset], y, rows, count, t.plane, t.pitch)
        self.out_q.free_tensor(y)

    # ---- the normalisations' statistics ----
    def zero_pads(self, x: asc.LocalTensor, rows: int, count: int) -> None:
        """The row pads of a centred tile back to 0, so that the squares sum the group alone:
        counting mean^2 per pad and subtracting it again cancels every digit of a variance
        far below mean^2. One masked Duplicate per pad block, a row a repeat."""
        pitch, blk = self.t.pitch, self.blk
        stride = pitch // blk
        rows_per_go = self.chip.max_repeat if stride <= self.chip.max_repeat else 1
        for block in range(count // blk, pitch // blk):
            valid = min(max(count - block * blk, 0), blk)
            mask = [sum(1 << lane for lane in range(valid, blk)), 0]
            for r0 in range(0, rows, rows_per_go):
                asc.duplicate(x[r0 * pitch + block * blk], 0.0, mask,
                              min(rows_per_go, rows - r0), 1, stride)

    def inv_std(self, m2: asc.LocalTensor, rows: int, count: int) -> float:
        """1 / sqrt(var + epsilon) from the group's sum of squared deviations (`m2`, a vector),
        read by the scalar unit."""
        t = self.t
        asc.muls(m2, m2, 1.0 / (rows * count), 1)
        asc.adds(m2, m2, t.epsilon, 1)
        asc.rsqrt(m2, m2, 1)
        return self.scalar(m2, 1.0)

    def coefficients(self, c0: int, rows: int, inv: float,
                     mean: float | None = None) -> tuple[asc.LocalTensor, asc.LocalTensor]:
        """Channels c0 .. c0 + rows: a = scale inv, and b = bias for a tile already centred,
        else bias - mean a."""
        scale, bias, a, b = self.vectors
        self.load_vector(scale, self.params[0][c0], rows)
        self.load_vector(bias, self.params[1][c0], rows)
        asc.muls(a, scale, inv, rows)
        if mean is None:
            return a, bias
        asc.muls(b, a, -mean, rows)
        asc.add(b, b, bias, rows)
        return a, b

    def total(self, src: asc.LocalTensor, count: int) -> asc.LocalTensor:
        """The sum of `count` float32 elements (a multiple of a block; the buffer holds whole
        repeats), in element 0 of the vector returned: whole repeats reduce to one value each,
        into a vector zeroed to whole repeats, until one value is left."""
        padded = round_up(count, self.lanes)
        if padded > count:
            asc.duplicate(src[count], 0.0, padded - count)
        cur, repeats = src, padded // self.lanes
        for i in range(ceil_div(padded.bit_length(), 6) + 1):
            dst = self.totals[i % 2]
            if repeats > 1:
                asc.duplicate(dst, 0.0, round_up(repeats, self.lanes))
            for q0, n in chunks(repeats, self.chip.max_repeat, F32.itemsize,
                                self.chip.block_bytes):
                asc.whole_reduce_sum(dst[q0], cur[q0 * self.lanes], self.lanes, n)
            if repeats == 1:
                return dst
            cur, repeats = dst, ceil_div(repeats, self.lanes)
        raise AssertionError("unreachable: each pass divides the count by the lanes")

    def scalar(self, vector: asc.LocalTensor, factor: float) -> float:
        """Element 0 of `vector` times `factor`, read by the scalar unit (after a V -> S flag;
        an S -> V flag orders later writes to it after the read)."""
        if factor != 1.0:
            asc.muls(vector, vector, factor, 1)
        asc.set_flag(asc.HardEvent.V_S, self.to_scalar)
        asc.wait_flag(asc.HardEvent.V_S, self.to_scalar)
        value = vector.get_value(0)
        asc.set_flag(asc.HardEvent.S_V, self.from_scalar)
        asc.wait_flag(asc.HardEvent.S_V, self.from_scalar)
        return value


def _kernel(name: str, params: int):
    def kernel(ctx: KernelContext, x, *rest) -> None:
        ChannelNormKernel(ctx, x, list(rest[:params]), rest[params]).process()
    kernel.__name__ = kernel.__qualname__ = name
    return kernel


# ---------------------------------------------------------------- registration

def _tiling(kind: str):
    def tiling(ins, outs, attrs, chip, config):
        return plan(kind, ins[0], attrs, chip, config)
    return tiling


TUNING_SPACE = TuningSpace(buffer_num=(1, 2), tile_div=(1, 2), core_div=(1, 2))
for _op, _kind in (("BatchNormalization", "batch"), ("InstanceNormalization", "instance"),
                   ("GroupNormalization", "group")):
    register_kernel(KernelEntry(
        op=_op, kernel=_kernel(f"{_kind}_norm_kernel", PARAMS[_kind]), tiling=_tiling(_kind),
        dtypes=FLOATS, built_for_runtime=BUILT_FOR_RUNTIME, declines=padded_storage,
        tuning_space=TUNING_SPACE))
