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

Integers (int32, int64) sort exactly as passes over their 16-bit digits (RadixSortKernel).

Limits: MrgSort takes lists of at most 4095 pairs, so a full Sort sorts rows of up to 4096
elements (one chunk); TopK takes any row length for k up to 4095; integer rows are one chunk.
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
from ..nixl import KernelContext, KernelEntry, LaunchPlan, TensorDesc, register_kernel
from ..nixl.tuning import DoesNotFit, TuningConfig, TuningSpace
from .tiling import Tiling, split_units
from .ub import floor_div
from .version import BUILT_FOR_RUNTIME

FULL_SORT = 4096            # elements a full Sort takes in one chunk (4 lists of 1024 merge)
TOPK_CHUNK = 2048           # elements per chunk when only the best k are kept
STRIDED_READ = 256          # elements per read of a strided row (a 32-byte block each)
OUT_PIECE = 256             # results spread into blocks and written at a time
MERGE_WAYS = 4
DIGIT = 1 << 16                # an integer sorts as 16-bit digits, exact in float32 scores
SECOND_WORDS = sum(1 << (8 * b + 1) for b in range(8))   # word 1 of each block of a repeat


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
    digits: int = 0         # integers: 16-bit digits sorted one pass each (0: float scores)


# ---------------------------------------------------------------- host tiling

def ub_bytes(chunk: int, k: int, length: int, inner: int, isz: int, last_index: bool,
             score_isz: int, in_buffers: int, digits: int, chip: ChipSpec) -> int:
    """What SortKernel.__init__ (and RadixSortKernel's) allocates."""
    lanes = 2 if isz == 8 else 1
    read = min(STRIDED_READ, chunk) if inner > 1 else chunk
    total = in_buffers * read * (chip.block_bytes if inner > 1 else isz)
    total += 2 * 2 * OUT_PIECE * chip.block_bytes + 2 * chunk * PAIR_BYTES
    if length > chunk:
        total += 2 * 2 * round_up(min(k, chunk), 4) * PAIR_BYTES
    if inner > 1 or last_index or score_isz != isz:
        total += chunk * isz
    if last_index:
        total += chunk * lanes * 4
    if lanes > 1:
        total += chunk * lanes * 4
    if inner > 1:
        total += read * lanes * 4
    if digits:
        total += (digits + 3 + lanes) * chunk * 4 + OUT_PIECE * chip.block_bytes
    return total


def plan(x: TensorDesc, k: int, axis: int, largest: bool, last_index: bool, values: bool,
         full: bool, chip: ChipSpec, config: TuningConfig | None) -> LaunchPlan:
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
    digits = {"int32": 2, "int64": 4}.get(x.dtype, 0)
    if (full or digits) and config.divisor > 1:
        raise DoesNotFit("a full sort (and an integer one) takes whole rows: no tile_div")
    if digits and n > FULL_SORT:
        raise DoesNotFit(f"an integer row of {n} elements: its digit passes sort whole rows "
                         f"of up to {FULL_SORT}")
    most = FULL_SORT if full or digits else TOPK_CHUNK // config.divisor
    chunk = round_up(max(min(n, most), min(k, n), 1), SORT_REPEAT)
    in_buffers = config.buffers
    if ub_bytes(chunk, k, n, inner, isz, last_index, 2 if score == "float16" else 4,
                in_buffers, digits, chip) > chip.ub_bytes:
        raise DoesNotFit(f"a sort chunk of {chunk} elements does not fit in UB at "
                         f"{in_buffers} input buffers")
    block_dim, per_core = split_units(rows if k else 0, chip, config.block_dim)
    return LaunchPlan(block_dim, SortTiling(rows, n, inner, k, chunk, largest, last_index,
                                            values, in_buffers, per_core, x.dtype, score,
                                            config, digits))


# ---------------------------------------------------------------- the device kernel

def element_lanes(offs: asc.LocalTensor, n: int, lanes: int, step: int, first: int,
                  flt: asc.LocalTensor | None) -> None:
    """Gather offsets of n lanes, `lanes` per element: element j's lane h reads byte
    first + j x step + 4h (`flt`: float32 scratch of n, for two lanes)."""
    asc.create_vec_index(offs, 0, n)
    if lanes == 1:
        asc.muls(offs, offs, step, n)
        asc.adds(offs, offs, first, n)
        return
    assert flt is not None                  # two lanes per element: the float scratch
    high = flt.reinterpret(np.int32)
    floor_div(high, offs, 2, flt, n, keep=True)              # h = lane mod 2
    asc.sub(offs, offs, high, n)                             # 2j
    asc.muls(offs, offs, step // 2, n)                       # j x step
    asc.muls(high, high, 4, n)
    asc.add(offs, offs, high, n)
    asc.adds(offs, offs, first, n)


class SortQueues:
    """The UB plan of a sort as queues and buffers, and the output queues' writes: values
    and int64 indices spread a block each, written with the axis's GM stride."""

    high_blocks: asc.LocalTensor    # the radix sort's: an int64's high words, a block each

    def __init__(self, ctx: KernelContext, x: asc.GlobalTensor, outs: tuple) -> None:
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
        self.read_size = min(STRIDED_READ, c) if self.strided else c
        isz = self.dtype.itemsize
        self.pipe = asc.TPipe()
        self.in_q = asc.TQue(asc.TPosition.VECIN)
        self.pipe.init_buffer(self.in_q, tiling.in_buffers,
                              self.read_size * (self.chip.block_bytes if self.strided else isz))
        self.val_q, self.idx_q = asc.TQue(asc.TPosition.VECOUT), asc.TQue(asc.TPosition.VECOUT)
        for q in (self.val_q, self.idx_q):
            self.pipe.init_buffer(q, 2, OUT_PIECE * self.chip.block_bytes)
        self.a, self.b = self._buf(c * PAIR_BYTES), self._buf(c * PAIR_BYTES)
        # A merge writes both lists whole: room for 2k pairs, of which the first k count.
        self.running = [self._buf(2 * round_up(self.keep, 4) * PAIR_BYTES) for _ in range(2)] \
            if tiling.length > c else []
        staged = self.strided or tiling.last_index or self.dtype != self.sdt
        self.staging = self._buf(c * isz).reinterpret(self.dtype) if staged else None
        # Gather moves 16- and 32-bit lanes: an 8-byte element is two.
        self.word = np.dtype(np.int32) if isz == 8 else self.dtype
        self.lanes = isz // self.word.itemsize
        lanes = c * self.lanes
        self.offsets = self._buf(lanes * 4).reinterpret(np.uint32) if tiling.last_index \
            else None
        self.flt = self._buf(lanes * 4).reinterpret(np.float32) if self.lanes > 1 else None
        if self.strided:                     # element j of a strided read sits at block j
            n = self.read_size * self.lanes
            self.compact = self._buf(n * 4).reinterpret(np.uint32)
            element_lanes(self.compact.reinterpret(np.int32), n, self.lanes,
                          self.chip.block_bytes, 0, self.flt)

    def _buf(self, nbytes: int) -> asc.LocalTensor:
        b = asc.TBuf()
        self.pipe.init_buffer(b, nbytes)
        return b.get(np.uint8)

    def _write_values(self, scores: asc.LocalTensor, at: int, m: int,
                      high: asc.LocalTensor | None = None) -> None:
        """Values spread a block each (an int64's high word, `high`, into each block's second
        word) and written with the axis's stride."""
        tiling, isz = self.tiling, self.dtype.itemsize
        y = self.val_q.alloc_tensor(self.dtype)
        word = np.int16 if isz == 2 else np.int32
        if self.dtype != self.sdt and isz == 2:             # bfloat16: narrowed, then spread
            narrow = self.staging
            assert narrow is not None                       # staged: dtype != score dtype
            asc.cast(narrow, scores, asc.RoundMode.CAST_RINT, m)
            scores = narrow
        repeats = ceil_div(m, 8)
        asc.brcb(y.reinterpret(word), scores.reinterpret(word), repeats)
        if high is not None:
            asc.brcb(self.high_blocks, high, repeats)
            asc.adds(y.reinterpret(np.int32), self.high_blocks, 0, (SECOND_WORDS, 0), repeats,
                     asc.UnaryRepeatParams())
        self.val_q.enque(y)
        y = self.val_q.deque()
        assert self.values_gm is not None                   # called when values are wanted
        asc.data_copy_pad(self.values_gm[at], y, asc.DataCopyExtParams(
            m, isz, 0, (tiling.inner - 1) * isz))
        self.val_q.free_tensor(y)

    def _write_indices(self, index: asc.LocalTensor, at: int, m: int) -> None:
        """int64 indices: the index in word 0 of its block, 0 in word 1, 8 bytes written."""
        tiling = self.tiling
        y = self.idx_q.alloc_tensor(np.int32)
        repeats = ceil_div(m, 8)
        asc.brcb(y, index, repeats)
        asc.duplicate(y, 0, (SECOND_WORDS, 0), repeats, 1, 8)
        self.idx_q.enque(y)
        y = self.idx_q.deque()
        asc.data_copy_pad(self.indices_gm[at], y.reinterpret(np.int64), asc.DataCopyExtParams(
            m, 8, 0, (tiling.inner - 1) * 8))
        self.idx_q.free_tensor(y)


class SortKernel(SortQueues):
    """One core's rows: each read in chunks, sorted (Sort32, then four-way MrgSort cut to
    k), merged into the row's running best k, and written out."""

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
        best: asc.LocalTensor | None = None
        length = 0
        for c0 in starts:
            count = min(c, n - c0)
            self.copy_in(row, c0, count)
            chunk, size = self.compute_chunk(c0, count)
            best, length = self.merge_running(best, length, chunk, size)
        assert best is not None                             # a row has at least one chunk
        self.copy_out(row, best, length)

    def copy_in(self, row: int, c0: int, count: int) -> None:
        """The chunk's elements as scores (pad: -inf): read, widened (bfloat16), negated for
        an ascending order."""
        data, x = self.read(row, c0, count)
        scores = self.b.reinterpret(self.sdt)
        asc.duplicate(scores, -np.inf, self.tiling.chunk)
        if self.dtype == self.sdt:
            asc.adds(scores, data, 0.0, count)
        else:
            asc.cast(scores, data, asc.RoundMode.CAST_NONE, count)
        if x is not None:
            self.in_q.free_tensor(x)
        if not self.tiling.largest:
            asc.muls(scores, scores, -1.0, count)

    def read(self, row: int, c0: int, count: int) -> tuple[asc.LocalTensor, asc.LocalTensor | None]:
        """The chunk's elements in the input's type: a strided row read a block per element
        and compacted with the vector Gather, reversed for the last index among ties. Returns
        them and the input-queue tensor to free once they are used (None: already free)."""
        tiling, isz = self.tiling, self.dtype.itemsize
        staging = self.staging
        for r0 in range(0, count, self.read_size):
            m = min(self.read_size, count - r0)
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
                assert staging is not None
                asc.gather(staging.reinterpret(self.word)[r0 * self.lanes],
                           x.reinterpret(self.word), self.compact, 0, m * self.lanes)
                self.in_q.free_tensor(x)
        data = self.staging if self.strided else x
        assert data is not None                     # staged when strided
        if tiling.last_index:                # position p <- element count - 1 - p
            assert self.offsets is not None
            lanes = count * self.lanes
            offs = self.offsets.reinterpret(np.int32)
            element_lanes(offs, lanes, self.lanes, -isz, (count - 1) * isz, self.flt)
            turned = self.a.reinterpret(self.dtype) if self.strided else self.staging
            assert turned is not None
            asc.gather(turned.reinterpret(self.word), data.reinterpret(self.word),
                       self.offsets, 0, lanes)
            data = turned
        return data, (None if self.strided else x)

    def compute_chunk(self, c0: int, count: int) -> tuple[asc.LocalTensor, int]:
        """Sort32 into lists of 32, then four-way merges cut to k: the chunk's sorted list."""
        tiling = self.tiling
        c = tiling.chunk
        size = round_up(count, SORT_REPEAT)
        scores = self.b.reinterpret(self.sdt)
        index = self.b[c * 4].reinterpret(np.int32)          # after c float32 scores
        self.positions(index, c0, count, size)
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

    def positions(self, index: asc.LocalTensor, c0: int, count: int, size: int) -> None:
        """The index each chunk position carries: c0 + p, or from the chunk's end when the row
        is read reversed."""
        if self.tiling.last_index:
            asc.create_vec_index(index, 0, size)
            asc.muls(index, index, -1, size)
            asc.adds(index, index, c0 + count - 1, size)
        else:
            asc.create_vec_index(index, c0, size)

    def _merge(self, dst, sources, lengths) -> None:
        asc.mrg_sort(dst, sources, [min(m, self.keep) for m in lengths], self.sdt)

    def merge_running(self, best: asc.LocalTensor | None, length: int, chunk: asc.LocalTensor,
                      size: int) -> tuple[asc.LocalTensor, int]:
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


class RadixSortKernel(SortKernel):
    """Integers (int32, int64), exactly: Sort32 compares float scores, so the row sorts as
    passes over its 16-bit digits, lowest first (the value is sum d_i 2^(16 i), the top digit
    signed), each pass a stable Sort32/MrgSort of one digit as float32 scores; the row's
    positions, and the digits still to come, follow each pass's order (vector Gather). The
    last pass keeps k. Rows are one chunk."""

    def __init__(self, ctx: KernelContext, x: asc.GlobalTensor, outs: tuple) -> None:
        super().__init__(ctx, x, outs)
        c, digits = self.tiling.chunk, self.tiling.digits
        self.digit_rows = self._buf(digits * c * 4).reinterpret(np.float32)
        self.pos, self.order, self.spare = (self._buf(c * 4).reinterpret(np.int32)
                                            for _ in range(3))
        self.row_words = self._buf(c * self.lanes * 4).reinterpret(np.int32)
        self.high_blocks = self._buf(OUT_PIECE * self.chip.block_bytes).reinterpret(np.int32)

    def positions(self, index: asc.LocalTensor, c0: int, count: int, size: int) -> None:
        asc.create_vec_index(index, 0, size)                # places in the current order

    def sort_row(self, row: int) -> None:
        tiling = self.tiling
        n, c = tiling.length, tiling.chunk
        data, x = self.read(row, 0, n)
        asc.adds(self.row_words, data.reinterpret(np.int32), 0, n * self.lanes)
        if x is not None:
            self.in_q.free_tensor(x)
        digits = self.split_digits(n)
        asc.create_vec_index(self.pos, 0, n)
        scores = self.b.reinterpret(np.float32)
        for p, digit in enumerate(digits):
            last = p == len(digits) - 1
            self.keep = tiling.k if last else n
            asc.duplicate(scores, -np.inf, c)
            asc.muls(scores, digit, 1.0 if tiling.largest else -1.0, n)
            best, size = self.compute_chunk(0, n)
            asc.gather_mask(self.order, best.reinterpret(np.int32), 2, 2 * size)
            asc.muls(self.order, self.order, 4, size)       # byte offsets of the new order
            for t in [self.pos] + ([] if last else digits[p + 1:]):
                moved = self.spare.reinterpret(t.dtype)
                asc.gather(moved, t, self.order.reinterpret(np.uint32), 0, size)
                asc.adds(t, moved, 0, size)
        self.write_row(row, n)

    def split_digits(self, n: int) -> list[asc.LocalTensor]:
        """The row's 16-bit digits as float32, lowest first: an int32's unsigned low digit and
        signed high one; an int64's words give four (the low word's high digit unsigned)."""
        c = self.tiling.chunk
        d = [self.digit_rows[i * c] for i in range(self.tiling.digits)]
        if self.lanes == 1:
            self._split16(self.row_words, d[0], d[1], n)
            return d
        low, high = d[2].reinterpret(np.int32), d[3].reinterpret(np.int32)
        asc.gather_mask(low, self.row_words, 1, 2 * n)
        asc.gather_mask(high, self.row_words, 2, 2 * n)
        self._split16(low, d[0], d[1], n)
        unsigned = self.spare.reinterpret(np.float32)       # d1 += 2^16 where negative
        asc.muls(unsigned, d[1], -1.0, n)
        asc.maxs(unsigned, unsigned, 0.0, n)
        asc.mins(unsigned, unsigned, 1.0, n)
        asc.muls(unsigned, unsigned, float(DIGIT), n)
        asc.add(d[1], d[1], unsigned, n)
        self._split16(high, d[2], d[3], n)
        return d

    def _split16(self, w: asc.LocalTensor, low: asc.LocalTensor, high: asc.LocalTensor,
                 n: int) -> None:
        """w = high x 2^16 + low with low in [0, 2^16), exactly: q = floor(w / 2^16) through
        float32 (it may be one off where w rounds), r = w - q x 2^16 in int32 (wrapping), then
        q and r corrected by one where r left [0, 2^16). `high` may be `w`'s memory."""
        t = self.spare.reinterpret(np.float32)
        q, r = self.pos, self.order
        asc.cast(t, w, asc.RoundMode.CAST_RINT, n)
        asc.muls(t, t, 1.0 / DIGIT, n)
        asc.cast(q, t, asc.RoundMode.CAST_FLOOR, n)
        asc.muls(r, q, -DIGIT, n)
        asc.add(r, r, w, n)
        asc.cast(low, r, asc.RoundMode.CAST_RINT, n)         # exact: |r| < 2^17
        asc.muls(t, low, -1.0, n)                            # 1 where r < 0
        asc.maxs(t, t, 0.0, n)
        asc.mins(t, t, 1.0, n)
        asc.adds(high, low, -(DIGIT - 1.0), n)               # 1 where r >= 2^16
        asc.maxs(high, high, 0.0, n)
        asc.mins(high, high, 1.0, n)
        asc.sub(high, high, t, n)                            # the correction of q
        asc.muls(t, high, -float(DIGIT), n)
        asc.add(low, low, t, n)
        asc.cast(t, q, asc.RoundMode.CAST_RINT, n)
        asc.add(high, high, t, n)

    def write_row(self, row: int, n: int) -> None:
        """The first k positions: their indices, and their values gathered from the row."""
        tiling = self.tiling
        k = tiling.k
        index, offs = self.order, self.spare
        if tiling.last_index:                                # the row was read reversed
            asc.muls(index, self.pos, -1, k)
            asc.adds(index, index, n - 1, k)
        else:
            asc.adds(index, self.pos, 0, k)
        values = high = None
        if tiling.values:
            c = tiling.chunk
            values = self.digit_rows.reinterpret(np.int32)
            asc.muls(offs, self.pos, self.dtype.itemsize, k)
            asc.gather(values, self.row_words, offs.reinterpret(np.uint32), 0, k)
            if self.lanes == 2:
                high = values[c]
                asc.adds(offs, offs, 4, k)
                asc.gather(high, self.row_words, offs.reinterpret(np.uint32), 0, k)
        base = row // tiling.inner * k * tiling.inner + row % tiling.inner
        for p0 in range(0, k, OUT_PIECE):
            m = min(OUT_PIECE, k - p0)
            if values is not None:
                self._write_values(values[p0], base + p0 * tiling.inner, m,
                                   None if high is None else high[p0])
            self._write_indices(index[p0], base + p0 * tiling.inner, m)


def sort_kernel(ctx: KernelContext, x: asc.GlobalTensor, *rest: asc.GlobalTensor) -> None:
    """Inputs: x (and TopK's k, read by the host); outputs: values (not for ArgMax/ArgMin)
    and indices."""
    n_out = 2 if ctx.tiling.values else 1
    kernel_class = RadixSortKernel if ctx.tiling.digits else SortKernel
    kernel_class(ctx, x, rest[-n_out:]).process()


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
    register_kernel(KernelEntry(op=_op, kernel=sort_kernel, tiling=_tiling,
                                dtypes=FLOATS + ("int32", "int64"),
                                built_for_runtime=BUILT_FOR_RUNTIME, declines=_declines,
                                tuning_space=TuningSpace(buffer_num=(1, 2), tile_div=(1, 2),
                                                         core_div=(1, 2))))
