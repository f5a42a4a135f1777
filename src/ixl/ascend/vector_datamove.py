"""Vector instructions that move elements inside UB: Gather, GatherMask, TransDataTo5HD, and
CreateVecIndex, which makes the index vectors they are driven by.

The rules (ascend-c-api section 9, [GATH], [GM], [5HD]):
- Gather: dst[i] = src[(src_base + offsets[i]) / sizeof(T)], offsets uint32 byte values; 16-
  and 32-bit types only; no aliasing; an offset that is not a multiple of the element size
  silently reads the element it falls in (the chip shifts data; here: the element below).
  Throughput 5 elements per cycle [VECPERF].
- GatherMask with a built-in pattern, counter mode (reduceMode true, the mask is the element
  count): pattern 1 keeps the even elements, 2 the odd ones, 3-6 element 0/1/2/3 of each 4, 7
  all of them; returns how many it kept (rsvdCnt). Throughput 64 (b16) / 32 (b32) [GM].
- TransDataTo5HD: 16 source and 16 destination block addresses; for b16, dst block j element
  i = src block i element j (a 16 x 16 transpose per repeat); for b32 the 16 source blocks hold
  a 16 x 8 matrix and its 8 x 16 transpose fills the destination blocks in pairs, block 2j + h
  holding elements 8h .. 8h + 7 of row j ([U]: the documentation says "2 dst blocks per column"
  without naming the pairing). Repeat r > 0 adds r times the repeat strides (32-byte blocks) to
  every address; with repeat_times 1 the hardware still adds them once, so strides must then
  be 0 (the documented pitfall, modeled). Throughput 128 (b16) / 64 (b32) [5HD]. b8 (the
  high-half flags) is not modeled.
- CreateVecIndex: dst[i] = first_value + i for the first `count` elements (half, float, int16,
  int32). Its throughput is not in [VECPERF]; the simple-op rate is assumed [U].
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

import numpy as np

from .errors import AicoreOutOfBound, IllegalInstruction
from .observe import Access, Space
from .pipe import LocalTensor
from .timeline import Pipe
from .ubbanks import BLOCK, Operand
from .vector import _check_aligned, _check_extent

_U32 = np.dtype(np.uint32)


def _check_width(op: str, *tensors: LocalTensor) -> None:
    for t in tensors:
        if t.itemsize not in (2, 4):
            raise IllegalInstruction(f"{op} takes 16- and 32-bit elements, got {t.dtype.name} "
                                     f"on {t.core.chip.arch}")


def _check_disjoint(op: str, dst: LocalTensor, dst_elems: int, *srcs) -> None:
    """No aliasing between dst and the sources ([GATH], [5HD]): the result is undefined."""
    lo, hi = dst.offset, dst.offset + dst_elems * dst.itemsize
    for t, n in srcs:
        if lo < t.offset + n * t.itemsize and t.offset < hi:
            raise IllegalInstruction(f"{op}: dst UB [{lo:#x}, {hi:#x}) overlaps a source "
                                     f"[{t.offset:#x}, {t.offset + n * t.itemsize:#x}); the "
                                     f"chip does not allow aliasing here")


# ---------------------------------------------------------------- CreateVecIndex

_INDEX_TYPES = frozenset(np.dtype(t) for t in (np.float16, np.float32, np.int16, np.int32))


def create_vec_index(dst: LocalTensor, first_value: float, count: int) -> None:
    """CreateVecIndex(dst, firstValue, count): dst[i] = first_value + i."""
    op = "create_vec_index"
    if dst.dtype not in _INDEX_TYPES:
        raise IllegalInstruction(f"{op} takes float16, float32, int16 or int32, got "
                                 f"{dst.dtype.name}")
    _check_aligned(op, (dst, "dst"))
    count = int(count)
    if count < 0:
        raise IllegalInstruction(f"{op} count {count} is negative")
    _check_extent(op, dst, count, "dst")
    core = dst.core
    if count:
        core.execute(partial(np.copyto, dst.view(count),
                             (np.arange(count, dtype=np.float64) + first_value).astype(dst.dtype)))
    core.issue(Pipe.V, op, core.costs.vector(op, dst.itemsize, count))
    if core.observers:
        core.observe(Pipe.V, op, (), (dst.access(count, "dst", const=True),) if count else ())


# ---------------------------------------------------------------- Gather

def gather(dst: LocalTensor, src: LocalTensor, offsets: LocalTensor, src_base: int,
           count: int) -> None:
    """Gather(dst, src, srcOffset, srcBaseAddr, count): dst[i] = src[(src_base + offsets[i])
    / sizeof(T)]; `offsets` holds uint32 byte offsets from src's start."""
    _check_width("gather", dst, src)
    if dst.dtype != src.dtype:
        raise IllegalInstruction(f"gather: dst is {dst.dtype.name}, src {src.dtype.name}; "
                                 f"they take one type")
    if offsets.dtype != _U32:
        raise IllegalInstruction(f"gather: offsets are uint32 byte offsets, got "
                                 f"{offsets.dtype.name}")
    _check_aligned("gather", (dst, "dst"), (src, "src"), (offsets, "offsets"))
    count = int(count)
    if count < 0:
        raise IllegalInstruction(f"gather count {count} is negative")
    _check_extent("gather", dst, count, "dst")
    _check_extent("gather", offsets, count, "offsets")
    core = dst.core
    read: list = []             # the elements the gather read, for its observers

    def gather_elements() -> None:
        """Its addresses are data: checked each time it runs, a replay too."""
        idx = (int(src_base) + offsets.view(count).astype(np.int64)) // src.itemsize
        last = int(idx.max()) + 1
        if src.offset + last * src.itemsize > core.chip.ub_bytes:
            raise AicoreOutOfBound(
                f"aicore memory out of bound: VEC instruction error: the ub address out of "
                f"bounds: core {core.core_id} gather src reaches UB "
                f"{src.offset + last * src.itemsize:#x}, UB holds {core.chip.ub_bytes} bytes")
        _check_extent("gather", src, last, "src")
        _check_disjoint("gather", dst, count, (src, last), (offsets, count))
        dst.view(count)[...] = src.view(last)[idx]
        read[:] = [idx]
    if count:
        core.execute(gather_elements)
    core.issue(Pipe.V, "gather", core.costs.vector("gather", dst.itemsize, count))
    if core.observers:
        ops: tuple[tuple[Access, ...], tuple[Access, ...]] = ((), ())
        if count:
            src_read = src.access(read[0] if read else src.count, "src")
            ops = ((offsets.access(count, "offsets"), src_read), (dst.access(count, "dst"),))
        core.observe(Pipe.V, "gather", *ops)


# ---------------------------------------------------------------- GatherMask

_PATTERNS = {1: (2, 0), 2: (2, 1), 3: (4, 0), 4: (4, 1), 5: (4, 2), 6: (4, 3), 7: (1, 0)}


def gather_mask(dst: LocalTensor, src: LocalTensor, pattern: int, count: int) -> int:
    """GatherMask(dst, src0, src1Pattern, reduceMode=true, mask=count, ...): the elements of
    the first `count` of src that the built-in pattern selects, packed into dst; returns how
    many were kept (rsvdCnt)."""
    _check_width("gather_mask", dst, src)
    if dst.itemsize != src.itemsize:
        raise IllegalInstruction(f"gather_mask: dst {dst.dtype.name} and src {src.dtype.name} "
                                 f"differ in width")
    if pattern not in _PATTERNS:
        raise IllegalInstruction(f"gather_mask pattern {pattern} outside the built-in 1..7")
    _check_aligned("gather_mask", (dst, "dst"), (src, "src"))
    count = int(count)
    if count < 0:
        raise IllegalInstruction(f"gather_mask count {count} is negative")
    step, first = _PATTERNS[pattern]
    picked = np.arange(first, count, step)
    kept = len(picked)
    _check_extent("gather_mask", src, count, "src")
    _check_extent("gather_mask", dst, kept, "dst")
    core = dst.core
    if kept:
        core.execute(partial(_pick, dst.view(kept), src.view(count), picked))
    core.issue(Pipe.V, "gather_mask", core.costs.vector("gather_mask", src.itemsize, count))
    if core.observers:
        ops = ((src.access(picked, "src"),), (dst.access(kept, "dst"),)) if kept else ((), ())
        core.observe(Pipe.V, "gather_mask", *ops)
    return kept


def _pick(out: np.ndarray, src: np.ndarray, picked: np.ndarray) -> None:
    out[...] = src[picked].view(out.dtype)


# ---------------------------------------------------------------- TransDataTo5HD

@dataclass(frozen=True)
class TransDataTo5HDParams:
    """Strides in 32-byte blocks, added per repeat to every address of the lists."""

    dst_high_half: bool = False
    src_high_half: bool = False
    repeat_times: int = 1
    dst_rep_stride: int = 0
    src_rep_stride: int = 0


def _lanes(blocks: list[LocalTensor], repeats: int, stride_elems: int, elems: int,
           first_moves: bool) -> np.ndarray:
    """UB element indices (address / element size) of each (repeat, block, element)."""
    isz = blocks[0].itemsize
    starts = np.array([t.offset // isz for t in blocks], np.int64)
    steps = np.arange(repeats, dtype=np.int64) + (1 if first_moves else 0)
    return (steps[:, None, None] * stride_elems + starts[None, :, None]
            + np.arange(elems, dtype=np.int64)[None, None, :])


def trans_data_to_5hd(dst_list: list[LocalTensor], src_list: list[LocalTensor],
                      params: TransDataTo5HDParams) -> None:
    """TransDataTo5HD(dstList, srcList, params): per repeat, a 16 x 16 (b16) or 16 x 8 (b32)
    block of 16 source blocks transposed into 16 destination blocks."""
    op = "trans_data_to_5hd"
    if len(dst_list) != 16 or len(src_list) != 16:
        raise IllegalInstruction(f"{op} takes 16 destination and 16 source addresses, got "
                                 f"{len(dst_list)} and {len(src_list)}")
    first = src_list[0]
    if any(t.itemsize != first.itemsize for t in (*dst_list, *src_list)):
        raise IllegalInstruction(f"{op}: every address takes one element width")
    if first.itemsize not in (2, 4):
        raise IllegalInstruction(f"{op}: this model takes b16 and b32 elements, got "
                                 f"{first.dtype.name} (b8 and its high-half flags are not "
                                 f"modeled)")
    if params.dst_high_half or params.src_high_half:
        raise IllegalInstruction(f"{op}: the high-half flags apply to b8 only")
    core = first.core
    repeats = params.repeat_times
    if not 0 <= repeats <= core.chip.max_repeat:
        raise IllegalInstruction(f"{op} repeat_times {repeats} outside [0, {core.chip.max_repeat}]")
    _check_aligned(op, *((t, f"dst[{i}]") for i, t in enumerate(dst_list)),
                   *((t, f"src[{i}]") for i, t in enumerate(src_list)))
    blk = core.chip.block_elems(first.itemsize)
    moves_once = repeats == 1
    src_idx = dst_idx = None
    if repeats:
        src_idx = _lanes(src_list, repeats, params.src_rep_stride * blk, blk, moves_once)
        dst_idx = _lanes(dst_list, repeats, params.dst_rep_stride * blk, blk, moves_once)
        for idx, role in ((src_idx, "src"), (dst_idx, "dst")):
            end = (int(idx.max()) + 1) * first.itemsize
            if end > core.chip.ub_bytes:
                raise AicoreOutOfBound(
                    f"aicore memory out of bound: VEC instruction error: the ub address out "
                    f"of bounds: core {core.core_id} {op} {role} reaches UB {end:#x}, UB "
                    f"holds {core.chip.ub_bytes} bytes")
        # Lane k of the read feeds lane k of the write: order the write lanes to match.
        if blk == 16:                       # dst block j element i <- src block i element j
            dst_idx = dst_idx.transpose(0, 2, 1)
        else:                               # dst block 2j + h element i <- src block 8h + i elem j
            dst_idx = dst_idx.reshape(repeats, 8, 2, 8).transpose(0, 2, 3, 1).reshape(
                repeats, 16, 8)
        src_idx, dst_idx = src_idx.reshape(-1), dst_idx.reshape(-1)
        overlap = np.intersect1d(src_idx, dst_idx)
        if overlap.size:
            raise IllegalInstruction(f"{op}: the destination blocks overlap the source blocks "
                                     f"(UB {int(overlap[0]) * first.itemsize:#x}); the chip "
                                     f"does not allow aliasing here")
        core.execute(partial(_permute, core.ub_view(0, core.chip.ub_bytes, op)
                             .view(first.dtype), dst_idx, src_idx))
    # each address is one 32-byte row a repeat (UB banks: ubbanks.py)
    lead = 1 if moves_once else 0
    rows = [tuple(Operand(t.offset + lead * stride * BLOCK, 0, stride) for t in ts)
            for ts, stride in ((src_list, params.src_rep_stride),
                               (dst_list, params.dst_rep_stride))]
    core.vector_issue(op, core.costs.vector("transpose", first.itemsize, repeats * 16 * blk),
                      rows[0], rows[1], repeats)
    if core.observers:
        ops: tuple[tuple[Access, ...], tuple[Access, ...]] = ((), ())
        if src_idx is not None and dst_idx is not None:        # repeats > 0
            ops = ((Access(Space.UB, 0, first.itemsize, src_idx, "src"),),
                   (Access(Space.UB, 0, first.itemsize, dst_idx, "dst"),))
        core.observe(Pipe.V, op, *ops)


def _permute(ub: np.ndarray, dst_idx: np.ndarray, src_idx: np.ndarray) -> None:
    ub[dst_idx] = ub[src_idx]
