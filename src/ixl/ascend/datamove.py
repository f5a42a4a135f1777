"""DataCopy and DataCopyPad between GM and UB (or L1), on the MTE2 (in) and MTE3 (out) pipes.

The chip's rules ([DC], [DCP] in ascend-facts): the UB address is 32-byte aligned; a DataCopy
length that is not a multiple of 32 bytes is silently truncated down (debug mode refuses it and
names the bytes lost); DataCopyPad pads each block to 32 bytes in UB and writes GM byte-exact.
A Cube core's DataCopy between GM and L1 follows the same rules [GM2L1]; the copies that
convert or feed the Cube's own buffers (ND2NZ into L1, L1 into the BiasTable) are in cube/.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

import numpy as np
from numpy.lib.stride_tricks import as_strided

from .cube.params import Nd2NzParams
from .errors import IllegalInstruction, TruncatedCopy
from .gm import GlobalTensor
from .lockstep import lead_strided, lockstep
from .observe import Access, Rows, Space
from .pipe import LocalTensor
from .timeline import Pipe


@dataclass(frozen=True)
class DataCopyParams:
    """Strided DataCopy: every field in 32-byte blocks; strides are gaps between blocks."""

    block_count: int = 1
    block_len: int = 0
    src_stride: int = 0
    dst_stride: int = 0


@dataclass(frozen=True)
class DataCopyExtParams:
    """DataCopyPad: block_len in bytes; the GM-side stride in bytes, the UB-side in 32-byte
    blocks."""

    block_count: int = 1
    block_len: int = 0
    src_stride: int = 0
    dst_stride: int = 0


@dataclass(frozen=True)
class DataCopyPadExtParams:
    """Padding in elements on each side of a block (32 bytes at most each), and its value."""

    is_pad: bool = False
    left_pad: int = 0
    right_pad: int = 0
    value: float = 0


NO_PAD = DataCopyPadExtParams()


def _direction(dst, src, what: str = "data_copy") -> tuple[LocalTensor, GlobalTensor, bool]:
    if isinstance(dst, LocalTensor) and isinstance(src, GlobalTensor):
        return dst, src, True
    if isinstance(dst, GlobalTensor) and isinstance(src, LocalTensor):
        return src, dst, False
    raise IllegalInstruction(
        f"{what} between {_where(src)} and {_where(dst)}: it moves GM->UB or GM->L1 (MTE2) "
        f"and UB->GM or L1->GM (MTE3); L1->BiasTable and L1->Fixpipe buffer are data_copy "
        f"too; there is no direct UB<->L1 path on A2 (go through a GM workspace) [UB2L1]")


def _where(t) -> str:
    return t.space.value if isinstance(t, LocalTensor) else type(t).__name__


def _rows(buf: np.ndarray, start: int, count: int, width: int, pitch: int) -> np.ndarray:
    """`count` rows of `width` bytes, `pitch` bytes apart, starting at byte `start` of `buf`."""
    return as_strided(buf[start:], shape=(count, width), strides=(pitch, 1), writeable=True)


@lockstep
def _copy(local_rows: np.ndarray, count: int, gm_pitch: int, inbound: bool,
          gm_view: np.ndarray) -> None:
    """GM rows `gm_pitch` bytes apart to or from `local_rows` (leading axes: cores,
    lockstep.py)."""
    gm_rows = gm_view if count == 1 else \
        lead_strided(gm_view, (count, local_rows.shape[-1]), (gm_pitch, 1))
    if inbound:
        local_rows[...] = gm_rows
    else:
        gm_rows[...] = local_rows


def _move(local: LocalTensor, gm: GlobalTensor, inbound: bool, *, count: int, width: int,
          ub_pitch: int, gm_pitch: int, what: str, ub_lead: int = 0,
          ub_block: int = 0) -> np.ndarray | None:
    """Check both sides, copy `count` blocks of `width` bytes, and time the move.

    Each UB block starts `ub_lead` bytes into its row and, on the way in, is padded to
    `ub_block` bytes. Returns the UB rows (None when nothing moved) so that DataCopyPad can
    fill its padding.
    """
    core = local.core
    core.check_aligned(local.space, local.offset, f"{what} {'dst' if inbound else 'src'}")
    pipe = Pipe.MTE2 if inbound else Pipe.MTE3
    if count == 0 or width == 0:
        core.issue(pipe, what, 0)   # a NOP, but it still passes through the pipe
        if core.observers:
            core.observe(pipe, what, (), ())
        return None
    gm_bytes = gm.region(0, (count - 1) * gm_pitch + width, core.core_id,
                         "reads" if inbound else "writes", strict=core.mode.debug)
    ub_bytes = core.local_view(local.space, local.offset,
                               (count - 1) * ub_pitch + ub_lead + width, what)
    grid = core.burst_grid
    aligned = gm.addr % grid == 0 and (count == 1 or gm_pitch % grid == 0)
    core.gm_move(pipe, what, gm, 0, count, width, gm_pitch, write=not inbound, aligned=aligned)
    if count == 1:
        local_rows = ub_bytes[ub_lead:]
    else:
        local_rows = _rows(ub_bytes, ub_lead, count, width, ub_pitch)
    core.execute_gm(partial(_copy, local_rows, count, gm_pitch, inbound), gm, 0, gm_bytes)
    rows = None if core.mode.timing_only else ub_bytes
    if core.observers:
        _observe(core, pipe, what, local, gm, inbound, count, width, ub_pitch, gm_pitch, ub_lead,
                 ub_block)
    return rows


def _observe(core, pipe, what, local, gm, inbound, count, width, ub_pitch, gm_pitch, ub_lead,
             ub_block) -> None:
    """Report a move's GM rows and UB rows (and, into UB, the padding it writes)."""
    gm_rows = gm.access(0, Rows(count, width, gm_pitch), "src" if inbound else "dst")
    ub_rows = Access(local.space, local.offset + ub_lead, 1, Rows(count, width, ub_pitch),
                     "dst" if inbound else "src")
    if not inbound:
        core.observe(pipe, what, (ub_rows,), (gm_rows,), count * width)
        return
    pads = []
    if ub_lead:
        pads.append(Access(Space.UB, local.offset, 1, Rows(count, ub_lead, ub_pitch), "pad",
                           const=True))
    right = ub_block - ub_lead - width
    if right > 0:
        pads.append(Access(Space.UB, local.offset + ub_lead + width, 1,
                           Rows(count, right, ub_pitch), "pad", const=True))
    core.observe(pipe, what, (gm_rows,), (ub_rows, *pads), count * width)


def data_copy(dst: LocalTensor | GlobalTensor, src: LocalTensor | GlobalTensor,
              count_or_params: int | DataCopyParams | Nd2NzParams) -> None:
    """DataCopy(dst, src, count) or DataCopy(dst, src, DataCopyParams) between GM and UB or L1;
    DataCopy(L1, GM, Nd2NzParams) and the copies into the BiasTable and the Fixpipe buffer
    are the Cube's (cube/copy.py)."""
    if _cube_copy(dst, src, count_or_params):
        from .cube.copy import data_copy as cube_data_copy  # cube/copy.py builds on this module
        cube_data_copy(dst, src, count_or_params)
        return
    local, gm, inbound = _direction(dst, src)
    blk = local.core.chip.block_bytes
    if isinstance(count_or_params, DataCopyParams):
        p = count_or_params
        if not 0 <= p.block_count <= local.core.chip.max_copy_blocks:
            raise IllegalInstruction(f"data_copy block_count {p.block_count} outside "
                                     f"[0, {local.core.chip.max_copy_blocks}]")
        ub_gap, gm_gap = (p.dst_stride, p.src_stride) if inbound else (p.src_stride, p.dst_stride)
        width = p.block_len * blk
        _move(local, gm, inbound, count=p.block_count, width=width,
              ub_pitch=width + ub_gap * blk, gm_pitch=width + gm_gap * blk, what="data_copy")
        return
    assert not isinstance(count_or_params, Nd2NzParams)     # the Cube's copy, above
    count = int(count_or_params)
    if count < 0:
        raise IllegalInstruction(f"data_copy count {count} is negative")
    nbytes = count * local.itemsize
    lost = nbytes % blk
    if lost and local.core.mode.debug:
        raise TruncatedCopy(
            f"data_copy of {count} x {local.dtype} = {nbytes} bytes is not a multiple of {blk} "
            f"bytes: the chip copies {nbytes - lost} and silently loses the last {lost} bytes "
            f"({lost // local.itemsize} elements); use data_copy_pad for the tail")
    _move(local, gm, inbound, count=1, width=nbytes - lost, ub_pitch=0, gm_pitch=0,
          what="data_copy")


def _cube_copy(dst, src, params) -> bool:
    """Whether a DataCopy is one of the Cube's own (ND2NZ, or between two on-core memories)."""
    if isinstance(dst, LocalTensor) and isinstance(src, LocalTensor):
        return dst.space is not Space.UB and src.space is not Space.UB
    return isinstance(params, Nd2NzParams)


def data_copy_pad(dst: LocalTensor | GlobalTensor, src: LocalTensor | GlobalTensor,
                  params: DataCopyExtParams, pad: DataCopyPadExtParams | None = None) -> None:
    """DataCopyPad: byte-exact blocks; in UB each block is padded up to 32 bytes."""
    local, gm, inbound = _direction(dst, src, "data_copy_pad")
    if local.space is not Space.UB:
        raise IllegalInstruction(f"data_copy_pad moves between GM and UB only, not "
                                 f"{local.space.value} [DCP]")
    chip = local.core.chip
    blk = chip.block_bytes
    if not 0 <= params.block_count <= chip.max_copy_blocks:
        raise IllegalInstruction(f"data_copy_pad block_count {params.block_count} outside "
                                 f"[0, {chip.max_copy_blocks}]")
    if params.block_len < 0 or params.block_len > 2097151:
        raise IllegalInstruction(f"data_copy_pad block_len {params.block_len} outside [0, 2097151]")
    pad = pad or NO_PAD
    isz = local.itemsize
    left, right = pad.left_pad * isz, pad.right_pad * isz
    if left > blk or right > blk or (not inbound and (left or right)):
        raise IllegalInstruction(
            f"data_copy_pad padding of {pad.left_pad} + {pad.right_pad} elements: each side "
            f"takes at most {blk} bytes, and only on the way into UB")
    width = params.block_len
    ub_block = -(-(left + width + right) // blk) * blk
    ub_gap, gm_gap = ((params.dst_stride, params.src_stride) if inbound
                      else (params.src_stride, params.dst_stride))
    ub_pitch = ub_block + ub_gap * blk
    ub = _move(local, gm, inbound, count=params.block_count, width=width, ub_pitch=ub_pitch,
               gm_pitch=width + gm_gap, what="data_copy_pad", ub_lead=left if inbound else 0,
               ub_block=ub_block)
    if ub is None or not inbound or ub_block == width:
        return
    # Into UB: fill the padding around each block with the pad value or the block's first element.
    ub = local.core.ub_view(local.offset, (params.block_count - 1) * ub_pitch + ub_block,
                            "data_copy_pad")
    typed = _rows(ub, 0, params.block_count, ub_block, ub_pitch).view(local.dtype)
    lo, hi = left // isz, (left + width) // isz

    def fill_pads() -> None:
        fill = (np.full(params.block_count, pad.value, local.dtype) if pad.is_pad
                else typed[:, lo].copy())
        typed[:, :lo] = fill[:, None]
        typed[:, hi:] = fill[:, None]
    local.core.execute(fill_pads, self_contained=True)     # reads only what it copied in
