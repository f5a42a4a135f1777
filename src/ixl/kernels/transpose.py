"""Native Transpose: any permutation.

The permutation is first simplified: size-1 dims dropped, dims that stay neighbours in the same
order merged. When the last dim stays last, every output row is a contiguous run of the input:
the row-move template (strided DataCopyPads only). Otherwise the input's last dim moves and the
output's last dim comes from another input dim `a`: the kernel below moves (a, last) tiles of
every batch (the other dims) through the vector unit's TransDataTo5HD (b16 and b32; elements of
other widths move as rows of one element on the row-move template, slower but exact).

Per tile: copy_in reads Ta rows of the a dim, each Tb contiguous elements of the last dim (one
strided DataCopyPad; rows padded to 16 in UB, the 16 x 16 (b16) or 16 x 8 (b32) blocks the
instruction takes); compute transposes a chunk of Tc output rows at a time, one instruction per
16 source rows with a repeat per block of columns; copy_out writes the chunk's rows, each Ta
contiguous output elements, in one strided DataCopyPad. Tiles are 512-byte multiples on both
sides where the dims allow (a GM burst off that grid runs at 70%, [MEMOPT]); when a tile's
input does not fit twice in UB it is single-buffered and its output goes in chunks, so the next
tile's read still overlaps the last chunks' writes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple

from ..ascend import lang as asc
from ..ascend.chips import ChipSpec
from ..hixl.dtypes import to_numpy
from ..intmath import ceil_div, round_up
from ..nixl import KernelContext, KernelEntry, LaunchPlan, register_kernel
from ..nixl.tuning import DoesNotFit, TuningConfig
from .row_move import (
    MOVE_DTYPES,
    TUNING_FIELDS,
    TUNING_SPACE,
    DimMap,
    RowMoveTiling,
    grid_part,
    make_kernel,
)
from .row_move import plan as row_plan
from .tiling import Tiling, split_units
from .ub_place import row_pitch
from .version import BUILT_FOR_RUNTIME

SOURCE_ROWS = 16                    # source blocks per TransDataTo5HD repeat


def simplified(shape: tuple, perm: tuple) -> tuple[tuple, tuple]:
    """(shape, perm) with size-1 dims dropped and neighbours that stay neighbours merged."""
    keep = [i for i, d in enumerate(shape) if d != 1]
    kept_shape = [shape[i] for i in keep]
    kept_perm = [keep.index(p) for p in perm if p in keep]
    merged_shape: list[int] = []
    groups: list[list[int]] = []           # groups of input dims, in input order
    for i, d in enumerate(kept_shape):
        if groups and kept_perm.index(i) == kept_perm.index(groups[-1][-1]) + 1:
            groups[-1].append(i)
            merged_shape[-1] *= d
        else:
            groups.append([i])
            merged_shape.append(d)
    first = {g[0]: k for k, g in enumerate(groups)}
    new_perm = [first[p] for p in kept_perm if p in first]
    return tuple(merged_shape), tuple(new_perm)


# ---------------------------------------------------------------- tiling data

@dataclass(frozen=True)
class TransposeTiling(Tiling):
    batch: tuple[tuple[int, int, int], ...]   # (size, input stride, output stride) per batch dim
    rows: int              # A: the input dim that becomes the output's last
    cols: int              # B: the input's last dim
    row_stride: int        # input elements per step of A
    col_stride: int        # output elements per step of B (its output dim's stride)
    tile_rows: int         # Ta
    tile_cols: int         # Tb
    chunk: int             # Tc: output rows transposed and written at a time
    in_pitch: int          # UB elements per source row (Tb in blocks, ub_place.row_pitch)
    out_pitch: int         # UB elements per output row (Ta padded to 16, in the same way)
    in_buffers: int
    per_core: int          # tiles per core
    dtype: str
    config: TuningConfig

    @property
    def tiles(self) -> tuple[int, int, int]:
        """(batches, A tiles, B tiles)."""
        return (math.prod(s for s, _, _ in self.batch), ceil_div(self.rows, self.tile_rows),
                ceil_div(self.cols, self.tile_cols))


# ---------------------------------------------------------------- host tiling

def tile_plan(shape: tuple, perm: tuple, dtype: str, chip: ChipSpec,
              config: TuningConfig | None) -> LaunchPlan:
    """Tiles of 512 bytes a side where the dims allow, shrunk until the input tile (double
    buffered if it fits twice, with output rows of half a burst if need be; else once) and two
    output chunks fit UB."""
    config = (config or TuningConfig()).only(TUNING_FIELDS, "the transpose kernel")
    isz = to_numpy(dtype).itemsize                 # 2 or 4: what TransDataTo5HD takes
    rank = len(shape)
    a = perm[-1]
    in_strides = [math.prod(shape[i + 1:]) for i in range(rank)]
    out_shape = [shape[p] for p in perm]
    out_strides = [math.prod(out_shape[i + 1:]) for i in range(rank)]
    where = {p: i for i, p in enumerate(perm)}
    batch = tuple((shape[i], in_strides[i], out_strides[where[i]]) for i in range(rank)
                  if i not in (a, rank - 1))
    rows, cols = shape[a], shape[-1]
    blk = chip.block_elems(isz)
    grid = chip.gm_alloc_align // isz            # elements in a 512-byte burst
    ta = min(round_up(rows, SOURCE_ROWS), grid)
    tb = min(round_up(cols, blk), grid)

    def fits(ta: int, tb: int, tc: int, buffers: int) -> bool:
        src = round_up(ta, SOURCE_ROWS) * row_pitch(tb, isz, chip) * isz
        out = tc * row_pitch(round_up(ta, SOURCE_ROWS), isz, chip, out_run) * isz
        return buffers * src + 2 * out <= chip.ub_bytes

    out_block = 16 if isz == 2 else 8            # output rows per repeat
    out_run = 16 // out_block                    # blocks a repeat writes to each output row
    buffers = config.buffers
    while True:
        tc = round_up(tb, out_block)
        while tc > out_block and not fits(ta, tb, tc, buffers):
            tc -= out_block
        if fits(ta, tb, tc, buffers):
            break
        if buffers > 1 and ta > grid // 2 and fits(ta // 2, tb, out_block, buffers):
            ta //= 2              # double buffered, output rows down to half a burst
            continue
        if buffers > 1 and fits(ta, tb, out_block, 1):
            buffers = 1
            continue
        if ta <= SOURCE_ROWS and tb <= blk:
            raise DoesNotFit("no transpose tile fits in UB")
        if ta >= tb:
            ta = max(SOURCE_ROWS, ta // 2)
        else:
            tb = max(blk, tb // 2)
    ta = max(1, ta // config.divisor) if config.tile_div else ta
    tiles = math.prod(s for s, _, _ in batch) * ceil_div(rows, ta) * ceil_div(cols, tb)
    block_dim, per_core = split_units(tiles, chip, config.block_dim)
    return LaunchPlan(block_dim, TransposeTiling(
        batch, rows, cols, in_strides[a], out_strides[where[rank - 1]], ta, tb, tc,
        row_pitch(tb, isz, chip), row_pitch(round_up(ta, SOURCE_ROWS), isz, chip, out_run),
        buffers, per_core, dtype, config))


# ---------------------------------------------------------------- the device kernel

class Block(NamedTuple):
    src: int          # GM offset of the tile's first input element
    dst: int          # GM offset of its first output element
    rows: int         # Ta of this tile (A is cut)
    cols: int         # Tb of this tile


class TransposeKernel:
    def __init__(self, ctx: KernelContext, x: asc.GlobalTensor, y: asc.GlobalTensor) -> None:
        tiling: TransposeTiling = ctx.tiling
        self.ctx, self.tiling, self.x, self.y = ctx, tiling, x, y
        self.dtype = to_numpy(tiling.dtype)
        isz = self.dtype.itemsize
        self.out_block = 16 if isz == 2 else 8
        pipe = asc.TPipe()
        self.in_q, self.out_q = asc.TQue(asc.TPosition.VECIN), asc.TQue(asc.TPosition.VECOUT)
        pipe.init_buffer(self.in_q, tiling.in_buffers,
                         round_up(tiling.tile_rows, SOURCE_ROWS) * tiling.in_pitch * isz)
        pipe.init_buffer(self.out_q, 2, tiling.chunk * tiling.out_pitch * isz)

    def process(self) -> None:
        tiling = self.tiling
        batches, a_tiles, b_tiles = tiling.tiles
        first = self.ctx.block_idx * tiling.per_core
        for item in range(first, min(first + tiling.per_core, batches * a_tiles * b_tiles)):
            block = self.block(item)
            self.copy_in(block)
            x = self.in_q.deque()
            for c0 in range(0, block.cols, tiling.chunk):
                cols = min(tiling.chunk, block.cols - c0)
                self.compute(x, block, c0, cols)
                self.copy_out(block, c0, cols)
            self.in_q.free_tensor(x)

    def block(self, item: int) -> Block:
        """Tile `item` of (batch, A tile, B tile), B fastest: its GM offsets and extent."""
        tiling = self.tiling
        _, a_tiles, b_tiles = tiling.tiles
        rest, ib = divmod(item, b_tiles)
        rest, ia = divmod(rest, a_tiles)
        src = dst = 0
        for size, in_stride, out_stride in reversed(tiling.batch):
            rest, c = divmod(rest, size)
            src += c * in_stride
            dst += c * out_stride
        a0, b0 = ia * tiling.tile_rows, ib * tiling.tile_cols
        src += a0 * tiling.row_stride + b0
        dst += b0 * tiling.col_stride + a0
        return Block(src, dst, min(tiling.tile_rows, tiling.rows - a0),
                     min(tiling.tile_cols, tiling.cols - b0))

    def copy_in(self, block: Block) -> None:
        """Ta rows of Tb elements, `row_stride` apart in GM, into rows of `in_pitch`."""
        tiling, isz = self.tiling, self.dtype.itemsize
        x = self.in_q.alloc_tensor(self.dtype)
        gap = (tiling.row_stride - block.cols) * isz if block.rows > 1 else 0
        ub_gap = (tiling.in_pitch - round_up(block.cols, self.ctx.chip.block_elems(isz))) \
            * isz // self.ctx.chip.block_bytes
        asc.data_copy_pad(x, self.x[block.src],
                          asc.DataCopyExtParams(block.rows, block.cols * isz, gap, ub_gap))
        self.in_q.enque(x)

    def compute(self, x: asc.LocalTensor, block: Block, c0: int, cols: int) -> None:
        """Output rows c0 .. c0 + cols - 1 (source columns): per band of 16 source rows one
        TransDataTo5HD, a repeat per block of source columns."""
        tiling = self.tiling
        y = self.out_q.alloc_tensor(self.dtype)
        blk = self.ctx.chip.block_elems(self.dtype.itemsize)
        repeats = ceil_div(cols, self.out_block)
        in_pitch, out_pitch = tiling.in_pitch, tiling.out_pitch
        strides = (0, 0) if repeats == 1 else (self.out_block * out_pitch // blk,
                                               self.out_block // blk)
        params = asc.TransDataTo5HDParams(False, False, repeats, *strides)
        for band in range(0, round_up(block.rows, SOURCE_ROWS), SOURCE_ROWS):
            src = [x[(band + i) * in_pitch + c0] for i in range(SOURCE_ROWS)]
            if self.out_block == 16:         # b16: dst block j is output row j
                dst = [y[j * out_pitch + band] for j in range(16)]
            else:                            # b32: blocks 2j, 2j + 1 are output row j
                dst = [y[(j // 2) * out_pitch + band + 8 * (j % 2)] for j in range(16)]
            asc.trans_data_to_5hd(dst, src, params)
        self.out_q.enque(y)

    def copy_out(self, block: Block, c0: int, cols: int) -> None:
        """The chunk's rows, each Ta output elements, `col_stride` apart in GM."""
        tiling, isz = self.tiling, self.dtype.itemsize
        y = self.out_q.deque()
        gap = (tiling.col_stride - block.rows) * isz if cols > 1 else 0
        ub_gap = (tiling.out_pitch - round_up(block.rows, self.ctx.chip.block_elems(isz))) \
            * isz // self.ctx.chip.block_bytes
        asc.data_copy_pad(self.y[block.dst + c0 * tiling.col_stride], y,
                          asc.DataCopyExtParams(cols, block.rows * isz, ub_gap, gap))
        self.out_q.free_tensor(y)


def transpose_tiles_kernel(ctx: KernelContext, x: asc.GlobalTensor, y: asc.GlobalTensor) -> None:
    TransposeKernel(ctx, x, y).process()


# ---------------------------------------------------------------- registration

def _tiling(ins, outs, attrs, chip, config):
    x, out = ins[0], outs[0]
    rank = len(x.shape)
    perm = tuple(reversed(range(rank))) if attrs["perm"] is None else tuple(attrs["perm"])
    shape, sperm = simplified(x.shape, perm)
    tiles = x.itemsize in (2, 4)         # TransDataTo5HD takes b16 and b32
    if not shape or 0 in x.shape or sperm[-1] == len(shape) - 1 or not tiles:
        src_strides = tuple(x.strides[p] for p in perm)
        part = grid_part(0, 1, out.shape, src_strides, out.strides,
                         (DimMap(),) * len(out.shape))
        return row_plan([part], out.dtype, chip, config)
    return tile_plan(shape, sperm, out.dtype, chip, config)


def transpose_kernel(ctx: KernelContext, x: asc.GlobalTensor, y: asc.GlobalTensor) -> None:
    """Rows moved (the last dim stays) or tiles transposed (it moves)."""
    if isinstance(ctx.tiling, RowMoveTiling):
        return make_kernel("transpose_kernel")(ctx, x, y)
    return transpose_tiles_kernel(ctx, x, y)


def _declines(in_descs, attrs) -> str | None:
    return "padded storage runs on the shim" if in_descs[0].is_padded else None


register_kernel(KernelEntry(op="Transpose", kernel=transpose_kernel, tiling=_tiling,
                            dtypes=MOVE_DTYPES, built_for_runtime=BUILT_FOR_RUNTIME,
                            declines=_declines, tuning_space=TUNING_SPACE))
