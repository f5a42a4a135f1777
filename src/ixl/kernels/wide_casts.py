"""int64 and bool tiles in UB: the conversions the A2 vector unit has no Cast path for, composed
from the ones it has. The elementwise template converts its inputs and its output with them,
so Cast (and any op fed by such a Cast) runs natively on int64 and bool.

An int64 is two int32 words, the low one first (little-endian).
- int64 -> int32: the low words (GatherMask, the even words): the value modulo 2^32, as
  numpy's astype wraps.
- int64 -> float32: (hi + carry) x 2^32 + lo, where lo is the low word read as signed and the
  carry is 1 when it is negative. For |x| < 2^31 that is one rounding (exact below 2^24, as a
  float32 holds); beyond, two roundings, which may differ from the correctly rounded value in
  the last bit.
- float32 -> int64: t = trunc(x) (through int32 below 2^23, where a float32 may have a
  fraction), h = the nearest multiple of 2^32, lo = t - h (exact, a signed word), hi = h / 2^32
  less 1 when lo is negative; NaN gives 0 and values outside the int64 range saturate, as
  Cast's golden says; the words interleave through the vector Gather.
- int32 -> int64: the word and its sign (0 or -1) interleaved.
- int64 -> words (a comparison's input, exact): the high words (GatherMask, the odd words), then
  the low words (the even words) less 2^31 (modulo 2^32), so that the signed order of each is
  the order of the int64's parts.
- anything -> bool: 1 where the value is nonzero (NaN included): a compare, a select of 1 and 0
  in float16, a cast to int16, and two GatherMasks packing byte pairs into int16 words.
Float16 in and out converts through float32.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from ..ascend import lang as asc
from .program import Words
from .ub import floor_div

TWO32 = float(2 ** 32)
TWO31 = float(2 ** 31)
TWO63 = float(2 ** 63)


def needs_wide(in_dtypes: Iterable[str], out_dtype: str) -> bool:
    """Whether a tile converts through this module: an int64 input, an int64 or bool output
    (a bool input has its own Cast path, uint8 to float16)."""
    return "int64" in in_dtypes or out_dtype in ("int64", "bool")


# Scratch bytes per element of a tile: the words (8), two float32 temps (8), the interleave
# table (8), float16 ones and 0/1 (4), int16 0/1 and its two halves (4), and the mask (1/8).
SCRATCH_BYTES = 33


class WideScratch:
    """The scratch the conversions share, for tiles of up to `cap` elements (a multiple of
    the float16 lanes)."""

    def __init__(self, pipe: asc.TPipe, cap: int) -> None:
        self.cap = cap

        def buf(nbytes: int, dtype) -> asc.LocalTensor:
            b = asc.TBuf()
            pipe.init_buffer(b, nbytes)
            return b.get(dtype)

        self.words = buf(8 * cap, np.int32)          # lo words, then hi words
        self.f = buf(4 * cap, np.float32)
        self.g = buf(4 * cap, np.float32)
        self.table = buf(8 * cap, np.int32)
        self.ones = buf(2 * cap, np.float16)
        self.half = buf(2 * cap, np.float16)
        self.bits = buf(4 * cap, np.int16)
        self.mask = buf(max(cap // 8, 32), np.uint8)
        asc.duplicate(self.ones, 1.0, cap)
        self._interleave_table()

    def _interleave_table(self) -> None:
        """Gather offsets that interleave lo[i] (at word i) and hi[i] (at word cap + i) into
        words 2i and 2i + 1: lane l reads (l // 2 + (l % 2) x cap) x 4 = 2l + (l % 2) x
        (4 cap - 2)."""
        n = 2 * self.cap
        lane, odd = self.table, self.words
        asc.create_vec_index(lane, 0, n)
        floor_div(odd, lane, 2, self.f, self.cap, keep=True)
        floor_div(odd[self.cap], lane[self.cap], 2, self.g, self.cap, keep=True)
        asc.muls(odd, odd, 4 * self.cap - 2, n)
        asc.muls(lane, lane, 2, n)
        asc.add(lane, lane, odd, n)

    @property
    def lo(self) -> asc.LocalTensor:
        return self.words

    @property
    def hi(self) -> asc.LocalTensor:
        return self.words[self.cap]


def int64_to_int32(dst: asc.LocalTensor, src: asc.LocalTensor, n: int) -> None:
    asc.gather_mask(dst, src.reinterpret(np.int32), 1, 2 * n)


def int64_to_words(dst: asc.LocalTensor, src: asc.LocalTensor, n: int) -> Words:
    """The words of `n` int64 values into dst (int32, its first half the high words, its
    second the offset low words)."""
    words = src.reinterpret(np.int32)
    hi, lo = dst, dst[dst.count // 2]
    asc.gather_mask(hi, words, 2, 2 * n)
    asc.gather_mask(lo, words, 1, 2 * n)
    asc.adds(lo, lo, -2 ** 31, n)
    return Words(hi, lo)


def int64_to_float32(dst: asc.LocalTensor, src: asc.LocalTensor, n: int,
                     s: WideScratch) -> None:
    words = src.reinterpret(np.int32)
    asc.gather_mask(s.lo, words, 1, 2 * n)
    asc.gather_mask(s.hi, words, 2, 2 * n)
    asc.cast(s.f, s.lo, asc.RoundMode.CAST_RINT, n)         # the low word, signed
    asc.mins(s.g, s.f, 0.0, n)                              # carry: 1 where it is negative
    asc.muls(s.g, s.g, -1.0, n)
    asc.mins(s.g, s.g, 1.0, n)
    asc.cast(dst, s.hi, asc.RoundMode.CAST_RINT, n)
    asc.add(dst, dst, s.g, n)
    asc.muls(dst, dst, TWO32, n)
    asc.add(dst, dst, s.f, n)


def _interleave(dst: asc.LocalTensor, n: int, s: WideScratch) -> None:
    """dst (int64) from the lo and hi words."""
    asc.gather(dst.reinterpret(np.int32), s.words, s.table.reinterpret(np.uint32), 0, 2 * n)


def _integral(dst: asc.LocalTensor, src: asc.LocalTensor, mode, nv: int,
              s: WideScratch, tmp: asc.LocalTensor) -> None:
    """dst = src rounded to an integer by `mode` (TRUNC, FLOOR) in float32: through int32 where
    |src| < 2^23, src itself above (every float32 there is an integer already)."""
    asc.abs(tmp, src, nv)
    asc.compare_scalar(s.mask, tmp, 2.0 ** 23, asc.CmpMode.LT, nv)
    asc.cast(s.lo, src, mode, nv)
    asc.cast(tmp, s.lo, asc.RoundMode.CAST_NONE, nv)
    asc.select(dst, s.mask, tmp, src, nv)


def float32_to_int64(dst: asc.LocalTensor, src: asc.LocalTensor, n: int, nv: int,
                     s: WideScratch) -> None:
    t, high = s.f, s.g
    low, tmp = dst.reinterpret(np.float32), dst.reinterpret(np.float32)[s.cap]
    _integral(t, src, asc.RoundMode.CAST_TRUNC, nv, s, tmp)
    asc.muls(high, t, 1.0 / TWO32, nv)                      # exact
    asc.adds(low, high, 0.5, nv)                            # exact where |high| < 2^23
    asc.abs(tmp, high, nv)
    asc.compare_scalar(s.mask, tmp, 2.0 ** 23, asc.CmpMode.LT, nv)
    asc.cast(s.hi, low, asc.RoundMode.CAST_FLOOR, nv)
    asc.cast(tmp, s.hi, asc.RoundMode.CAST_NONE, nv)
    asc.select(high, s.mask, tmp, high, nv)                 # the nearest multiple of 2^32
    asc.muls(low, high, -TWO32, nv)
    asc.add(low, low, t, nv)                                # t - high, in [-2^31, 2^31): exact
    asc.compare_scalar(s.mask, low, 0.0, asc.CmpMode.LT, nv)
    asc.duplicate(tmp, 1.0, nv)
    asc.select(tmp, s.mask, tmp, 0.0, nv)                   # a negative low word borrows 1
    asc.sub(high, high, tmp, nv)
    asc.duplicate(tmp, -1.0, nv)
    asc.compare_scalar(s.mask, t, TWO63, asc.CmpMode.GE, nv)
    asc.select(low, s.mask, tmp, low, nv)                   # saturated: all ones
    asc.cast(s.lo, low, asc.RoundMode.CAST_RINT, nv)
    asc.cast(s.hi, high, asc.RoundMode.CAST_RINT, nv)       # saturates; NaN -> 0
    _interleave(dst, n, s)


def int32_to_int64(dst: asc.LocalTensor, src: asc.LocalTensor, n: int,
                   s: WideScratch) -> None:
    asc.adds(s.lo, src, 0, n)
    asc.cast(s.f, src, asc.RoundMode.CAST_RINT, n)          # the sign: -1 or 0
    asc.mins(s.f, s.f, 0.0, n)
    asc.muls(s.f, s.f, -1.0, n)
    asc.mins(s.f, s.f, 1.0, n)
    asc.muls(s.f, s.f, -1.0, n)
    asc.cast(s.hi, s.f, asc.RoundMode.CAST_RINT, n)
    _interleave(dst, n, s)


def to_bool(dst: asc.LocalTensor, src: asc.LocalTensor, n: int, nv: int,
            s: WideScratch) -> None:
    """dst (bool bytes) = src != 0, for a float16 or float32 src."""
    asc.compare_scalar(s.mask, src, 0.0, asc.CmpMode.NE, nv)
    asc.select(s.half, s.mask, s.ones, 0.0, nv)
    asc.cast(s.bits, s.half, asc.RoundMode.CAST_RINT, nv)
    pairs = (nv + 1) // 2
    even, odd = s.bits[s.cap], s.bits[s.cap + s.cap // 2]
    asc.gather_mask(even, s.bits, 1, nv)
    asc.gather_mask(odd, s.bits, 2, nv)
    asc.muls(odd, odd, 256, pairs)                          # the odd element: the high byte
    asc.add(dst.reinterpret(np.int16), even, odd, pairs)


def convert_out(y: asc.LocalTensor, result: asc.LocalTensor, n: int, nv: int,
                s: WideScratch) -> None:
    """y (int64 or bool) from the compute result (float16, float32 or int32)."""
    if result.dtype == np.float16:
        asc.cast(s.g, result, asc.RoundMode.CAST_NONE, nv)
        result = s.g
    if y.dtype == np.bool_:
        if result.dtype == np.int32:
            asc.cast(s.g, result, asc.RoundMode.CAST_RINT, nv)
            result = s.g
        to_bool(y, result, n, nv, s)
    elif result.dtype == np.int32:
        int32_to_int64(y, result, n, s)
    else:
        float32_to_int64(y, result, n, nv, s)


def convert_in(into: asc.LocalTensor, src: asc.LocalTensor, n: int, s: WideScratch) -> None:
    """An int64 tile into the compute dtype (int32 or float32)."""
    if into.dtype == np.int32:
        int64_to_int32(into, src, n)
    else:
        int64_to_float32(into, src, n, s)
