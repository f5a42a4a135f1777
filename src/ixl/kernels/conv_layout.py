"""The vector cores' part of a Conv (and ConvTranspose) launch: laying out the Cube's operands
in the GM workspace before the Cube starts [CVF].

- the input, NCHW -> NC1HWC0 (per image and group: C1 groups of C0 channels, each H x W rows
  of C0); for a ConvTranspose dilated by its strides (each input position lands s rows and s
  columns apart in a map zeroed first);
- the weights, (Cout, Cin, kh, kw) -> Cout rows of K = (C1, kh, kw, C0), the 3-D load's K
  order [LD3D]; for a ConvTranspose from (Cin, Cout, kh, kw), its kernel flipped.

Both are the same move: C0 channel planes come into UB (one strided DataCopyPad), and
TransDataTo5HD turns 16 planes x 16 positions into 16 positions x 16 channels [5HD], written
out as rows of C0. TransDataTo5HD has a 16-bit form only here, so float32 planes go through
it as pairs of 16-bit halves: each plane comes in twice, the second copy one half (2 bytes)
further on in GM, and the transposed block of position q then reads lo, hi, lo, hi ... of
eight channels: position q's row of C0 = 8 floats; the odd blocks (halves that straddle two
positions) to spare blocks of the same buffer. For the flipped kernel the destination blocks
of each repeat are listed last tap first.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from ..ascend import lang as asc
from ..ascend.chips import ChipSpec
from ..hixl.dtypes import to_numpy
from ..intmath import ceil_div, round_up
from ..nixl import KernelContext
from ..nixl.tuning import DoesNotFit
from .conv_tiling import ConvGeometry
from .tiling import largest_fit
from .ub import fill

LANES = 16                  # TransDataTo5HD: 16 blocks of 16 halves a repeat
U16 = np.dtype(np.uint16)


@dataclass(frozen=True)
class LayoutPlan:
    dtype: str
    c0: int
    c1: int
    aivs: int              # vector cores sharing the work
    x_units: int           # (image x group) x C1 groups of the input
    w_units: int           # output channels x C1 groups of the weights
    x_chunk: int           # positions per UB tile (input: whole input rows when dilated)
    w_chunk: int
    zero_bytes: int        # workspace bytes zeroed before the input is placed (dilated)

    @property
    def halves(self) -> int:
        """16-bit halves per element: 1, or 2 for float32."""
        return to_numpy(self.dtype).itemsize // 2

    @property
    def per_repeat(self) -> int:
        """Positions one TransDataTo5HD repeat turns."""
        return LANES // self.halves


def plan_layout(geo: ConvGeometry, dtype: str, c1: int, chip: ChipSpec, aivs: int) -> LayoutPlan:
    isz = to_numpy(dtype).itemsize
    halves = isz // 2
    per = LANES // halves

    def ub(p: int) -> int:       # planes and rows (with their spare blocks) double buffered
        p = round_up(p, per)
        planes = LANES * p * halves * 2
        rows = (p * halves + LANES) * chip.block_bytes
        return 2 * (planes + rows) + LANES * LANES * chip.block_bytes

    most = largest_fit(ub, chip.ub_bytes, chip.max_repeat * per) // per * per
    if most == 0:
        raise DoesNotFit("no tile of channel planes fits UB")
    x_positions = geo.in_h * geo.in_w
    if geo.dilate_h > 1 or geo.dilate_w > 1:
        if geo.in_w > most:
            raise DoesNotFit(f"an input row of {geo.in_w} positions does not fit UB for the "
                             f"dilated layout ({most} positions)")
        x_chunk = most // geo.in_w * geo.in_w
        zero = geo.n * geo.groups * c1 * geo.h * geo.w * chip.c0(isz) * isz
    else:
        x_chunk, zero = min(most, round_up(max(x_positions, 1), per)), 0
    return LayoutPlan(dtype, chip.c0(isz), c1, max(aivs, 1), geo.n * geo.groups * c1,
                      geo.m * c1, x_chunk, min(most, round_up(geo.taps, per)), zero)


class LayoutKernel:
    """One AIV's share of the layout work: input units first, then weight units, dealt round
    robin over the vector cores; then every core meets at a SyncAll (the Cube starts)."""

    def __init__(self, ctx: KernelContext, geo: ConvGeometry, plan: LayoutPlan,
                 x: asc.GlobalTensor, w: asc.GlobalTensor,
                 x_map: asc.GlobalTensor, w_rows: asc.GlobalTensor) -> None:
        self.ctx, self.geo, self.p = ctx, geo, plan
        self.x, self.w, self.x_map, self.w_rows = x, w, x_map, w_rows
        self.dtype = to_numpy(plan.dtype)
        self.index = ctx.block_idx            # 2b + sub: this AIV among all of the launch
        chunk = max(plan.x_chunk, plan.w_chunk)
        self.slot = slot = round_up(chunk, plan.per_repeat)
        self.plane = slot * plan.halves       # 16-bit halves per plane in UB
        pipe = asc.TPipe()
        self.in_q, self.out_q = asc.TQue(asc.TPosition.VECIN), asc.TQue(asc.TPosition.VECOUT)
        block = ctx.chip.block_bytes
        pipe.init_buffer(self.in_q, 2, LANES * self.plane * 2)
        # a slot of rows: `slot` rows, then the blocks the transposes write and nobody reads
        # (float32's straddling halves, positions past the last), in the same buffer
        self.spare = slot * plan.halves       # the first spare block
        pipe.init_buffer(self.out_q, 2, (self.spare + LANES) * block)
        if plan.zero_bytes:
            zeros = asc.TBuf()
            pipe.init_buffer(zeros, LANES * LANES * block)
            self.zeros = zeros.get(U16)
            self.zero_event = pipe.alloc_event_id(asc.HardEvent.V_MTE3)

    def process(self) -> Iterator[object]:
        p = self.p
        if p.zero_bytes:
            self.zero_map()
            yield asc.sync_all()
        units = range(self.index, p.x_units + p.w_units, p.aivs)
        for unit in units:
            if unit < p.x_units:
                self.input_unit(unit)
            else:
                self.weight_unit(unit - p.x_units)
        yield asc.sync_all()

    # ---- the work units ----
    def input_unit(self, unit: int) -> None:
        """C0 channels of one image of one group (input view (N x G, Cin, H, W))."""
        p, geo = self.p, self.geo
        image, g1 = divmod(unit, p.c1)
        plane_len = geo.in_h * geo.in_w
        base = (image * geo.cin + g1 * p.c0) * plane_len
        channels = min(p.c0, geo.cin - g1 * p.c0)
        first_row = (image * p.c1 + g1) * geo.h * geo.w
        for p0 in range(0, plane_len, p.x_chunk):
            count = min(p.x_chunk, plane_len - p0)
            self.copy_in(self.x, base + p0, plane_len, channels, count)
            self.compute(count, reverse=False)
            if geo.dilate_h > 1 or geo.dilate_w > 1:
                self.copy_out_dilated(first_row, p0, count)
            else:
                self.copy_out(self.x_map, first_row + p0, count)

    def weight_unit(self, unit: int) -> None:
        """C0 input channels of one output channel's kernel (flipped for a ConvTranspose)."""
        p, geo = self.p, self.geo
        co, g1 = divmod(unit, p.c1)
        channels = min(p.c0, geo.cin - g1 * p.c0)
        if geo.flip:            # w (Cin, Cout / groups, kh, kw)
            g, local = divmod(co, geo.cout)
            base = ((g * geo.cin + g1 * p.c0) * geo.cout + local) * geo.taps
            pitch = geo.cout * geo.taps
        else:                   # w (Cout, Cin / groups, kh, kw)
            base, pitch = (co * geo.cin + g1 * p.c0) * geo.taps, geo.taps
        first_row = (co * p.c1 + g1) * geo.taps
        for p0 in range(0, geo.taps, p.w_chunk):
            count = min(p.w_chunk, geo.taps - p0)
            self.copy_in(self.w, base + p0, pitch, channels, count)
            self.compute(count, reverse=geo.flip)
            row = first_row + (geo.taps - p0 - count if geo.flip else p0)
            self.copy_out(self.w_rows, row, count)

    # ---- copy_in / compute / copy_out ----
    def copy_in(self, src: asc.GlobalTensor, offset: int, pitch: int, channels: int,
                count: int) -> None:
        """C0 planes of `count` positions (missing channels are zeros); float32 planes twice,
        the second copy a half further on."""
        p = self.p
        isz = self.dtype.itemsize
        planes = self.in_q.alloc_tensor(U16)
        block = self.ctx.chip.block_bytes
        gap = (self.plane * 2 * p.halves - round_up(count * isz, block)) // block
        if p.halves == 1:
            asc.data_copy_pad(planes, src.reinterpret(U16)[offset], asc.DataCopyExtParams(
                channels, count * isz, (pitch - count) * isz, gap))
        else:               # planes 2k (as stored) and 2k + 1 (one half on)
            halves = src.reinterpret(U16)
            asc.data_copy_pad(planes, halves[2 * offset], asc.DataCopyExtParams(
                channels, count * isz, (pitch - count) * isz, gap))
            shifted_gap = (self.plane * 2 * 2 - round_up(count * isz - 2, block)) // block
            asc.data_copy_pad(planes[self.plane], halves[2 * offset + 1], asc.DataCopyExtParams(
                channels, count * isz - 2, (pitch - count) * isz + 2, shifted_gap))
        self.in_q.enque(planes)
        self.channels = channels

    def compute(self, count: int, reverse: bool) -> None:
        """16 planes x 16 halves -> 16 blocks per repeat: block q x halves is position q's row
        (listed last position first when reversed); the others go to the spare blocks."""
        p = self.p
        planes = self.in_q.deque()
        rows = self.out_q.alloc_tensor(U16)
        live = self.channels * p.halves
        if live < LANES:            # channels past Cin are zeros
            fill(planes[live * self.plane], 0, (LANES - live) * self.plane)
        per = p.per_repeat
        srcs = [planes[i * self.plane] for i in range(LANES)]
        repeats = ceil_div(count, per)

        def spare(j: int):
            return rows[(self.spare + j) * LANES]

        if not reverse:             # positions in order: one instruction, repeats walk them
            # (a float32 repeat's straddling blocks go to the rows after `slot`, moving on
            # with the repeats as the position rows do)
            dsts = [rows[(self.slot + j // 2) * LANES] if j % p.halves else
                    rows[j // p.halves * LANES] for j in range(LANES)]
            once = repeats == 1
            asc.trans_data_to_5hd(dsts, srcs, asc.TransDataTo5HDParams(
                repeat_times=repeats, dst_rep_stride=0 if once else per,
                src_rep_stride=0 if once else 1))
        else:
            for r in range(repeats):
                position = [r * per + j // p.halves for j in range(LANES)]
                dsts = [rows[(count - 1 - q) * LANES] if q < count and j % p.halves == 0
                        else spare(j) for j, q in enumerate(position)]
                asc.trans_data_to_5hd(dsts, [s[r * LANES] for s in srcs],
                                      asc.TransDataTo5HDParams(repeat_times=1))
        self.out_q.enque(rows)
        self.in_q.free_tensor(planes)

    def copy_out(self, dst: asc.GlobalTensor, row: int, count: int) -> None:
        rows = self.out_q.deque()
        asc.data_copy(dst.reinterpret(U16)[row * LANES], rows, count * LANES)
        self.out_q.free_tensor(rows)

    def copy_out_dilated(self, first_row: int, p0: int, count: int) -> None:
        """Whole input rows: each position's row of C0 `dilate` rows and columns apart."""
        geo = self.geo
        rows = self.out_q.deque()
        dst = self.x_map.reinterpret(U16)
        for r in range(p0 // geo.in_w, (p0 + count) // geo.in_w):
            at = first_row + r * geo.dilate_h * geo.w
            asc.data_copy(dst[at * LANES], rows[(r * geo.in_w - p0) * LANES], asc.DataCopyParams(
                block_count=geo.in_w, block_len=1, src_stride=0, dst_stride=geo.dilate_w - 1))
        self.out_q.free_tensor(rows)

    def zero_map(self) -> None:
        """This core's share of the dilated map, zeroed (the positions between the samples)."""
        p = self.p
        words = p.zero_bytes // 2
        chunk = self.zeros.count
        fill(self.zeros, 0, chunk)
        asc.set_flag(asc.HardEvent.V_MTE3, self.zero_event)
        asc.wait_flag(asc.HardEvent.V_MTE3, self.zero_event)
        share = round_up(ceil_div(words, p.aivs), chunk)
        lo = self.index * share
        dst = self.x_map.reinterpret(U16)
        for at in range(lo, min(lo + share, words), chunk):
            asc.data_copy(dst[at], self.zeros, min(chunk, words - at))
