"""The sort primitives of the A2 vector unit: Sort32 and MrgSort ([SORT] in ascend-c-api
section 9).

Both work on (score, index) pairs of 8 bytes: a float score in the low 4 bytes (a half score in
the low 2, 2 reserved) and a uint32 index in the high 4.
- Sort32(dst, scores, indices, repeat_times): each repeat sorts 32 scores (and their indices)
  into 32 pairs, descending; equal scores keep the lower position first. A repeat reads 32
  elements of each source and writes 256 bytes. Repeats are not merged with each other.
- MrgSort(dst, sources, element_lengths, valid_bit): merges 2 to 4 lists of pairs, each sorted
  descending, into one descending list; each list holds at most 4095 pairs. Equal scores come
  out list by list, the lower-numbered list first ([U]: the documentation does not say; with
  lists in index order, as a merge sort keeps them, this makes the merge stable). The
  suspension mode (ifExhaustedSuspension) and repeated 4-list merges are not modeled.
Throughput 2 elements per cycle each [VECPERF].

Scores are compared as the chip's float comparator does: NaN is not ordered (the result for a
NaN score is unspecified; here it sorts after every number, as numpy's does).
"""

from __future__ import annotations

from functools import partial

import numpy as np
from numpy.typing import DTypeLike

from .errors import IllegalInstruction
from .pipe import LocalTensor
from .timeline import Pipe
from .vector import _check_aligned, _check_extent

PAIR_BYTES = 8
SORT_REPEAT = 32                    # scores per Sort32 repeat
MAX_MERGE_LIST = 4095               # pairs per MrgSort source list
_SCORES = frozenset({np.dtype(np.float16), np.dtype(np.float32)})
_U32 = np.dtype(np.uint32)


def _pairs(t: LocalTensor, n: int) -> np.ndarray:
    """The first `n` pairs of `t` as a (n, 8) byte array (a view)."""
    return t.reinterpret(np.uint8).view(n * PAIR_BYTES).reshape(n, PAIR_BYTES)


def pair_scores(pairs: np.ndarray, score_dtype: np.dtype) -> np.ndarray:
    """The scores of (n, 8) byte pairs as float64 (for ordering)."""
    return pairs[:, :score_dtype.itemsize].copy().view(score_dtype).reshape(-1).astype(np.float64)


def _descending(scores: np.ndarray) -> np.ndarray:
    """Positions in descending score order; ties (and NaNs, last) keep position order."""
    key = np.where(np.isnan(scores), np.inf, -scores)
    return np.argsort(key, kind="stable")


def sort32(dst: LocalTensor, scores: LocalTensor, indices: LocalTensor,
           repeat_times: int) -> None:
    """Sort32(dst, src0, src1, repeatTime): 32 scores per repeat into sorted pairs."""
    op = "sort32"
    if scores.dtype not in _SCORES:
        raise IllegalInstruction(f"{op} scores are float16 or float32, got {scores.dtype.name}")
    if indices.dtype != _U32:
        raise IllegalInstruction(f"{op} indices are uint32, got {indices.dtype.name}")
    _check_aligned(op, (dst, "dst"), (scores, "src0"), (indices, "src1"))
    core = dst.core
    if not 0 <= repeat_times <= core.chip.max_repeat:
        raise IllegalInstruction(f"{op} repeat_times {repeat_times} outside "
                                 f"[0, {core.chip.max_repeat}]")
    n = repeat_times * SORT_REPEAT
    _check_extent(op, scores, n, "src0")
    _check_extent(op, indices, n, "src1")
    _check_extent(op, dst.reinterpret(np.uint8), n * PAIR_BYTES, "dst")
    if n:
        core.execute(partial(_sort32, _pairs(dst, n), scores.view(n), indices.view(n),
                             repeat_times))
    core.issue(Pipe.V, op, core.costs.vector("sort", scores.itemsize, n))
    if core.observers:
        ops = ((), ()) if not n else (
            (scores.access(n, "src0"), indices.access(n, "src1")),
            (dst.reinterpret(np.uint8).access(n * PAIR_BYTES, "dst"),))
        core.observe(Pipe.V, op, *ops)


def mrg_sort(dst: LocalTensor, sources: list[LocalTensor], element_lengths: list[int],
             score_dtype: DTypeLike) -> None:
    """MrgSort(dst, MrgSortSrcList, MrgSort4Info{elementLengths, validBit}): 2 to 4 sorted
    lists of pairs merged into one (`score_dtype`: the scores' type, float16 or float32)."""
    op = "mrg_sort"
    score_dtype = np.dtype(score_dtype)
    if score_dtype not in _SCORES:
        raise IllegalInstruction(f"{op} scores are float16 or float32, got {score_dtype.name}")
    if not 2 <= len(sources) <= 4 or len(element_lengths) != len(sources):
        raise IllegalInstruction(f"{op} merges 2 to 4 lists (validBit 3, 7 or 15), got "
                                 f"{len(sources)} lists and {len(element_lengths)} lengths")
    for n in element_lengths:
        if not 0 <= n <= MAX_MERGE_LIST:
            raise IllegalInstruction(f"{op} element length {n} outside [0, {MAX_MERGE_LIST}]")
    core = dst.core
    for i, src in enumerate(sources):
        if src.offset % PAIR_BYTES:
            raise IllegalInstruction(f"Illegal instruction, which is usually caused by "
                                     f"unaligned UUB addresses: core {core.core_id} {op} "
                                     f"src{i} UB address {src.offset:#x} is not "
                                     f"{PAIR_BYTES}-byte aligned")
    _check_aligned(op, (dst, "dst"))
    total = sum(element_lengths)
    out_bytes = dst.reinterpret(np.uint8)
    _check_extent(op, out_bytes, total * PAIR_BYTES, "dst")
    lo, hi = dst.offset, dst.offset + total * PAIR_BYTES
    for i, (src, n) in enumerate(zip(sources, element_lengths)):
        _check_extent(op, src.reinterpret(np.uint8), n * PAIR_BYTES, f"src{i}")
        if n and lo < src.offset + n * PAIR_BYTES and src.offset < hi:
            raise IllegalInstruction(f"{op}: dst UB [{lo:#x}, {hi:#x}) overlaps src{i}; the "
                                     f"chip does not allow aliasing here")
    if total:
        core.execute(partial(_merge, _pairs(dst, total),
                             [_pairs(s, n) for s, n in zip(sources, element_lengths) if n],
                             score_dtype))
    core.issue(Pipe.V, op, core.costs.vector("sort", score_dtype.itemsize, total))
    if core.observers:
        reads = tuple(s.reinterpret(np.uint8).access(n * PAIR_BYTES, f"src{i}")
                      for i, (s, n) in enumerate(zip(sources, element_lengths)) if n)
        ops = ((), ()) if not total else (reads, (out_bytes.access(total * PAIR_BYTES, "dst"),))
        core.observe(Pipe.V, op, *ops)


def _sort32(out: np.ndarray, scores: np.ndarray, indices: np.ndarray, repeat_times: int) -> None:
    vals = scores.reshape(repeat_times, SORT_REPEAT)
    idx = indices.reshape(repeat_times, SORT_REPEAT)
    pairs = np.zeros((repeat_times, SORT_REPEAT, PAIR_BYTES), np.uint8)
    for r in range(repeat_times):
        order = _descending(vals[r].astype(np.float64))
        pairs[r, :, :scores.itemsize] = vals[r][order].view(np.uint8).reshape(SORT_REPEAT, -1)
        pairs[r, :, 4:] = idx[r][order].view(np.uint8).reshape(SORT_REPEAT, 4)
    out[...] = pairs.reshape(-1, PAIR_BYTES)


def _merge(out: np.ndarray, lists: list[np.ndarray], score_dtype: np.dtype) -> None:
    merged = np.concatenate([pairs.copy() for pairs in lists])
    order = _descending(pair_scores(merged, score_dtype))   # list order breaks ties
    out[...] = merged[order]
