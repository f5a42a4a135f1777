"""Composed vector math: the functions the A2 vector unit has no instruction for, built from
the ones it has (exp, ln, div, reciprocal, compare, select, cast), as Ascend C's high-level math
API composes them. The compute bodies of the elementwise ops use them.

Each function works in float32 (or float16) on the first `n` elements of its operands; `nv` is
`n` rounded up to whole repeats, the count compare and select need. Scratch tensors are passed
in and named in each docstring; a mask is a scratch tensor seen as uint8. None of them writes
its destination before it has read its source for the last time unless the docstring says the
two may not alias.

The constants are mathematics (Taylor coefficients, the digits of pi), not fitted numbers.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from ..ascend import lang as asc

# tanh(x) = x - x^3/3 + 2x^5/15 - 17x^7/315 + 62x^9/2835 - ...: below |x| = 1/4 the next term
# is under 1e-8 relative, where 1 - 2 / (exp(2x) + 1) loses up to 5e-7 to cancellation.
TANH_SERIES = (1.0, -1 / 3, 2 / 15, -17 / 315, 62 / 2835)
TANH_SERIES_BELOW = 0.25
# sin and cos on [-pi/4, pi/4] by their Taylor series: the first omitted terms, r^11/11! and
# r^12/12!, are below 2e-9 there.
SIN_SERIES = tuple((-1) ** k / math.factorial(2 * k + 1) for k in range(5))
COS_SERIES = tuple((-1) ** k / math.factorial(2 * k) for k in range(6))
EXPM1_LOWEST = -80.0        # exp(-80) is a normal float32; expm1 is -1 to float32 below it
INTEGRAL_FROM = 2.0 ** 23   # float32 values this large are integers already
INT32_FROM = 2.0 ** 31      # ... and past this an int32 conversion would saturate


def _split_half_pi(parts: int, bits: int) -> tuple[float, ...]:
    """pi/2 as a sum of float32 constants, each but the last holding at most `bits`
    significant bits, so that k * part is exact for k < 2^(24 - bits) (Cody and Waite)."""
    rest, out = math.pi / 2, []
    for _ in range(parts - 1):
        exp = math.floor(math.log2(rest))
        scale = 2.0 ** (bits - 1 - exp)
        part = math.floor(rest * scale) / scale
        out.append(part)
        rest -= part
    out.append(float(np.float32(rest)))
    return tuple(out)


HALF_PI_PARTS = _split_half_pi(4, 8)   # k * part exact for |k| < 2^16: |x| below about 1e5


def polynomial(y: asc.LocalTensor, z: asc.LocalTensor, coefs: Sequence[float], n: int) -> None:
    """y = coefs[0] + z (coefs[1] + z (...)), by Horner's rule; y and z may not alias."""
    asc.muls(y, z, coefs[-1], n)
    for c in reversed(coefs[1:-1]):
        asc.adds(y, y, c, n)
        asc.mul(y, y, z, n)
    asc.adds(y, y, coefs[0], n)


def tanh_fast(y: asc.LocalTensor, x: asc.LocalTensor, tmp: asc.LocalTensor, n: int) -> None:
    """tanh(x) = 1 - 2 / (exp(2x) + 1): saturates cleanly where exp overflows; near 0 its
    absolute error is a float's, not its relative error. Scratch: tmp."""
    asc.muls(tmp, x, 2.0, n)
    asc.exp(tmp, tmp, n)
    asc.adds(tmp, tmp, 1.0, n)
    asc.reciprocal(tmp, tmp, n)
    asc.muls(y, tmp, -2.0, n)
    asc.adds(y, y, 1.0, n)


def tanh(y: asc.LocalTensor, x: asc.LocalTensor, tmp: list[asc.LocalTensor], n: int,
         nv: int) -> None:
    """tanh(x) to a few float32 ulps relative everywhere: the odd series below |x| = 1/4,
    selected over tanh_fast. Scratch: tmp[0..2]; y and x may not alias."""
    z, series, mask = tmp[0], tmp[1], tmp[2].reinterpret(np.uint8)
    asc.mul(z, x, x, n)
    polynomial(series, z, TANH_SERIES, n)
    asc.mul(series, series, x, n)
    tanh_fast(y, x, z, n)
    asc.abs(z, x, n)
    asc.compare_scalar(mask, z, TANH_SERIES_BELOW, asc.CmpMode.LT, nv)
    asc.select(y, mask, series, y, nv)


def log1p_exp_neg_abs(y: asc.LocalTensor, x: asc.LocalTensor, tmp: list[asc.LocalTensor], n: int,
                      nv: int) -> None:
    """y = ln(1 + exp(-|x|)), to a few ulps relative even where exp(-|x|) is tiny: with
    u = exp(-|x|) and w = 1 + u, ln(1 + u) = ln(w) * u / (w - 1) (Goldberg), and u itself where
    w rounds to 1. Scratch: tmp[0..2]."""
    u, w, mask = tmp[0], tmp[1], tmp[2].reinterpret(np.uint8)
    asc.abs(u, x, n)
    asc.muls(u, u, -1.0, n)
    asc.exp(u, u, n)
    asc.adds(w, u, 1.0, n)
    asc.ln(y, w, n)
    asc.adds(w, w, -1.0, n)
    asc.div(y, y, w, n)
    asc.mul(y, y, u, n)
    asc.compare_scalar(mask, w, 0.0, asc.CmpMode.EQ, nv)
    asc.select(y, mask, u, y, nv)


def softplus(y: asc.LocalTensor, x: asc.LocalTensor, tmp: list[asc.LocalTensor], n: int,
             nv: int) -> None:
    """y = ln(1 + exp(x)) = max(x, 0) + ln(1 + exp(-|x|)): no overflow for large x, full
    relative precision for very negative x. Scratch: tmp[0..3]; y and x may not alias."""
    log1p_exp_neg_abs(y, x, tmp, n, nv)
    asc.maxs(tmp[3], x, 0.0, n)
    asc.add(y, y, tmp[3], n)


def expm1_nonpositive(y: asc.LocalTensor, x: asc.LocalTensor, tmp: list[asc.LocalTensor], n: int,
                      nv: int) -> None:
    """y = exp(x) - 1 for x <= 0, to a few ulps relative near 0 (Kahan): with u = exp(x),
    (u - 1) * x / ln(u), and x itself where u rounds to 1; x is clamped at EXPM1_LOWEST, where
    the result is -1 to float32. Scratch: tmp[0..2]; y and x may not alias."""
    m, u, mask = tmp[0], tmp[1], tmp[2].reinterpret(np.uint8)
    asc.maxs(m, x, EXPM1_LOWEST, n)
    asc.exp(u, m, n)
    asc.ln(y, u, n)
    asc.div(y, m, y, n)
    asc.adds(u, u, -1.0, n)
    asc.mul(y, y, u, n)
    asc.compare_scalar(mask, u, 0.0, asc.CmpMode.EQ, nv)
    asc.select(y, mask, m, y, nv)


def integral(y: asc.LocalTensor, x: asc.LocalTensor, mode: asc.RoundMode,
             tmp: list[asc.LocalTensor], n: int, nv: int) -> None:
    """y = x rounded to an integer by `mode` (CAST_FLOOR, CAST_CEIL, CAST_RINT: halves to
    even), through an int32 cast and back; values from 2^23 on are integers already, and
    NaN and the infinities pass as they are. Scratch: tmp[0..1]; y and x may not alias."""
    as_int, mask = tmp[0].reinterpret(np.int32), tmp[1].reinterpret(np.uint8)
    asc.cast(as_int, x, mode, n)
    asc.cast(y, as_int, asc.RoundMode.CAST_NONE, n)
    asc.abs(tmp[0], x, n)
    asc.compare_scalar(mask, tmp[0], INTEGRAL_FROM, asc.CmpMode.LT, nv)
    asc.select(y, mask, y, x, nv)


def quadrant_reduce(r: asc.LocalTensor, k: asc.LocalTensor, x: asc.LocalTensor,
                    tmp: list[asc.LocalTensor], n: int, nv: int, shift: int) -> None:
    """x = (k - shift) pi/2 + r with |r| <= pi/4 (Cody-Waite: k pi/2 subtracted in parts that
    multiply exactly); k is left as k mod 4, a float in {0, 1, 2, 3}. Scratch: tmp[0]."""
    as_int = tmp[0].reinterpret(np.int32)
    asc.muls(k, x, 2 / math.pi, n)
    asc.cast(as_int, k, asc.RoundMode.CAST_RINT, n)
    asc.cast(k, as_int, asc.RoundMode.CAST_NONE, n)
    asc.adds(r, x, 0.0, n)
    for part in HALF_PI_PARTS:
        asc.muls(tmp[0], k, part, n)
        asc.sub(r, r, tmp[0], n)
    if shift:
        asc.adds(k, k, float(shift), n)
    asc.muls(tmp[0], k, 0.25, n)                       # k mod 4 = k - 4 floor(k / 4)
    asc.cast(as_int, tmp[0], asc.RoundMode.CAST_FLOOR, n)
    asc.cast(tmp[0], as_int, asc.RoundMode.CAST_NONE, n)
    asc.muls(tmp[0], tmp[0], -4.0, n)
    asc.add(k, k, tmp[0], n)


def sine(y: asc.LocalTensor, x: asc.LocalTensor, tmp: list[asc.LocalTensor], n: int, nv: int,
         shift: int = 0) -> None:
    """y = sin(x + shift * pi/2) (shift 1: cos x): sin or cos of the reduced argument by the
    quadrant, negated in quadrants 2 and 3; NaN for an infinite x. Accurate to float32 for |x|
    below about 1e5 (the reduction's exact range). Scratch: tmp[0..4]; y and x may not alias."""
    r, k, z, c, mask = tmp[0], tmp[1], tmp[2], tmp[3], tmp[4].reinterpret(np.uint8)
    quadrant_reduce(r, k, x, [z], n, nv, shift)
    asc.mul(z, r, r, n)
    polynomial(y, z, SIN_SERIES, n)
    asc.mul(y, y, r, n)
    polynomial(c, z, COS_SERIES, n)
    for odd in (1.0, 3.0):
        asc.compare_scalar(mask, k, odd, asc.CmpMode.EQ, nv)
        asc.select(y, mask, c, y, nv)
    asc.muls(c, y, -1.0, n)
    asc.compare_scalar(mask, k, 2.0, asc.CmpMode.GE, nv)
    asc.select(y, mask, c, y, nv)
    asc.sub(c, x, x, n)                       # 0, or NaN for an infinite x: sin(inf) is NaN
    asc.add(y, y, c, n)
