"""Compute bodies of the model-family elementwise ops (the activations of CNNs, detectors and
decoders, rounding, trigonometry, modulo), the comparisons and the logical ops.

elementwise_ops registers them on the elementwise template with the others; this module says,
besides the bodies, which input dtypes each takes natively (`INPUT_TYPES`, float16, bfloat16
and float32 unless listed) and which produce bool (`BOOL_OUTPUTS`). A comparison or logical op
computes 0 and 1 in the compute dtype and the template's conversion on the way out makes them
bool bytes; bool inputs arrive as float16 0 and 1. Integer Mod and the comparisons compute on
int32 values as they are (`Body.ints`), and the comparisons on int64 values as their two words
(`Body.words`), exactly.
"""

from __future__ import annotations

import numpy as np

from ..ascend import lang as asc
from ..hixl.dtypes import FLOATS
from . import vector_math as vm
from .program import Body, BodyArgs, Words

I32, F32 = np.dtype(np.int32), np.dtype(np.float32)
DEKKER_SPLIT = 4097.0      # 2^12 + 1: splits a float32 into two halves of 12 bits (Dekker)


def _mask(t) -> asc.LocalTensor:
    return t.reinterpret(np.uint8)


# ---------------------------------------------------------------- activations

def _hard_sigmoid(a: BodyArgs, alpha: float, beta: float, y=None) -> None:
    y = a.y if y is None else y
    asc.muls(y, a.xs[0], alpha, a.n)
    asc.adds(y, y, beta, a.n)
    asc.maxs(y, y, 0.0, a.n)
    asc.mins(y, y, 1.0, a.n)


def _hard_swish(a: BodyArgs) -> None:
    """x * HardSigmoid(x) with alpha 1/6 and beta 1/2 (ONNX)."""
    _hard_sigmoid(a, 1 / 6, 0.5, a.tmp[0])
    asc.mul(a.y, a.tmp[0], a.xs[0], a.n)


def _mish(a: BodyArgs) -> None:
    """x * tanh(softplus(x)), both to float32's relative precision where they are tiny."""
    s = a.tmp[4]
    vm.softplus(s, a.xs[0], a.tmp, a.n, a.nv)
    vm.tanh(a.y, s, a.tmp, a.n, a.nv)
    asc.mul(a.y, a.y, a.xs[0], a.n)


def _prelu(a: BodyArgs) -> None:
    """min(x, 0) * slope + max(x, 0); the slope broadcasts like any input of the template."""
    x, slope, t = a.xs[0], a.xs[1], a.tmp[0]
    asc.mins(t, x, 0.0, a.n)
    asc.mul(t, t, slope, a.n)
    asc.maxs(a.y, x, 0.0, a.n)
    asc.add(a.y, a.y, t, a.n)


def _elu(a: BodyArgs, alpha: float, gamma: float = 1.0) -> None:
    """gamma (max(x, 0) + alpha expm1(min(x, 0))): Elu, and Selu with its gamma."""
    x, e = a.xs[0], a.tmp[3]
    asc.mins(e, x, 0.0, a.n)
    vm.expm1_nonpositive(a.y, e, a.tmp, a.n, a.nv)
    asc.muls(a.y, a.y, alpha, a.n)
    asc.maxs(e, x, 0.0, a.n)
    asc.add(a.y, a.y, e, a.n)
    if gamma != 1.0:
        asc.muls(a.y, a.y, gamma, a.n)


def _sign(a: BodyArgs) -> None:
    """1 where x > 0, -1 where x < 0, else 0 (NaN stays NaN)."""
    x, y, ones, mask, nv = a.xs[0], a.y, a.tmp[0], _mask(a.tmp[1]), a.nv
    asc.duplicate(ones, 1.0, nv)
    asc.compare_scalar(mask, x, 0.0, asc.CmpMode.GT, nv)
    asc.select(y, mask, ones, 0.0, nv)
    asc.duplicate(ones, -1.0, nv)
    asc.compare_scalar(mask, x, 0.0, asc.CmpMode.LT, nv)
    asc.select(y, mask, ones, y, nv)
    asc.compare(mask, x, x, asc.CmpMode.EQ, nv)
    asc.select(y, mask, y, x, nv)


# ---------------------------------------------------------------- modulo

def _fmod(a: BodyArgs) -> None:
    """C's fmod (the sign of the dividend), exact while |a / b| < 2^23: with A = |a|,
    B = |b| and t = trunc(A / B), the remainder A - t B, t B taken exactly as a sum of two
    floats (Dekker's product), brought into [0, B) by one step either way (t may be one off),
    then given a's sign."""
    x, d, n, nv = a.xs[0], a.xs[1], a.n, a.nv
    big_a, big_b, bh, t, bl, th, tl, err = a.tmp[:8]
    mask = _mask(a.tmp[8])
    asc.abs(big_a, x, n)
    asc.abs(big_b, d, n)
    asc.div(bh, big_a, big_b, n)
    vm.integral(t, bh, asc.RoundMode.CAST_TRUNC, [bl, th], n, nv)
    for whole, hi, lo in ((big_b, bh, bl), (t, th, tl)):      # whole = hi + lo, 12 bits each
        asc.muls(hi, whole, DEKKER_SPLIT, n)
        asc.sub(lo, hi, whole, n)
        asc.sub(hi, hi, lo, n)
        asc.sub(lo, whole, hi, n)
    asc.mul(t, t, big_b, n)                                   # the rounded product
    asc.mul(err, th, bh, n)
    asc.sub(err, err, t, n)
    for u, v in ((th, bl), (tl, bh), (tl, bl)):
        asc.mul(u, u, v, n)
        asc.add(err, err, u, n)
    asc.sub(big_a, big_a, t, n)
    asc.sub(big_a, big_a, err, n)                             # the remainder, maybe one B off
    asc.add(t, big_a, big_b, n)
    asc.compare_scalar(mask, big_a, 0.0, asc.CmpMode.LT, nv)
    asc.select(big_a, mask, t, big_a, nv)
    asc.sub(t, big_a, big_b, n)
    asc.compare(mask, big_a, big_b, asc.CmpMode.GE, nv)
    asc.select(big_a, mask, t, big_a, nv)
    asc.muls(t, big_a, -1.0, n)
    asc.compare_scalar(mask, x, 0.0, asc.CmpMode.LT, nv)
    asc.select(a.y, mask, t, big_a, nv)


def _as_float(dst, src, n) -> asc.LocalTensor:
    """int32 -> float32 (a scratch tensor seen as float32); the sign is always kept."""
    f = dst.reinterpret(F32)
    asc.cast(f, src, asc.RoundMode.CAST_NONE, n)
    return f


def _select_int(dst, mask, src0, src1, nv) -> None:
    """Select between int32 tensors: the bits move as they are, seen as float32."""
    asc.select(dst.reinterpret(F32), mask, src0.reinterpret(F32), src1.reinterpret(F32), nv)


def _python_mod(a: BodyArgs) -> None:
    """Integer modulo with the divisor's sign (ONNX fmod=0), exact over int32: twice
    r -= trunc(float(r) / float(b)) b in int32 (the float quotient is close, the int32
    arithmetic exact), then r += b where r and b differ in sign, r -= b where |r| >= |b|
    (sign tests on float32 copies, which keep signs); 0 for b = 0, as numpy gives."""
    x, d, y, n, nv = a.xs[0], a.xs[1], a.y, a.n, a.nv
    rf, df, t, mask = a.tmp[0], a.tmp[1], a.tmp[2], _mask(a.tmp[3])
    df = _as_float(df, d, n)
    asc.adds(y, x, 0, n)
    for _ in range(2):
        q = _as_float(rf, y, n)
        asc.div(q, q, df, n)
        asc.cast(t, q, asc.RoundMode.CAST_TRUNC, n)
        asc.mul(t, t, d, n)
        asc.sub(y, y, t, n)
    for step, sign in ((asc.add, asc.CmpMode.LT), (asc.sub, asc.CmpMode.GE)):
        step(t, y, d, n)
        src = y if step is asc.add else t
        q = _as_float(rf, src, n)
        asc.mul(q, q, df, n)
        asc.compare_scalar(mask, q, 0.0, sign, nv)
        _select_int(y, mask, t, y, nv)
    asc.compare_scalar(mask, df, 0.0, asc.CmpMode.NE, nv)
    asc.select(y.reinterpret(F32), mask, y.reinterpret(F32), 0.0, nv)     # int32 0: 0.0's bits


def _mod(a: BodyArgs) -> None:
    if a.y.dtype == I32:
        _python_mod(a)
    else:
        _fmod(a)


# ---------------------------------------------------------------- comparisons and logic

def _ones_where(out, mask, nv: int) -> None:
    """out (float32) = 1.0 where the mask bit is set, else 0.0."""
    asc.duplicate(out, 1.0, nv)
    asc.select(out, mask, out, 0.0, nv)


def _ordered(out, x, y, mode: asc.CmpMode, tmp: list, nv: int) -> None:
    """out (float32) = 1.0 where `x mode y` holds for int32 x and y, else 0.0, exactly: where
    their float32 roundings differ, those order them (rounding is monotone); where they are
    equal, |x - y| <= 128 (float32's spacing below 2^31), so x - y is exact in int32 and in
    float32, and its sign decides. Scratch: tmp[0] (the mask) to tmp[3]."""
    mask, fx, fy = _mask(tmp[0]), tmp[1].reinterpret(F32), tmp[2].reinterpret(F32)
    asc.cast(fx, x, asc.RoundMode.CAST_NONE, nv)
    asc.cast(fy, y, asc.RoundMode.CAST_NONE, nv)
    diff = tmp[3].reinterpret(I32)
    asc.sub(diff, x, y, nv)
    near = _as_float(diff, diff, nv)
    asc.compare(mask, fx, fy, mode, nv)
    _ones_where(out, mask, nv)                       # the roundings' order
    asc.compare_scalar(mask, near, 0.0, mode, nv)
    _ones_where(near, mask, nv)                      # the difference's sign
    asc.compare(mask, fx, fy, asc.CmpMode.EQ, nv)
    asc.select(out, mask, near, out, nv)


def _equal_words(a: BodyArgs) -> None:
    """int64 ==: both words' differences are zero (|float(d_hi)| + |float(d_lo)| == 0; a
    nonzero int32 is at least 1 in float32, and neither term cancels the other)."""
    x, w = a.xs
    mask, d_hi, d_lo = _mask(a.tmp[0]), a.tmp[1].reinterpret(I32), a.tmp[2].reinterpret(I32)
    asc.sub(d_hi, x.hi, w.hi, a.nv)
    asc.sub(d_lo, x.lo, w.lo, a.nv)
    f_hi, f_lo = _as_float(d_hi, d_hi, a.nv), _as_float(d_lo, d_lo, a.nv)
    asc.abs(f_hi, f_hi, a.nv)
    asc.abs(f_lo, f_lo, a.nv)
    asc.add(f_hi, f_hi, f_lo, a.nv)
    asc.compare_scalar(mask, f_hi, 0.0, asc.CmpMode.EQ, a.nv)
    _ones_where(a.y, mask, a.nv)


def _ordered_words(a: BodyArgs, mode: asc.CmpMode) -> None:
    """int64 order: the high words' order where they differ, else the low words' (their
    offset makes signed order the unsigned order of the low halves)."""
    x, w = a.xs
    low = a.tmp[4].reinterpret(F32)
    _ordered(a.y, x.hi, w.hi, mode, a.tmp, a.nv)
    _ordered(low, x.lo, w.lo, mode, a.tmp, a.nv)
    mask, diff = _mask(a.tmp[0]), a.tmp[1].reinterpret(I32)
    asc.sub(diff, x.hi, w.hi, a.nv)
    asc.compare_scalar(mask, _as_float(diff, diff, a.nv), 0.0, asc.CmpMode.EQ, a.nv)
    asc.select(a.y, mask, low, a.y, a.nv)


def _compare(mode: asc.CmpMode):
    def body(a: BodyArgs) -> None:
        """1 where the comparison holds, else 0, in the compute dtype; exact on int32 values
        and on int64 words."""
        mask, y = _mask(a.tmp[0]), a.y
        if isinstance(a.xs[0], Words):
            if mode == asc.CmpMode.EQ:
                _equal_words(a)
            else:
                _ordered_words(a, mode)
            return
        if y.dtype == I32:
            ones = a.tmp[2].reinterpret(F32)
            if mode == asc.CmpMode.EQ:       # a - b == 0, exact in int32
                diff = a.tmp[1]
                asc.sub(diff, a.xs[0], a.xs[1], a.n)
                asc.compare_scalar(mask, _as_float(diff, diff, a.n), 0.0, mode, a.nv)
                _ones_where(ones, mask, a.nv)
            else:
                ones = a.tmp[4].reinterpret(F32)
                _ordered(ones, a.xs[0], a.xs[1], mode, a.tmp, a.nv)
            asc.cast(y, ones, asc.RoundMode.CAST_RINT, a.n)
            return
        asc.compare(mask, a.xs[0], a.xs[1], mode, a.nv)
        _ones_where(y, mask, a.nv)
    return body


def _xor(a: BodyArgs) -> None:
    asc.sub(a.y, a.xs[0], a.xs[1], a.n)
    asc.abs(a.y, a.y, a.n)


def _not(a: BodyArgs) -> None:
    asc.muls(a.y, a.xs[0], -1.0, a.n)
    asc.adds(a.y, a.y, 1.0, a.n)


COMPARISONS = {"Equal": asc.CmpMode.EQ, "Greater": asc.CmpMode.GT, "Less": asc.CmpMode.LT,
               "GreaterOrEqual": asc.CmpMode.GE, "LessOrEqual": asc.CmpMode.LE}
LOGICAL = ("And", "Or", "Xor", "Not")
BOOL_OUTPUTS = frozenset(COMPARISONS) | frozenset(LOGICAL)

BODIES: dict[str, Body] = {
    "HardSigmoid": Body(lambda a: _hard_sigmoid(a, a.attrs["alpha"], a.attrs["beta"])),
    "HardSwish": Body(_hard_swish, temps=1),
    "Softplus": Body(lambda a: vm.softplus(a.y, a.xs[0], a.tmp, a.n, a.nv), temps=4,
                     float32=True),
    "Mish": Body(_mish, temps=5, float32=True),
    "PRelu": Body(_prelu, temps=1),
    "Elu": Body(lambda a: _elu(a, a.attrs["alpha"]), temps=4, float32=True),
    "Selu": Body(lambda a: _elu(a, a.attrs["alpha"], a.attrs["gamma"]), temps=4,
                 float32=True),
    "Sign": Body(_sign, temps=2),
    "Floor": Body(lambda a: vm.integral(a.y, a.xs[0], asc.RoundMode.CAST_FLOOR, a.tmp, a.n,
                                        a.nv), temps=2, float32=True),
    "Ceil": Body(lambda a: vm.integral(a.y, a.xs[0], asc.RoundMode.CAST_CEIL, a.tmp, a.n,
                                       a.nv), temps=2, float32=True),
    "Round": Body(lambda a: vm.integral(a.y, a.xs[0], asc.RoundMode.CAST_RINT, a.tmp, a.n,
                                        a.nv), temps=2, float32=True),
    "Cos": Body(lambda a: vm.sine(a.y, a.xs[0], a.tmp, a.n, a.nv, shift=1), temps=5,
                float32=True),
    "Sin": Body(lambda a: vm.sine(a.y, a.xs[0], a.tmp, a.n, a.nv), temps=5, float32=True),
    "Mod": Body(_mod, temps=9, float32=True, ints=True),
    **{op: Body(_compare(mode), temps=3 if op == "Equal" else 1, ints=True, words=True,
                int_temps=None if op == "Equal" else 5)
       for op, mode in COMPARISONS.items()},
    "And": Body(lambda a: asc.mul(a.y, a.xs[0], a.xs[1], a.n)),
    "Or": Body(lambda a: asc.max(a.y, a.xs[0], a.xs[1], a.n)),
    "Xor": Body(_xor),
    "Not": Body(_not),
}

INPUT_TYPES: dict[str, tuple[str, ...]] = {
    **{op: FLOATS + ("int32", "int64") for op in COMPARISONS},
    "Equal": FLOATS + ("bool", "int32", "int64"), "Mod": FLOATS + ("int32",),
    **{op: ("bool",) for op in LOGICAL},
}


def declines(op: str, in_descs: list, attrs: dict) -> str | None:
    """What only these bodies refuse: C-style modulo of integers."""
    if op == "Mod" and in_descs[0].dtype == "int32" and attrs.get("fmod"):
        return "native integer Mod computes fmod=0 (the divisor's sign); fmod=1 runs on the shim"
    return None
