"""Native ApplyRotaryPosEmb: a decoder layer's query and key rotated in one launch, as CANN's
aclnnApplyRotaryPosEmb does it (rotate_half, layout BSND).

Cores split the tokens; per tile of tokens the kernel reads each head row's two halves into
UB rows of their own (strided copies: the halves of all the tile's rows in one DataCopyPad
each), so every half starts on a 32-byte block whatever the head dim, with the tokens' cos and
sin halves beside them. Per token, six vector instructions per tensor do the rotation in the
mask / repeat form, one repeat per head and the cos or sin row read again by every repeat (a
source repeat stride of 0), a half longer than one repeat in pieces of one:

    y1 = x1 * cos1 - x2 * sin1        y2 = x2 * cos2 + x1 * sin2

float16 and bfloat16 compute in float32 (converted on the way in, rounded once on the way
out); float32 computes in place of its slots. The halves are written back with the same
strided copies, so the output has the input's layout.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..ascend import lang as asc
from ..ascend.chips import ChipSpec
from ..hixl.dtypes import FLOATS, to_numpy
from ..intmath import round_up
from ..nixl import KernelContext, KernelEntry, LaunchPlan, TensorDesc, register_kernel
from ..nixl.tuning import DoesNotFit, TuningConfig, TuningSpace
from .tiling import Tiling, largest_fit, split_units
from .ub import convert, copy_rows
from .version import BUILT_FOR_RUNTIME

COMPUTE = np.dtype(np.float32)


# ---------------------------------------------------------------- tiling data

@dataclass(frozen=True)
class RotaryTiling(Tiling):
    tokens: int            # rows of cos and sin: query and key have heads rows per token
    q_heads: int
    k_heads: int
    half: int              # elements per half of a head row
    pitch: int             # UB elements per half row: the half padded to a block
    per_core: int          # tokens per core
    tile: int              # tokens per tile
    dtype: str
    config: TuningConfig

    @property
    def rows(self) -> int:
        """Head rows of one token, query's and key's."""
        return self.q_heads + self.k_heads

    def describe(self) -> str:
        return f"tile {self.tile} tokens, buffers {self.buffer_num}"


# ---------------------------------------------------------------- host tiling

def _slot_rows(tile: int, heads: int) -> tuple[int, int]:
    """Half rows of a tile's input slot (both halves of every head row, then cos and sin's)
    and of its output slot."""
    return 2 * tile * heads + 4 * tile, 2 * tile * heads


def _repeated_rows(q_heads: int, k_heads: int, chip: ChipSpec) -> int:
    """Rows of the temporary: one instruction's repeats, a head each."""
    return max(1, min(max(q_heads, k_heads), chip.max_repeat))


def plan(ins: list, outs: list, attrs: dict, chip: ChipSpec,
         config: TuningConfig | None = None) -> LaunchPlan:
    config = (config or TuningConfig()).only(("buffer_num", "tile_div", "block_dim"),
                                             "the rotary embedding kernel")
    query, key, cos = ins[0], ins[1], ins[2]
    isz = query.itemsize
    tokens, dim = math.prod(cos.shape[:-2]), query.shape[-1]
    q_heads, k_heads = query.shape[-2], key.shape[-2]
    half = dim // 2
    pitch = round_up(half, chip.block_elems(isz))
    if pitch * COMPUTE.itemsize > chip.max_repeat * chip.block_bytes:
        raise DoesNotFit(f"a half row of {half} elements is longer than a repeat stride "
                         f"reaches ({chip.max_repeat} blocks)")
    heads = q_heads + k_heads
    row = pitch * isz
    widened = pitch * COMPUTE.itemsize if isz != COMPUTE.itemsize else 0

    def ub_bytes(tile: int) -> int:
        ins_rows, out_rows = _slot_rows(tile, heads)
        scratch = (ins_rows + out_rows) * widened + \
            _repeated_rows(q_heads, k_heads, chip) * pitch * COMPUTE.itemsize
        return config.buffers * (ins_rows + out_rows) * row + scratch

    most = max(1, chip.max_copy_blocks // max(q_heads, k_heads, 1))
    tile = largest_fit(ub_bytes, chip.ub_bytes, min(most, max(tokens, 1))) // config.divisor
    if tile == 0:
        raise DoesNotFit(f"one token's {heads} head rows of {dim} elements do not fit in UB at "
                         f"{config.buffers} buffers")
    block_dim, per_core = split_units(tokens, chip, config.block_dim)
    return LaunchPlan(block_dim, RotaryTiling(tokens, q_heads, k_heads, half, pitch, per_core,
                                              tile, query.dtype, config))


# ---------------------------------------------------------------- the device kernel

@dataclass(frozen=True)
class Region:
    """Where a tensor's half rows sit in a tile's slot (in half rows): its first halves from
    `first`, its second halves from `second`, `heads` per token."""

    first: int
    second: int
    heads: int


class RotaryKernel:
    def __init__(self, ctx: KernelContext, query: asc.GlobalTensor, key: asc.GlobalTensor,
                 cos: asc.GlobalTensor, sin: asc.GlobalTensor, query_out: asc.GlobalTensor,
                 key_out: asc.GlobalTensor) -> None:
        tiling: RotaryTiling = ctx.tiling
        self.tiling, self.chip = tiling, ctx.chip
        self.query, self.key, self.cos, self.sin = query, key, cos, sin
        self.query_out, self.key_out = query_out, key_out
        self.dtype = to_numpy(tiling.dtype)
        self.start = ctx.block_idx * tiling.per_core
        self.count = min(tiling.per_core, tiling.tokens - self.start)
        ins_rows, out_rows = _slot_rows(tiling.tile, tiling.rows)
        pipe = asc.TPipe()
        self.in_q, self.out_q = asc.TQue(asc.TPosition.VECIN), asc.TQue(asc.TPosition.VECOUT)
        row = tiling.pitch * self.dtype.itemsize
        pipe.init_buffer(self.in_q, tiling.config.buffers, ins_rows * row)
        pipe.init_buffer(self.out_q, tiling.config.buffers, out_rows * row)
        self.widened = self.dtype != COMPUTE
        if self.widened:
            xs, ys = asc.TBuf(), asc.TBuf()
            pipe.init_buffer(xs, ins_rows * tiling.pitch * COMPUTE.itemsize)
            pipe.init_buffer(ys, out_rows * tiling.pitch * COMPUTE.itemsize)
            self.xs, self.ys = xs.get(COMPUTE), ys.get(COMPUTE)
        tmp = asc.TBuf()
        pipe.init_buffer(tmp, _repeated_rows(tiling.q_heads, tiling.k_heads, ctx.chip)
                         * tiling.pitch * COMPUTE.itemsize)
        self.tmp = tmp.get(COMPUTE)

    def regions(self, tokens: int) -> tuple[Region, Region, Region, Region]:
        """Query's, key's, cos's and sin's half rows in a slot of `tokens` tokens (the output
        slot holds the first two)."""
        nq, nk = tokens * self.tiling.q_heads, tokens * self.tiling.k_heads
        tables = 2 * (nq + nk)
        return (Region(0, nq, self.tiling.q_heads),
                Region(2 * nq, 2 * nq + nk, self.tiling.k_heads),
                Region(tables, tables + tokens, 1), Region(tables + 2 * tokens,
                                                           tables + 3 * tokens, 1))

    def process(self) -> None:
        for t0 in range(self.start, self.start + self.count, self.tiling.tile):
            tokens = min(self.tiling.tile, self.start + self.count - t0)
            self.copy_in(t0, tokens)
            self.compute(tokens)
            self.copy_out(t0, tokens)

    def _halves(self, slot: asc.LocalTensor, gm: asc.GlobalTensor, region: Region, t0: int,
                tokens: int, inbound: bool) -> None:
        """Both halves of `tokens` tokens' rows of `gm` into (out of) the slot's half rows."""
        t = self.tiling
        rows, dim = tokens * region.heads, 2 * t.half
        if not rows:
            return
        for at, offset in ((region.first, 0), (region.second, t.half)):
            local, remote = slot[at * t.pitch], gm[t0 * region.heads * dim + offset]
            if inbound:
                copy_rows(local, remote, rows, t.half, dim, t.pitch)
            else:
                copy_rows(remote, local, rows, t.half, dim, t.pitch)

    def copy_in(self, t0: int, tokens: int) -> None:
        x = self.in_q.alloc_tensor(self.dtype)
        for gm, region in zip((self.query, self.key, self.cos, self.sin),
                              self.regions(tokens)):
            self._halves(x, gm, region, t0, tokens, True)
        self.in_q.enque(x)

    def compute(self, tokens: int) -> None:
        t = self.tiling
        x = self.in_q.deque()
        y = self.out_q.alloc_tensor(self.dtype)
        q, k, cos, sin = self.regions(tokens)
        src, dst = (self.xs, self.ys) if self.widened else (x, y)
        if self.widened:
            convert(src, x, (sin.second + tokens) * t.pitch)
        for i in range(tokens):
            tables = tuple(src[(at + i) * t.pitch]
                           for at in (cos.first, cos.second, sin.first, sin.second))
            for region in (q, k):
                self.rotate(dst, src, region, i, tables)
        if self.widened:
            convert(y, dst, cos.first * t.pitch)
        self.out_q.enque(y)
        self.in_q.free_tensor(x)

    def rotate(self, dst: asc.LocalTensor, src: asc.LocalTensor, region: Region, i: int,
               tables: tuple) -> None:
        """Token i's heads of one tensor: y1 = x1 * cos1 - x2 * sin1, y2 = x2 * cos2 +
        x1 * sin2, a repeat per head, a piece of a repeat's lanes at a time."""
        t = self.tiling
        cos1, cos2, sin1, sin2 = tables
        lanes = self.chip.lanes(COMPUTE.itemsize)
        stride = t.pitch * COMPUTE.itemsize // self.chip.block_bytes
        by_table = asc.BinaryRepeatParams(1, 1, 1, stride, stride, 0)   # the row per repeat
        strided = asc.BinaryRepeatParams(1, 1, 1, stride, stride, stride)
        for h0 in range(0, region.heads, self.chip.max_repeat):
            repeat = min(self.chip.max_repeat, region.heads - h0)
            row1 = (region.first + i * region.heads + h0) * t.pitch
            row2 = (region.second + i * region.heads + h0) * t.pitch
            for off in range(0, t.half, lanes):
                mask = min(lanes, t.half - off)
                x1, x2 = src[row1 + off], src[row2 + off]
                y1, y2, tmp = dst[row1 + off], dst[row2 + off], self.tmp[off]
                for out, a, ca, b, sb, combine in ((y1, x1, cos1, x2, sin1, asc.sub),
                                                   (y2, x2, cos2, x1, sin2, asc.add)):
                    asc.mul(out, a, ca[off], mask, repeat, by_table)
                    asc.mul(tmp, b, sb[off], mask, repeat, by_table)
                    combine(out, out, tmp, mask, repeat, strided)

    def copy_out(self, t0: int, tokens: int) -> None:
        y = self.out_q.deque()
        q, k, _, _ = self.regions(tokens)
        self._halves(y, self.query_out, q, t0, tokens, False)
        self._halves(y, self.key_out, k, t0, tokens, False)
        self.out_q.free_tensor(y)


def apply_rotary_pos_emb_kernel(ctx: KernelContext, *gm: asc.GlobalTensor) -> None:
    RotaryKernel(ctx, *gm).process()


# ---------------------------------------------------------------- registration

def _declines(in_descs: list[TensorDesc], attrs: dict) -> str | None:
    padded = next((d for d in in_descs if d.is_padded), None)
    if padded is not None:
        return f"an input in a padded layout ({padded.format.value})"
    return None


register_kernel(KernelEntry(
    op="ApplyRotaryPosEmb", kernel=apply_rotary_pos_emb_kernel, tiling=plan, dtypes=FLOATS,
    built_for_runtime=BUILT_FOR_RUNTIME, declines=_declines,
    tuning_space=TuningSpace(buffer_num=(1, 2), tile_div=(1, 2), core_div=(1, 2))))
