"""Native TopK, Sort, ArgMax and ArgMin through the vector unit's sort primitives: Sort32 sorts
32 (score, index) pairs at a time, MrgSort merges up to four sorted lists (both descending,
ties in position and list order, so the sort is stable).

Each row along the sorted axis is read in chunks (an axis with elements after it is read with a
GM stride, one element per UB block, and compacted with the vector Gather). A chunk becomes
float scores (bfloat16 widened to float32; negated for an ascending order, padded with -inf to
a multiple of 32) and their positions; Sort32 makes lists of 32, which MrgSort merges four at a
time, each merged list cut to the k pairs that matter; a running list of the row's best k
merges each chunk in. For the last index among ties (select_last_index), the row is read from
its end and each chunk reversed, so Sort32's "lower position first" and MrgSort's "lower list
first" prefer the higher index. The k results are taken apart with GatherMask (scores in the
low words, indices in the high ones), spread one per UB block with Brcb, and written with a
DataCopyPad whose GM stride is the axis's: values in the input's type, indices as int64 (the
index word and a zero word).

Limits: MrgSort takes lists of at most 4095 pairs, so a full Sort sorts rows of up to 4096
elements (one chunk); TopK takes any row length for k up to 4095.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..ascend import lang as asc
from ..ascend.chips import ChipSpec
from ..ascend.vector_sort import MAX_MERGE_LIST, PAIR_BYTES, SORT_REPEAT
from ..hixl.dtypes import FLOATS, to_numpy
from ..hixl.schema import normalize_axis
from ..intmath import ceil_div, round_up
from ..nixl import KernelContext, KernelEntry, LaunchPlan, register_kernel
from ..nixl.tuning import DoesNotFit, TuningConfig, TuningSpace
from .tiling import Tiling, split_units
from .version import BUILT_FOR_RUNTIME

FULL_SORT = 4096            # elements a full Sort takes in one chunk (4 lists of 1024 merge)
TOPK_CHUNK = 2048           # elements per chunk when only the best k are kept
STRIDED_READ = 256          # elements per read of a strided row (a 32-byte block each)
OUT_PIECE = 256             # results spread into blocks and written at a time
MERGE_WAYS = 4


# ---------------------------------------------------------------- tiling data

@dataclass(frozen=True)
class SortTiling(Tiling):
    rows: int               # sorted rows: the dims before the axis times those after it
    length: int             # n: elements along the axis
    inner: int              # elements after the axis (1: the axis is last; else the GM stride)
    k: int                  # results per row
    chunk: int              # elements sorted at a time (a multiple of 32)
    largest: bool           # descending
    last_index: bool        # ties go to the highest index
    values: bool            # the op has a values output
    in_buffers: int         # slots of the input queue
    per_core: int
    dtype: str
    score_dtype: str        # float16 or float32
    config: TuningConfig


# ---------------------------------------------------------------- host tiling

def ub_bytes(chunk: int, k: int, length: int, inner: int, isz: int, last_index: bool,
             score_isz: int, in_buffers: int, chip: ChipSpec) -> int:
    """What SortKernel.__init__ allocates."""
    read = min(STRIDED_READ, chunk) if inner > 1 else chunk
    total = in_buffers * read * (chip.block_bytes if inner > 1 else isz)
    total += 2 * 2 * OUT_PIECE * chip.block_bytes + 2 * chunk * PAIR_BYTES
    if length > chunk:
        total += 2 * 2 * round_up(min(k, chunk), 4) * PAIR_BYTES
    if inner > 1 or last_index or score_isz != isz:
        total += chunk * isz
    if last_index:
        total += chunk * 4
    if inner > 1:
        total += read * 4
    return total


def plan(x, k: int, axis: int, largest: bool, last_index: bool, values: bool, full: bool,
         chip: ChipSpec, config: TuningConfig | None) -> LaunchPlan:
    """Chunks of the row (the whole row for a full sort), the largest that fits UB; rows
    over cores."""
    config = (config or TuningConfig()).only(("buffer_num", "tile_div", "block_dim"),
                                             "the sort kernels")
    n = x.shape[axis]
    inner = math.prod(x.shape[axis + 1:])
    rows = math.prod(x.shape) // n if n else 0
    if full and n > FULL_SORT:
        raise DoesNotFit(f"a full sort of {n} elements: MrgSort's lists of at most "
                         f"{MAX_MERGE_LIST} pairs sort rows of up to {FULL_SORT}")
    if MAX_MERGE_LIST < k < n:
        raise DoesNotFit(f"k = {k}: MrgSort keeps lists of at most {MAX_MERGE_LIST} pairs")
    isz = x.itemsize
    score = "float16" if x.dtype == "float16" else "float32"
    if full and config.divisor > 1:
        raise DoesNotFit("a full sort takes whole rows: no tile_div")
    most = FULL_SORT if full else TOPK_CHUNK // config.divisor
    chunk = round_up(max(min(n, most), min(k, n), 1), SORT_REPEAT)
    in_buffers = config.buffers
    if ub_bytes(chunk, k, n, inner, isz, last_index, 2 if score == "float16" else 4,
                in_buffers, chip) > chip.ub_bytes:
        raise DoesNotFit(f"a sort chunk of {chunk} elements does not fit in UB at "
                         f"{in_buffers} input buffers")
    block_dim, per_core = split_units(rows if k else 0, chip, config.block_dim)
    return LaunchPlan(block_dim, SortTiling(rows, n, inner, k, chunk, largest, last_index,
                                            values, in_buffers, per_core, x.dtype, score,
                                            config))


# ---------------------------------------------------------------- the device kernel

class SortKernel:
    def __init__(self, ctx: KernelContext, x: asc.GlobalTensor, outs: tuple):
        """Init: an input queue, two output queues (values, indices), the two list buffers
        (the scores and positions start in the second), a running list when rows take
        several chunks, and the Gather offsets and staging a strided or reversed read needs."""
        tiling: SortTiling = ctx.tiling
        self.ctx, self.tiling, self.x, self.chip = ctx, tiling, x, ctx.chip
        self.values_gm = outs[0] if tiling.values else None
        self.indices_gm = outs[-1]
        self.dtype, self.sdt = to_numpy(tiling.dtype), to_numpy(tiling.score_dtype)
        c = tiling.chunk
        self.keep = min(tiling.k, c)
        self.strided = tiling.inner > 1
        self.read = min(STRIDED_READ, c) if self.strided else c
        isz = self.dtype.itemsize
        self.pipe = asc.TPipe()
        self.in_q = asc.TQue(asc.TPosition.VECIN)
        self.pipe.init_buffer(self.in_q, tiling.in_buffers,
                              self.read * (self.chip.block_bytes if self.strided else isz))
        self.val_q, self.idx_q = asc.TQue(asc.TPosition.VECOUT), asc.TQue(asc.TPosition.VECOUT)
        for q in (self.val_q, self.idx_q):
            self.pipe.init_buffer(q, 2, OUT_PIECE * self.chip.block_bytes)
        self.a, self.b = self._buf(c * PAIR_BYTES), self._buf(c * PAIR_BYTES)
        # A merge writes both lists whole: room for 2k pairs, of which the first k count.
        self.running = [self._buf(2 * round_up(self.keep, 4) * PAIR_BYTES) for _ in range(2)] \
            if tiling.length > c else []
        staged = self.strided or tiling.last_index or self.dtype != self.sdt
        self.staging = self._buf(c * isz).reinterpret(self.dtype) if staged else None
        self.offsets = self._buf(c * 4).reinterpret(np.uint32) if tiling.last_index else None
        if self.strided:                     # element j of a strided read sits at block j
            self.compact = self._buf(self.read * 4).reinterpret(np.uint32)
            offs = self.compact.reinterpret(np.int32)
            asc.create_vec_index(offs, 0, self.read)
            asc.muls(offs, offs, self.chip.block_bytes, self.read)

    def _buf(self, nbytes: int) -> asc.LocalTensor:
        b = asc.TBuf()
        self.pipe.init_buffer(b, nbytes)
        return b.get(np.uint8)

    # ---- the row loop ----
    def process(self) -> None:
        tiling = self.tiling
        first = self.ctx.block_idx * tiling.per_core
        for row in range(first, min(first + tiling.per_core, tiling.rows)):
            self.sort_row(row)

    def origin(self, row: int) -> int:
        """GM offset of the row's first element (rows: the dims before the axis, then after)."""
        outer, i = divmod(row, self.tiling.inner)
        return outer * self.tiling.length * self.tiling.inner + i

    def sort_row(self, row: int) -> None:
        tiling = self.tiling
        n, c = tiling.length, tiling.chunk
        starts = list(range(0, n, c))
        if tiling.last_index:
            starts.reverse()
        best, length = None, 0
        for c0 in starts:
            count = min(c, n - c0)
            self.copy_in(row, c0, count)
            chunk, size = self.compute_chunk(c0, count)
            best, length = self.merge_running(best, length, chunk, size)
        self.copy_out(row, best, length)

    def copy_in(self, row: int, c0: int, count: int) -> None:
        """The chunk's elements as scores (pad: -inf): read (a strided row a block per element,
        compacted with the vector Gather), reversed for the last index among ties, widened
        (bfloat16), negated for an ascending order."""
        tiling, isz = self.tiling, self.dtype.itemsize
        scores = self.b.reinterpret(self.sdt)
        asc.duplicate(scores, -np.inf, tiling.chunk)
        for r0 in range(0, count, self.read):
            m = min(self.read, count - r0)
            src = self.x[self.origin(row) + (c0 + r0) * tiling.inner]
            x = self.in_q.alloc_tensor(self.dtype)
            if self.strided:
                asc.data_copy_pad(x, src, asc.DataCopyExtParams(m, isz,
                                                                (tiling.inner - 1) * isz, 0))
            else:
                asc.data_copy_pad(x, src, asc.DataCopyExtParams(1, m * isz, 0, 0))
            self.in_q.enque(x)
            x = self.in_q.deque()
            if self.strided:                 # element j sits at block j
                asc.gather(self.staging[r0], x, self.compact, 0, m)
                self.in_q.free_tensor(x)
        data = self.staging if self.strided else x
        if tiling.last_index:                # position p <- element count - 1 - p
            offs = self.offsets.reinterpret(np.int32)
            asc.create_vec_index(offs, 0, count)
            asc.muls(offs, offs, -isz, count)
            asc.adds(offs, offs, (count - 1) * isz, count)
            turned = self.a.reinterpret(self.dtype) if self.strided else self.staging
            asc.gather(turned, data, self.offsets, 0, count)
            data = turned
        if self.dtype == self.sdt:
            asc.adds(scores, data, 0.0, count)
        else:
            asc.cast(scores, data, asc.RoundMode.CAST_NONE, count)
        if not self.strided:
            self.in_q.free_tensor(x)
        if not tiling.largest:
            asc.muls(scores, scores, -1.0, count)

    def compute_chunk(self, c0: int, count: int) -> tuple[asc.LocalTensor, int]:
        """Sort32 into lists of 32, then four-way merges cut to k: the chunk's sorted list."""
        tiling = self.tiling
        c = tiling.chunk
        size = round_up(count, SORT_REPEAT)
        scores = self.b.reinterpret(self.sdt)
        index = self.b[c * 4].reinterpret(np.int32)          # after c float32 scores
        if tiling.last_index:
            asc.create_vec_index(index, 0, size)
            asc.muls(index, index, -1, size)
            asc.adds(index, index, c0 + count - 1, size)
        else:
            asc.create_vec_index(index, c0, size)
        repeats = size // SORT_REPEAT
        for r in range(0, repeats, self.chip.max_repeat):
            todo = min(self.chip.max_repeat, repeats - r)
            asc.sort32(self.a[r * SORT_REPEAT * PAIR_BYTES], scores[r * SORT_REPEAT],
                       index[r * SORT_REPEAT].reinterpret(np.uint32), todo)
        lists = [(r * SORT_REPEAT, min(SORT_REPEAT, count - r * SORT_REPEAT))
                 for r in range(repeats)]
        src, dst = self.a, self.b
        stride = SORT_REPEAT
        while len(lists) > 1:
            merged = []
            for g in range(0, len(lists), MERGE_WAYS):
                group = lists[g:g + MERGE_WAYS]
                at = group[0][0]
                if len(group) == 1:
                    asc.adds(dst[at * PAIR_BYTES].reinterpret(np.int32),
                             src[at * PAIR_BYTES].reinterpret(np.int32), 0, 2 * group[0][1])
                    merged.append(group[0])
                    continue
                self._merge(dst[at * PAIR_BYTES], [src[s * PAIR_BYTES] for s, _ in group],
                            [m for _, m in group])
                merged.append((at, min(sum(m for _, m in group), self.keep)))
            lists = merged
            src, dst = dst, src
            stride *= MERGE_WAYS
        return src[lists[0][0] * PAIR_BYTES], min(lists[0][1], self.keep)

    def _merge(self, dst, sources, lengths) -> None:
        asc.mrg_sort(dst, sources, [min(m, self.keep) for m in lengths], self.sdt)

    def merge_running(self, best, length, chunk, size):
        """The row's best k so far, with the chunk's merged in (the earlier list first: it
        holds the indices that win ties)."""
        if not self.running:
            return chunk, size
        if best is None:
            out = self.running[0]
            asc.adds(out.reinterpret(np.int32), chunk.reinterpret(np.int32), 0, 2 * size)
            return out, size
        out = self.running[1] if best is self.running[0] else self.running[0]
        asc.mrg_sort(out, [best, chunk], [length, size], self.sdt)
        return out, min(length + size, self.keep)

    def copy_out(self, row: int, best: asc.LocalTensor, length: int) -> None:
        """The first k pairs: values and int64 indices, spread a block each and written with
        the axis's GM stride."""
        tiling = self.tiling
        k = tiling.k
        spare = self.b if best.offset == self.a.offset else self.a   # free again
        words = best.reinterpret(np.int32)
        scores = spare.reinterpret(self.sdt)
        index = spare[round_up(k, 8) * 4].reinterpret(np.int32)
        if tiling.values:
            if self.sdt == np.float16:
                asc.gather_mask(scores, best.reinterpret(np.int16).reinterpret(np.float16),
                                3, 4 * k)
            else:
                asc.gather_mask(scores, words.reinterpret(np.float32), 1, 2 * k)
            if not tiling.largest:
                asc.muls(scores, scores, -1.0, k)
        asc.gather_mask(index, words, 2, 2 * k)
        base = row // tiling.inner * k * tiling.inner + row % tiling.inner
        for p0 in range(0, k, OUT_PIECE):
            m = min(OUT_PIECE, k - p0)
            if tiling.values:
                self._write_values(scores[p0], base + p0 * tiling.inner, m)
            self._write_indices(index[p0], base + p0 * tiling.inner, m)

    def _write_values(self, scores: asc.LocalTensor, at: int, m: int) -> None:
        tiling, isz = self.tiling, self.dtype.itemsize
        y = self.val_q.alloc_tensor(self.dtype)
        word = np.int16 if isz == 2 else np.int32
        if self.dtype != self.sdt:                          # bfloat16: narrowed, then spread
            narrow = self.staging
            asc.cast(narrow, scores, asc.RoundMode.CAST_RINT, m)
            scores = narrow
        asc.brcb(y.reinterpret(word), scores.reinterpret(word), ceil_div(m, 8))
        self.val_q.enque(y)
        y = self.val_q.deque()
        asc.data_copy_pad(self.values_gm[at], y, asc.DataCopyExtParams(
            m, isz, 0, (tiling.inner - 1) * isz))
        self.val_q.free_tensor(y)

    def _write_indices(self, index: asc.LocalTensor, at: int, m: int) -> None:
        """int64 indices: the index in word 0 of its block, 0 in word 1, 8 bytes written."""
        tiling = self.tiling
        y = self.idx_q.alloc_tensor(np.int32)
        repeats = ceil_div(m, 8)
        asc.brcb(y, index, repeats)
        second_words = sum(1 << (8 * b + 1) for b in range(8))
        asc.duplicate(y, 0, (second_words, 0), repeats, 1, 8)
        self.idx_q.enque(y)
        y = self.idx_q.deque()
        asc.data_copy_pad(self.indices_gm[at], y.reinterpret(np.int64), asc.DataCopyExtParams(
            m, 8, 0, (tiling.inner - 1) * 8))
        self.idx_q.free_tensor(y)


def sort_kernel(ctx: KernelContext, x: asc.GlobalTensor, *rest) -> None:
    """Inputs: x (and TopK's k, read by the host); outputs: values (not for ArgMax/ArgMin)
    and indices."""
    n_out = 2 if ctx.tiling.values else 1
    SortKernel(ctx, x, rest[-n_out:]).process()


# ---------------------------------------------------------------- registration

def _topk(ins, outs, attrs, chip, config):
    x = ins[0]
    axis = normalize_axis("TopK", attrs["axis"], len(x.shape))
    return plan(x, int(ins[1].value[0]), axis, bool(attrs["largest"]), False, True, False,
                chip, config)


def _sort(ins, outs, attrs, chip, config):
    x = ins[0]
    axis = normalize_axis("Sort", attrs["axis"], len(x.shape))
    return plan(x, x.shape[axis], axis, bool(attrs["descending"]), False, True, True,
                chip, config)


def _arg(largest: bool):
    def tiling(ins, outs, attrs, chip, config):
        x = ins[0]
        axis = normalize_axis("ArgMax", attrs["axis"], len(x.shape))
        return plan(x, 1, axis, largest, bool(attrs["select_last_index"]), False, False,
                    chip, config)
    return tiling


def _declines(in_descs, attrs) -> str | None:
    return "padded storage runs on the shim" if in_descs[0].is_padded else None


for _op, _tiling in (("TopK", _topk), ("Sort", _sort), ("ArgMax", _arg(True)),
                     ("ArgMin", _arg(False))):
    register_kernel(KernelEntry(op=_op, kernel=sort_kernel, tiling=_tiling, dtypes=FLOATS,
                                built_for_runtime=BUILT_FOR_RUNTIME, declines=_declines,
                                tuning_space=TuningSpace(buffer_num=(1, 2), tile_div=(1, 2),
                                                         core_div=(1, 2))))
