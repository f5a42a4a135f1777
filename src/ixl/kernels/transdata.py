"""Native TransData on the vector cores: ND <-> FRACTAL_NZ and NCHW <-> NC1HWC0 (R5, tier B).

A unit of work is one column block of one matrix (ND <-> NZ) or one group of C0 channels of
one image (NCHW <-> NC1HWC0); the cores take contiguous ranges of units, and each unit goes
through UB in tiles of rows (positions):
- ND -> NZ: a tile of rows, C0 columns each, comes in with one strided DataCopyPad that pads
  every row to 32 bytes with zeros (the columns past the matrix's edge); the vector unit hands
  it to the output queue and zeroes the rows the fractals pad; one contiguous copy out.
- NZ -> ND: the reverse: one contiguous copy in, one strided DataCopyPad out (only the live
  columns of each row).
- NCHW -> NC1HWC0 (16-bit): C0 channel planes come in as rows; TransDataTo5HD turns each 16
  planes x 16 positions into 16 positions x 16 channels; one contiguous copy out.
- NC1HWC0 -> NCHW (16-bit): the reverse.

The file reads as an Ascend C sample: the tiling data, the host tiling function, the kernel
class (init, process, copy_in, compute, copy_out) and the kernel entry.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..ascend import lang as asc
from ..ascend.chips import ChipSpec
from ..hixl.dtypes import FLOATS, to_numpy
from ..intmath import ceil_div, round_up
from ..nixl import Format, KernelContext, KernelEntry, LaunchPlan, TensorDesc, register_kernel
from ..nixl.tuning import DoesNotFit, TuningConfig, TuningSpace
from .tiling import Tiling, largest_fit, split_units
from .ub import copy, copy_rows
from .version import BUILT_FOR_RUNTIME

TRANSPOSE = 16              # TransDataTo5HD transposes 16 x 16 (16-bit)
MODES = {(Format.ND, Format.FRACTAL_NZ): "nd_to_nz", (Format.FRACTAL_NZ, Format.ND): "nz_to_nd",
         (Format.ND, Format.NC1HWC0): "nchw_to_5hd", (Format.NC1HWC0, Format.ND): "5hd_to_nchw"}


# ---------------------------------------------------------------- tiling data

@dataclass(frozen=True)
class TransDataTiling(Tiling):
    mode: str              # a value of MODES
    dtype: str
    c0: int                # elements per 32-byte fractal row
    groups: int            # column blocks (C1) per matrix / channel groups per image
    rows: int              # rows of a matrix (M) / positions of an image (H x W)
    cols: int              # columns of a matrix (N) / channels (C)
    stored_rows: int       # rows the NZ layout stores (M rounded to 16) / positions
    units: int             # matrices x groups
    per_core: int          # units per core
    tile: int              # rows (positions) per tile
    config: TuningConfig


# ---------------------------------------------------------------- host tiling

def plan(ins: list[TensorDesc], outs: list[TensorDesc], attrs: dict, chip: ChipSpec,
         config: TuningConfig | None = None) -> LaunchPlan:
    config = (config or TuningConfig()).only(("buffer_num", "tile_div", "block_dim"),
                                             "the TransData kernel")
    x = ins[0]
    mode = MODES[(x.format, Format(attrs["dst_format"]))]
    isz = x.itemsize
    c0 = chip.c0(isz)
    if mode in ("nd_to_nz", "nz_to_nd"):
        *lead, rows, cols = x.shape
        matrices, stored = math.prod(lead), round_up(rows, 16)
    else:
        matrices, cols, h, w = x.shape
        rows = stored = h * w
    groups = ceil_div(cols, c0)
    units = matrices * groups if rows else 0
    slot_rows = round_up(stored, TRANSPOSE)

    def ub_bytes(tile: int) -> int:      # a tile of C0-wide rows in and out, buffer_num slots
        return 2 * config.buffers * round_up(tile, TRANSPOSE) * c0 * isz

    upper = slot_rows if mode in ("nd_to_nz", "nz_to_nd") else \
        min(slot_rows, chip.max_repeat * TRANSPOSE)        # a TransDataTo5HD repeat per 16
    tile = largest_fit(ub_bytes, chip.ub_bytes, max(upper, 1)) // config.divisor
    if tile == 0:
        raise DoesNotFit(f"no tile of {c0}-element rows fits in UB at {config.buffers} buffers")
    block_dim, per_core = split_units(units, chip, config.block_dim)
    return LaunchPlan(block_dim, TransDataTiling(mode, x.dtype, c0, groups, rows, cols, stored,
                                                 units, per_core, tile, config))


# ---------------------------------------------------------------- the device kernel

class TransDataKernel:
    def __init__(self, ctx: KernelContext, x: asc.GlobalTensor, y: asc.GlobalTensor) -> None:
        t: TransDataTiling = ctx.tiling
        self.t, self.x, self.y = t, x, y
        self.dtype = to_numpy(t.dtype)
        self.first = ctx.block_idx * t.per_core
        self.count = min(t.per_core, t.units - self.first)
        self.slot = round_up(t.tile, TRANSPOSE)              # rows per UB slot
        pipe = asc.TPipe()
        self.in_q, self.out_q = asc.TQue(asc.TPosition.VECIN), asc.TQue(asc.TPosition.VECOUT)
        nbytes = self.slot * t.c0 * self.dtype.itemsize
        pipe.init_buffer(self.in_q, t.config.buffers, nbytes)
        pipe.init_buffer(self.out_q, t.config.buffers, nbytes)

    def process(self) -> None:
        t = self.t
        rows = t.stored_rows if t.mode == "nd_to_nz" else t.rows
        for unit in range(self.first, self.first + self.count):
            matrix, group = divmod(unit, t.groups)
            width = min(t.c0, t.cols - group * t.c0)      # live columns (channels) of the group
            for r0 in range(0, rows, t.tile):
                n = min(t.tile, rows - r0)
                self.copy_in(matrix, group, width, r0, n)
                self.compute(width, r0, n)
                self.copy_out(matrix, group, width, r0, n)

    def _nd_offset(self, matrix: int, group: int, r0: int) -> int:
        """Element (r0, first column of the group) of an ND matrix (or an NCHW image's first
        channel of the group, at position r0)."""
        t = self.t
        if t.mode in ("nd_to_nz", "nz_to_nd"):
            return (matrix * t.rows + r0) * t.cols + group * t.c0
        return (matrix * t.cols + group * t.c0) * t.rows + r0

    def _fractal_offset(self, matrix: int, group: int, r0: int) -> int:
        """Row r0 of a group in the NZ / NC1HWC0 layout."""
        t = self.t
        return ((matrix * t.groups + group) * t.stored_rows + r0) * t.c0

    def copy_in(self, matrix: int, group: int, width: int, r0: int, n: int) -> None:
        t = self.t
        x = self.in_q.alloc_tensor(self.dtype)
        if t.mode == "nd_to_nz":
            live = max(0, min(n, t.rows - r0))           # rows past M are the fractals' padding
            if live:
                copy_rows(x, self.x[self._nd_offset(matrix, group, r0)], live, width, t.cols,
                          t.c0, pad=0)
        elif t.mode == "nchw_to_5hd":                     # C0 channel planes as rows
            copy_rows(x, self.x[self._nd_offset(matrix, group, r0)], width, n, t.rows,
                      self.slot, pad=0)
        else:                                             # fractal rows, contiguous
            copy(x, self.x[self._fractal_offset(matrix, group, r0)], n * t.c0)
        self.in_q.enque(x)

    def compute(self, width: int, r0: int, n: int) -> None:
        t = self.t
        x = self.in_q.deque()
        y = self.out_q.alloc_tensor(self.dtype)
        if t.mode == "nd_to_nz":
            live = max(0, min(n, t.rows - r0))
            _copy_bits(y, x, live * t.c0)
            if live < n:                                  # the fractals' padding rows
                asc.duplicate(y[live * t.c0].reinterpret(np.int16), 0,
                              (n - live) * t.c0 * self.dtype.itemsize // 2)
        elif t.mode == "nz_to_nd":
            _copy_bits(y, x, n * t.c0)
        elif t.mode == "nchw_to_5hd":
            if width < t.c0:                              # channels past C: zeros
                asc.duplicate(x[width * self.slot].reinterpret(np.int16), 0,
                              (t.c0 - width) * self.slot)
            _transpose(y, x, self.slot, planes_in=True)
        else:
            _transpose(y, x, self.slot, planes_in=False)
        self.out_q.enque(y)
        self.in_q.free_tensor(x)

    def copy_out(self, matrix: int, group: int, width: int, r0: int, n: int) -> None:
        t = self.t
        y = self.out_q.deque()
        if t.mode == "nz_to_nd":
            copy_rows(self.y[self._nd_offset(matrix, group, r0)], y, n, width, t.cols, t.c0)
        elif t.mode == "5hd_to_nchw":
            copy_rows(self.y[self._nd_offset(matrix, group, r0)], y, width, n, t.rows, self.slot)
        else:
            copy(self.y[self._fractal_offset(matrix, group, r0)], y, n * t.c0)
        self.out_q.free_tensor(y)


def _copy_bits(dst: asc.LocalTensor, src: asc.LocalTensor, count: int) -> None:
    """`count` elements of any storage type, bit for bit (adds 0 to them as int16)."""
    halves = count * src.itemsize // 2
    if halves:
        asc.adds(dst.reinterpret(np.int16), src.reinterpret(np.int16), 0, halves)


def _transpose(dst: asc.LocalTensor, src: asc.LocalTensor, slot: int, planes_in: bool) -> None:
    """16 channel planes of `slot` positions <-> `slot` positions of 16 channels, 16 x 16 at
    a time (one TransDataTo5HD repeat each)."""
    repeats = slot // TRANSPOSE
    blocks = TRANSPOSE * TRANSPOSE * dst.itemsize // dst.core.chip.block_bytes
    planes, positions = (1, blocks) if planes_in else (blocks, 1)    # strides in blocks
    if planes_in:
        dsts = [dst[j * TRANSPOSE] for j in range(TRANSPOSE)]
        srcs = [src[i * slot] for i in range(TRANSPOSE)]
    else:
        dsts = [dst[i * slot] for i in range(TRANSPOSE)]
        srcs = [src[j * TRANSPOSE] for j in range(TRANSPOSE)]
    once = repeats == 1                      # a single repeat still adds its strides
    asc.trans_data_to_5hd(dsts, srcs, asc.TransDataTo5HDParams(
        repeat_times=repeats, dst_rep_stride=0 if once else positions,
        src_rep_stride=0 if once else planes))


def trans_data_kernel(ctx: KernelContext, x: asc.GlobalTensor, y: asc.GlobalTensor) -> None:
    TransDataKernel(ctx, x, y).process()


# ---------------------------------------------------------------- registration

def _declines(in_descs: list[TensorDesc], attrs: dict) -> str | None:
    x = in_descs[0]
    dst = Format(attrs["dst_format"])
    if (x.format, dst) not in MODES:
        return (f"{x.format.value} to {dst.value} has no native path (ND <-> FRACTAL_NZ, "
                f"NCHW <-> NC1HWC0)")
    if x.format is Format.ND and x.is_padded:
        return "padded storage runs on the shim"
    if Format.NC1HWC0 in (x.format, dst) and x.itemsize != 2:
        return ("NCHW <-> NC1HWC0 runs natively for 16-bit types (TransDataTo5HD's 8- and "
                "32-bit forms are not modeled)")
    return None


register_kernel(KernelEntry(
    op="TransData", kernel=trans_data_kernel, tiling=plan,
    dtypes=FLOATS + ("int8", "uint8", "int16", "int32"), built_for_runtime=BUILT_FOR_RUNTIME,
    declines=_declines, tuning_space=TuningSpace(buffer_num=(1, 2, 4), tile_div=(1, 2),
                                                 core_div=(1, 2))))
