"""Unified Buffer helpers every template uses: moving data between GM and UB (whole blocks with
DataCopy, tails and strided rows with DataCopyPad), converting between dtypes, filling, and
reading scalar operands. Each takes the limits it needs from the chip spec."""

from __future__ import annotations

import math
from collections.abc import Iterator

import numpy as np

from ..ascend import lang as asc
from ..ascend.chips import ChipSpec
from ..intmath import ceil_div, round_up


def chunks(total: int, limit: int, unit_bytes: int, block_bytes: int) -> Iterator[tuple[int, int]]:
    """(start, n) pieces of `total` units, n <= limit, each start on a block boundary."""
    step = block_bytes // math.gcd(block_bytes, unit_bytes)
    size = max(step, limit // step * step)
    for start in range(0, total, size):
        yield start, min(size, total - start)


def copy(dst: asc.LocalTensor | asc.GlobalTensor, src: asc.LocalTensor | asc.GlobalTensor,
         count: int) -> None:
    """`count` contiguous elements between GM and UB, either way: one DataCopy when they are
    whole 32-byte blocks, else a DataCopyPad (byte-exact in GM, padded to a block in UB)."""
    local = dst if isinstance(dst, asc.LocalTensor) else src
    assert isinstance(local, asc.LocalTensor)       # one side is UB
    nbytes = count * local.itemsize
    if nbytes % local.core.chip.block_bytes == 0:
        asc.data_copy(dst, src, count)
    else:
        asc.data_copy_pad(dst, src, asc.DataCopyExtParams(1, nbytes, 0, 0))


def copy_rows(dst: asc.LocalTensor | asc.GlobalTensor, src: asc.LocalTensor | asc.GlobalTensor,
              rows: int, count: int, gm_pitch: int, ub_pitch: int,
              pad: float | None = None) -> None:
    """`rows` rows of `count` elements between GM (rows `gm_pitch` apart) and UB (`ub_pitch`
    apart, each row padded to a block with `pad`, or its first element when None)."""
    local = dst if isinstance(dst, asc.LocalTensor) else src
    assert isinstance(local, asc.LocalTensor)       # one side is UB
    inbound = local is dst
    chip, isz = local.core.chip, local.itemsize
    nbytes = count * isz
    contiguous = rows == 1 or count == gm_pitch == ub_pitch
    if contiguous and rows * nbytes % chip.block_bytes == 0:
        asc.data_copy(dst, src, rows * count)        # one burst, whole blocks
        return
    ub_gap = (ub_pitch * isz - round_up(nbytes, chip.block_bytes)) // chip.block_bytes
    gm_gap = (gm_pitch - count) * isz
    right = (-nbytes % chip.block_bytes) // isz
    padding = asc.DataCopyPadExtParams(True, 0, right, pad) if inbound and pad is not None \
        else None
    for r0, n in chunks(rows, chip.max_copy_blocks, chip.block_bytes, chip.block_bytes):
        params = asc.DataCopyExtParams(n, nbytes, gm_gap if inbound else ub_gap,
                                       ub_gap if inbound else gm_gap)
        if inbound:
            asc.data_copy_pad(dst[r0 * ub_pitch], src[r0 * gm_pitch], params, padding)
        else:
            asc.data_copy_pad(dst[r0 * gm_pitch], src[r0 * ub_pitch], params)


def convert(dst: asc.LocalTensor, src: asc.LocalTensor, count: int) -> None:
    """dst = src in dst's dtype: a copy, an exact widening, or a round to nearest even."""
    if dst.dtype == src.dtype:
        asc.muls(dst, src, 1.0, count)
    elif dst.itemsize > src.itemsize:
        asc.cast(dst, src, asc.RoundMode.CAST_NONE, count)
    else:
        asc.cast(dst, src, asc.RoundMode.CAST_RINT, count)


def as_bits(dst: asc.LocalTensor, value: float) -> tuple[asc.LocalTensor, int]:
    """dst's same-width integer view and `value`'s bits in it: a fill that works for any
    storage type (bfloat16 has no vector arithmetic, its bits do)."""
    bits = {2: np.int16, 4: np.int32}[dst.itemsize]
    return dst.reinterpret(bits), np.array(value, dst.dtype).view(bits).item()


def fill(dst: asc.LocalTensor, value: float, count: int) -> None:
    """Duplicate a value of dst's dtype."""
    asc.duplicate(*as_bits(dst, value), count)


def spread(dst: asc.LocalTensor, block: asc.LocalTensor, count: int) -> None:
    """Fill `count` elements of dst (rounded up to whole repeats) with the 32-byte block at
    `block`, which holds one value: adds of 0 with a source block stride of 0."""
    chip = dst.core.chip
    lanes = chip.lanes(dst.itemsize)
    repeats = ceil_div(count, lanes)
    params = asc.UnaryRepeatParams(dst_blk_stride=1, src_blk_stride=0,
                                   dst_rep_stride=8, src_rep_stride=0)
    for first in range(0, repeats, chip.max_repeat):
        asc.adds(dst[first * lanes], block, 0, lanes, min(chip.max_repeat, repeats - first),
                 params)


def read_scalars(pipe: asc.TPipe, chip: ChipSpec, srcs: dict) -> dict:
    """Scalar operands (input id -> one-element GM tensor): each into its own UB block, then
    read by the scalar unit after an MTE2 -> S flag."""
    if not srcs:
        return {}
    blocks = asc.TBuf()
    pipe.init_buffer(blocks, chip.block_bytes * len(srcs))
    values = {}
    for k, (i, src) in enumerate(srcs.items()):
        local = blocks.get(np.uint8)[k * chip.block_bytes].reinterpret(src.dtype)
        asc.data_copy_pad(local, src, asc.DataCopyExtParams(1, src.dtype.itemsize, 0, 0))
        asc.set_flag(asc.HardEvent.MTE2_S, 0)
        asc.wait_flag(asc.HardEvent.MTE2_S, 0)
        values[i] = local.get_value(0)
    return values


def abs_int(x: asc.LocalTensor, tmp: asc.LocalTensor, n: int) -> None:
    """x = |x| for int32 (Abs takes floats): max(x, -x)."""
    asc.muls(tmp, x, -1, n)
    asc.max(x, x, tmp, n)


def floor_div(dst: asc.LocalTensor, src: asc.LocalTensor, d: int, flt: asc.LocalTensor,
              n: int, keep: bool = False) -> None:
    """dst = floor(src / d) (with `keep`: src mod d) for int32 values of magnitude below
    2^22, through float32 scratch `flt`, where floor((src + 0.5) / d) is exact (the vector
    unit has no integer division)."""
    asc.cast(flt, src, asc.RoundMode.CAST_NONE, n)
    asc.adds(flt, flt, 0.5, n)
    asc.muls(flt, flt, 1.0 / d, n)
    if not keep:
        asc.cast(dst, flt, asc.RoundMode.CAST_FLOOR, n)
        return
    q = flt.reinterpret(np.int32)                        # src - d * floor(src / d)
    asc.cast(q, flt, asc.RoundMode.CAST_FLOOR, n)
    asc.muls(q, q, -d, n)
    asc.add(dst, src, q, n)
