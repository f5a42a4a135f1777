"""Moves into the Cube's buffers that are not plain DataCopys: GM -> L1 with ND -> NZ conversion
(MTE2), L1 -> BiasTable (MTE1), L1 -> Fixpipe buffer (FIX), and Fill of L1 / L0A / L0B.

[ND2NZ]: each of n_value rows of d_value elements is read from GM and written to L1 as whole
32-byte blocks (the last one zero-padded), block k of row j at (j * dst_nz_n_stride +
k * dst_nz_c0_stride) blocks; with dst_nz_n_stride 1 and dst_nz_c0_stride ceil16(rows) that is
the NZ layout. [BT]: block_len and dst gap in 64 bytes, the source gap in 32-byte blocks; a
half source widens to float. [FB]: block_len and dst gap in 128 bytes. [FILL]: a block is 32
bytes in L1 and one 512-byte fractal in L0A / L0B.
"""

from __future__ import annotations

from functools import lru_cache, partial
from typing import Any

import numpy as np
from numpy.lib.stride_tricks import as_strided

from ...intmath import ceil_div, round_up
from ..datamove import DataCopyParams
from ..errors import IllegalInstruction
from ..gm import GlobalTensor
from ..lockstep import as_blocks, lead_strided, lockstep
from ..observe import Access, Rows, Space
from ..pipe import LocalTensor
from ..timeline import Pipe
from .operands import BF16, F16, F32, I32, U64, dtype_in, local, strided
from .params import InitConstValueParams, Nd2NzParams, check


def data_copy(dst: Any, src: Any, params: Any) -> None:
    """The Cube's DataCopy overloads (datamove.data_copy hands them here). The operands are
    whatever the kernel passed: each branch checks them the chip's way."""
    if isinstance(params, Nd2NzParams):
        if not isinstance(src, GlobalTensor):
            raise IllegalInstruction("data_copy with Nd2NzParams reads GM: src must be a "
                                     "GlobalTensor")
        _nd2nz(local(dst, (Space.L1,), "data_copy(Nd2NzParams)", "dst"), src, params)
    elif isinstance(dst, LocalTensor) and dst.space is Space.BT:
        _to_bias_table(dst, local(src, (Space.L1,), "data_copy into the BiasTable", "src"),
                       params)
    elif isinstance(dst, LocalTensor) and dst.space is Space.FB:
        _to_fixpipe_buffer(dst, local(src, (Space.L1,), "data_copy into the Fixpipe buffer",
                                      "src"), params)
    else:
        raise IllegalInstruction(
            f"data_copy from {src.space.value} to {dst.space.value}: between a Cube core's own "
            f"memories data_copy moves L1 -> BiasTable and L1 -> Fixpipe buffer only (L1 -> "
            f"L0A/L0B is load_data, L0C -> L1 is fixpipe) [MVIN]")


# ---------------------------------------------------------------- GM -> L1, ND -> NZ

def _nd2nz(l1: LocalTensor, gm: GlobalTensor, p: Nd2NzParams) -> None:
    what = "data_copy(Nd2NzParams)"
    check(p, what)
    core = l1.core
    core.check_aligned(Space.L1, l1.offset, f"{what} dst")
    if gm.itemsize != l1.itemsize:
        raise IllegalInstruction(f"{what}: GM {gm.dtype.name} into L1 {l1.dtype.name}: the "
                                 f"copy converts layout, not type")
    if not (p.nd_num and p.n_value and p.d_value):
        core.issue(Pipe.MTE2, "data_copy", 0)      # a NOP still passes through the pipe
        if core.observers:
            core.observe(Pipe.MTE2, "data_copy", (), ())
        return
    isz = l1.itemsize
    blk = core.chip.block_bytes
    row = p.d_value * isz
    blocks = ceil_div(row, blk)
    src_mat, src_row = p.src_nd_matrix_stride * isz, p.src_d_value * isz
    dst_mat, dst_row, dst_col = p.dst_nz_matrix_stride * isz, p.dst_nz_n_stride * blk, \
        p.dst_nz_c0_stride * blk
    span_src = (p.nd_num - 1) * src_mat + (p.n_value - 1) * src_row + row
    span_dst = (p.nd_num - 1) * dst_mat + (p.n_value - 1) * dst_row + (blocks - 1) * dst_col + blk
    src = gm.region(0, span_src, core.core_id, "reads", strict=core.mode.debug)
    dst = core.local_view(Space.L1, l1.offset, span_dst, what)
    nbytes = p.nd_num * p.n_value * row
    grid = core.burst_grid
    aligned = gm.addr % grid == 0 and (p.n_value * p.nd_num == 1 or
                                       (src_row % grid == 0 and src_mat % grid == 0))
    core.gm_move(Pipe.MTE2, "data_copy", gm, 0, p.n_value, row, src_row, write=False,
                 aligned=aligned, outer=p.nd_num, outer_pitch=src_mat)
    out = strided(dst, dst.dtype, (p.nd_num, p.n_value, blocks, blk),
                  (dst_mat, dst_row, dst_col, 1))
    core.execute_gm(partial(_nd2nz_rows, out, row, src_mat, src_row), gm, 0, src)
    if core.observers:
        reads, writes = _nd2nz_accesses(l1, gm, p, isz, blk)
        core.observe(Pipe.MTE2, "data_copy", reads, writes, nbytes)


@lockstep
def _nd2nz_rows(out: np.ndarray, row: int, src_mat: int, src_row: int,
                gm_bytes: np.ndarray) -> None:
    """GM rows of `row` bytes into `out` (matrices, rows, C0 blocks, block bytes), each row
    zero-padded to whole blocks (leading axes: cores, lockstep.py)."""
    nd_num, n_value, blocks, blk = out.shape[-4:]
    full, tail = divmod(row, blk)
    rows = lead_strided(gm_bytes, (nd_num, n_value, row), (src_mat, src_row, 1))
    whole = rows[..., :full * blk]
    np.copyto(as_blocks(out[..., :full, :]),
              as_blocks(np.reshape(whole, (*whole.shape[:-1], full, blk), copy=False)))
    if tail:                                  # the last block: the row's end, zero-padded
        out[..., full, :tail] = rows[..., full * blk:]
        out[..., full, tail:] = 0


def _nd2nz_accesses(l1: LocalTensor, gm: GlobalTensor, p: Nd2NzParams, isz: int, blk: int):
    """GM rows read, L1 elements written (rows x d_value, lane-aligned with the reads) and
    the zero padding written to finish each row's last block."""
    if p.nd_num == 1:
        src = Access(Space.GM, gm.addr, isz, Rows(p.n_value, p.d_value, p.src_d_value), "src",
                     tensor=gm)
    else:
        offs = (np.arange(p.nd_num)[:, None, None] * p.src_nd_matrix_stride
                + np.arange(p.n_value)[None, :, None] * p.src_d_value
                + np.arange(p.d_value)).reshape(-1, p.d_value)
        src = Access(Space.GM, gm.addr, isz, offs, "src", tensor=gm)
    data, pad = _nd2nz_dst(p.nd_num, p.n_value, p.d_value, p.dst_nz_matrix_stride,
                           p.dst_nz_n_stride, p.dst_nz_c0_stride, blk // isz)
    writes = [Access(Space.L1, l1.offset, isz, data, "dst")]
    if pad.size:
        writes.append(Access(Space.L1, l1.offset, isz, pad, "pad", const=True))
    return (src,), tuple(writes)


@lru_cache(maxsize=128)
def _nd2nz_dst(nd_num, n_value, d_value, mat, n_stride, c0_stride, c0):
    """Element offsets in L1 of each copied element (rows, d_value) and of the padding."""
    elems = round_up(d_value, c0)
    col = np.arange(elems)
    per_col = (col // c0) * c0_stride * c0 + col % c0
    rows = (np.arange(nd_num)[:, None] * mat + np.arange(n_value)[None, :] * n_stride * c0)
    offs = rows.reshape(-1, 1) + per_col
    return offs[:, :d_value], offs[:, d_value:]


# ---------------------------------------------------------------- L1 -> BiasTable, Fixpipe buffer

def _to_bias_table(bt: LocalTensor, l1: LocalTensor, p: DataCopyParams) -> None:
    """[BT]: block_len and dst gap in 64 B (of the destination), src gap in 32 B blocks; half
    widens to float, int32 and float copy as they are. The move runs on MTE1 [U]."""
    what = "data_copy into the BiasTable"
    _check_copy_params(p, what, 1, 4095)
    core = bt.core
    dtype_in(l1, (F16, F32, I32), what, "src")
    dtype_in(bt, (F32, I32), what, "dst")
    if (l1.dtype == I32) != (bt.dtype == I32):
        raise IllegalInstruction(f"{what}: {l1.dtype.name} into {bt.dtype.name} (int32 stays "
                                 f"int32, half and float become float)")
    core.check_aligned(Space.L1, l1.offset, f"{what} src")
    core.check_aligned(Space.BT, bt.offset, f"{what} dst")
    unit = core.chip.bias_table_align              # 64-byte units on the BiasTable side
    elems = p.block_len * unit // bt.itemsize      # destination elements per block
    src_pitch = elems * l1.itemsize + p.src_stride * core.chip.block_bytes
    dst_pitch = (p.block_len + p.dst_stride) * unit
    src = core.local_view(Space.L1, l1.offset, (p.block_count - 1) * src_pitch
                          + elems * l1.itemsize, what)
    dst = core.local_view(Space.BT, bt.offset, (p.block_count - 1) * dst_pitch
                          + elems * bt.itemsize, what)
    if p.block_len:
        s = as_strided(src, (p.block_count, elems * l1.itemsize), (src_pitch, 1))
        d = as_strided(dst, (p.block_count, elems * bt.itemsize), (dst_pitch, 1), writeable=True)
        core.execute(partial(_widen, d, s, l1.dtype, bt.dtype))
    nbytes = p.block_count * elems * bt.itemsize
    core.issue(Pipe.MTE1, "data_copy", core.costs.mte1(nbytes, "BT"))
    if core.observers:
        core.observe(Pipe.MTE1, "data_copy",
                     (Access(Space.L1, l1.offset, l1.itemsize,
                             Rows(p.block_count, elems, src_pitch // l1.itemsize), "src"),),
                     (Access(Space.BT, bt.offset, bt.itemsize,
                             Rows(p.block_count, elems, dst_pitch // bt.itemsize), "dst"),),
                     nbytes)


def _to_fixpipe_buffer(fb: LocalTensor, l1: LocalTensor, p: DataCopyParams) -> None:
    """[FB]: uint64 quantisation words; block_count [1, 4095], block_len and dst gap in
    128-byte units. The move runs on the Fixpipe [U]."""
    what = "data_copy into the Fixpipe buffer"
    _check_copy_params(p, what, 1, 4095)
    core = fb.core
    dtype_in(l1, (U64,), what, "src")
    dtype_in(fb, (U64,), what, "dst")
    core.check_aligned(Space.L1, l1.offset, f"{what} src")
    core.check_aligned(Space.FB, fb.offset, f"{what} dst")
    unit = core.chip.fixpipe_buffer_align
    width = p.block_len * unit
    src_pitch = width + p.src_stride * core.chip.block_bytes
    dst_pitch = width + p.dst_stride * unit
    src = core.local_view(Space.L1, l1.offset, (p.block_count - 1) * src_pitch + width, what)
    dst = core.local_view(Space.FB, fb.offset, (p.block_count - 1) * dst_pitch + width, what)
    if width:
        core.execute(partial(np.copyto,
                             as_strided(dst, (p.block_count, width), (dst_pitch, 1),
                                        writeable=True),
                             as_strided(src, (p.block_count, width), (src_pitch, 1))))
    nbytes = p.block_count * width
    core.issue(Pipe.FIX, "data_copy", core.costs.fixpipe_local(nbytes, "FB"))
    if core.observers:
        rows = p.block_count
        core.observe(Pipe.FIX, "data_copy",
                     (Access(Space.L1, l1.offset, 1, Rows(rows, width, src_pitch), "src"),),
                     (Access(Space.FB, fb.offset, 1, Rows(rows, width, dst_pitch), "dst"),),
                     nbytes)


def _widen(dst: np.ndarray, src: np.ndarray, src_dtype: np.dtype, dst_dtype: np.dtype) -> None:
    dst[...] = src.copy().view(src_dtype).astype(dst_dtype).view(np.uint8)


def _check_copy_params(p, what: str, lo: int, hi: int) -> None:
    if not isinstance(p, DataCopyParams):
        raise IllegalInstruction(f"{what} takes DataCopyParams, got {type(p).__name__}")
    if not lo <= p.block_count <= hi:
        raise IllegalInstruction(f"{what} block_count {p.block_count} outside [{lo}, {hi}]")
    for name in ("block_len", "src_stride", "dst_stride"):
        v = getattr(p, name)
        if not 0 <= v <= 65535:
            raise IllegalInstruction(f"{what} {name} {v} outside [0, 65535]")


# ---------------------------------------------------------------- Fill

def fill(dst: LocalTensor, params: InitConstValueParams) -> None:
    """Fill (InitConstValue): set `repeat_times` runs of `block_num` blocks to `init_value`.
    Runs on MTE1 [U]."""
    what = "fill"
    dst = local(dst, (Space.L1, Space.L0A, Space.L0B), what, "dst")
    check(params, what)
    dtype_in(dst, (F16, BF16, F32, I32, np.dtype(np.uint32), np.dtype(np.int16),
                   np.dtype(np.uint16)), what, "dst")
    core = dst.core
    core.check_aligned(dst.space, dst.offset, f"{what} dst")
    chip = core.chip
    blk = chip.block_bytes if dst.space is Space.L1 else chip.fractal_bytes
    width = params.block_num * blk
    pitch = width + params.dst_gap * blk
    count = params.repeat_times if width else 0
    if count:
        region = core.local_view(dst.space, dst.offset, (count - 1) * pitch + width, what)
        rows = as_strided(region, (count, width), (pitch, 1), writeable=True)
        core.execute(partial(np.copyto, rows.view(dst.dtype),
                             np.asarray(params.init_value).astype(dst.dtype)))
    nbytes = count * width
    core.issue(Pipe.MTE1, what, core.costs.mte1(nbytes, dst.space.value) if count else 0)
    if core.observers:
        writes = (Access(dst.space, dst.offset, 1, Rows(count, width, pitch), "dst",
                         const=True),) if count else ()
        core.observe(Pipe.MTE1, what, (), writes, nbytes)
