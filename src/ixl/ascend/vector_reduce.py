"""Block reductions on the V pipe: one result per 32-byte block (Ascend C's BlockReduceSum /
BlockReduceMax / BlockReduceMin, renamed ReduceDataBlock).

A row that is a whole number of repeats shrinks by the block size per instruction, at the
throughput [VECPERF] gives ReduceDataBlock (the simple-op rate in 32-bit, the whole-repeat
reduce rate in 16-bit), which is what makes long float32 rows cheap to reduce. Same rules as
vector.py: mask and repeat as for any vector instruction; masked-off lanes take no part; a block
with no active lane leaves its result untouched ([U]: the documentation does not say);
dst_rep_stride counts one repeat's results (8 elements), as in Ascend C.
"""

from __future__ import annotations

from functools import lru_cache, partial

import numpy as np

from .pipe import LocalTensor
from .timeline import Pipe
from .ubbanks import Operand
from .vector import (
    _FLOAT,
    _check_aligned,
    _check_dtype,
    _check_extent,
    _indices,
    _lane_mask,
    _mask_key,
    _strided,
)

# The cost-table row of ReduceDataBlock by operand width (see VECTOR_CLASS in costs.py).
_COST_KEY = {2: "block_reduce_16", 4: "block_reduce_32"}


def _block_reduce(op: str, fn, identity: float):
    def instr(dst: LocalTensor, src: LocalTensor, mask, repeat_times: int,
              dst_rep_stride: int = 1, src_blk_stride: int = 1, src_rep_stride: int = 8) -> None:
        _check_dtype(op, dst, _FLOAT)
        _check_dtype(op, src, _FLOAT)
        _check_aligned(op, (dst, "dst"), (src, "src"))
        core = dst.core
        idx, lanes = _strided(op, [(src, src_blk_stride, src_rep_stride, "src")], mask,
                              repeat_times)
        operands = ((), ())
        if idx is not None:
            blk = core.chip.block_elems(src.itemsize)
            blocks = lanes // blk
            on, written, out, end = _results(repeat_times, dst_rep_stride, blk, lanes,
                                             _mask_key(mask))
            _check_extent(op, dst, end, "dst")
            if core.observers:
                operands = _block_operands(dst, src, out, on, written, repeat_times,
                                           src_blk_stride, src_rep_stride)
            core.execute(partial(_reduce_blocks, dst.view(), out, src.view(), idx[0], on,
                                 written, fn, identity, repeat_times, blocks, blk))
        cost_key = _COST_KEY[src.itemsize]
        core.vector_issue(op, core.costs.vector(cost_key, src.itemsize, repeat_times * lanes),
                          (Operand(src.offset, src_blk_stride, src_rep_stride),), (),
                          repeat_times)
        if core.observers:
            core.observe(Pipe.V, op, *operands)
    instr.__name__ = op
    instr.__doc__ = (f"{op}(dst, src, mask, repeat_times, dst_rep_stride, src_blk_stride, "
                     f"src_rep_stride): one result per 32-byte block, 8 per repeat")
    return instr


@lru_cache(maxsize=512)
def _results(repeat_times: int, dst_rep_stride: int, blk: int, lanes: int, mask_key):
    """Where a block reduction's results go: the active lanes, the blocks with one, their dst
    offsets (repeat, written block; read-only) and one past the highest."""
    blocks = lanes // blk
    on = _lane_mask(mask_key, lanes)
    written = on.reshape(blocks, blk).any(axis=1)
    out = (np.arange(repeat_times)[:, None] * (dst_rep_stride * blocks)
           + np.arange(blocks)[None, :])[:, written]
    out.flags.writeable = False
    return on, written, out, int(out.max()) + 1


def _block_operands(dst, src, out, on, written, repeat_times, blk_stride, rep_stride):
    """(reads, writes) for observers: result (r, b) from the active lanes of block b of
    repeat r, given as (repeat, written blocks, block) offsets; a masked-off lane repeats an
    active lane of its block, so every position is a lane the result depends on."""
    chip = src.core.chip
    blk = chip.block_elems(src.itemsize)
    blocks = len(written)
    lanes_idx = _indices(repeat_times, blk_stride, rep_stride, blk, blocks * blk, blocks * blk)
    lanes_idx = lanes_idx.reshape(repeat_times, blocks, blk)[:, written]
    active = on.reshape(blocks, blk)[written]
    first = active.argmax(axis=1)
    pick = np.where(active, np.arange(blk), first[:, None])
    reads = lanes_idx[:, np.arange(len(pick))[:, None], pick]
    return (src.access(reads, "src"),), (dst.access(out, "dst"),)


block_reduce_sum = _block_reduce("block_reduce_sum", np.sum, 0.0)
block_reduce_max = _block_reduce("block_reduce_max", np.max, -np.inf)
block_reduce_min = _block_reduce("block_reduce_min", np.min, np.inf)


def _reduce_blocks(dst: np.ndarray, out: np.ndarray, src: np.ndarray, idx: np.ndarray,
                   on: np.ndarray, written: np.ndarray, fn, identity: float, repeat_times: int,
                   blocks: int, blk: int) -> None:
    vals = np.full((repeat_times, blocks * blk), identity, np.float32)
    vals[:, on] = src[idx]
    dst[out] = fn(vals.reshape(repeat_times, blocks, blk), axis=2)[:, written]
