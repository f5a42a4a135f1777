"""Native elementwise kernels (tier S): each op is its compute body on the shared template.

Bodies are written as the vector unit offers them: one instruction where the ISA has one,
otherwise composed from exp, ln, reciprocal, div, compare and select (tanh, sigmoid, erf, pow),
in float32 for half inputs where precision needs it (`float32=True`).
"""

from __future__ import annotations

import math

from ..ascend import lang as asc
from ..hixl import get_op
from ..hixl.dtypes import FLOATS
from ..nixl import KernelEntry, TensorDesc, register_kernel
from ..nixl.tuning import TuningSpace
from . import family_ops, vector_math
from .elementwise import make_kernel, plan
from .program import Body, BodyArgs, Step
from .version import BUILT_FOR_RUNTIME

SQRT_HALF = 1 / math.sqrt(2)
GELU_TANH_C = math.sqrt(2 / math.pi)
# erf(z) for z >= 0: Abramowitz & Stegun, Handbook of Mathematical Functions, 7.1.26
# (absolute error below 1.5e-7): 1 - t (a1 + t (a2 + t (a3 + t (a4 + t a5)))) exp(-z^2),
# t = 1 / (1 + p z).
ERF_P = 0.3275911
ERF_A = (0.254829592, -0.284496736, 1.421413741, -1.453152027, 1.061405429)


# ---------------------------------------------------------------- building blocks

def _one_plus_exp_neg(tmp, x, n):
    asc.muls(tmp, x, -1.0, n)
    asc.exp(tmp, tmp, n)
    asc.adds(tmp, tmp, 1.0, n)


def _with_sign_of(y, x, a: BodyArgs, neg, mask):
    """y = |y| carrying the sign of x (select on x >= 0)."""
    asc.compare_scalar(mask, x, 0.0, asc.CmpMode.GE, a.nv)
    asc.muls(neg, y, -1.0, a.nv)
    asc.select(y, mask, y, neg, a.nv)


def _erf(y, z, a: BodyArgs):
    """y = erf(z); uses tmp[0..3]."""
    t, e, neg, m = a.tmp[0], a.tmp[1], a.tmp[2], a.tmp[3].reinterpret("uint8")
    n = a.n
    asc.abs(e, z, n)
    asc.muls(t, e, ERF_P, n)
    asc.adds(t, t, 1.0, n)
    asc.reciprocal(t, t, n)
    asc.muls(y, t, ERF_A[4], n)
    for coef in reversed(ERF_A[:4]):
        asc.adds(y, y, coef, n)
        asc.mul(y, y, t, n)
    asc.mul(e, e, e, n)
    asc.muls(e, e, -1.0, n)
    asc.exp(e, e, n)
    asc.mul(y, y, e, n)
    asc.muls(y, y, -1.0, n)
    asc.adds(y, y, 1.0, n)
    _with_sign_of(y, z, a, neg, m)


# ---------------------------------------------------------------- bodies

def _binary(instr):
    return Body(lambda a: instr(a.y, a.xs[0], a.xs[1], a.n))


def _unary(instr, float32=False):
    return Body(lambda a: instr(a.y, a.xs[0], a.n), float32=float32)


def _leaky_relu(a: BodyArgs):
    tmp = a.tmp[0]
    asc.mins(tmp, a.xs[0], 0.0, a.n)
    asc.muls(tmp, tmp, a.attrs["alpha"], a.n)
    asc.maxs(a.y, a.xs[0], 0.0, a.n)
    asc.add(a.y, a.y, tmp, a.n)


def _sigmoid(a: BodyArgs):
    _one_plus_exp_neg(a.tmp[0], a.xs[0], a.n)
    asc.reciprocal(a.y, a.tmp[0], a.n)


def _silu(a: BodyArgs):
    _one_plus_exp_neg(a.tmp[0], a.xs[0], a.n)
    asc.div(a.y, a.xs[0], a.tmp[0], a.n)


def _gelu(a: BodyArgs):
    x, y, n = a.xs[0], a.y, a.n
    if a.attrs.get("approximate", "none") == "tanh":
        u = a.tmp[0]
        asc.mul(u, x, x, n)
        asc.mul(u, u, x, n)
        asc.muls(u, u, 0.044715, n)
        asc.add(u, u, x, n)
        asc.muls(u, u, GELU_TANH_C, n)
        vector_math.tanh_fast(y, u, a.tmp[1], n)
    else:
        z = a.tmp[4]
        asc.muls(z, x, SQRT_HALF, n)
        _erf(y, z, a)
    asc.adds(y, y, 1.0, n)
    asc.mul(y, y, x, n)
    asc.muls(y, y, 0.5, n)


def _pow(a: BodyArgs):
    """x ** p for a scalar p: the ISA's own instruction for the common exponents, else
    exp(p ln|x|) with the sign restored for odd integer p (ln of a negative x gives the NaN
    a fractional power of it should)."""
    x, y, n, p = a.xs[0], a.y, a.n, float(a.attrs["exponent"])
    special = {0.0: lambda: asc.duplicate(y, 1.0, n), 1.0: lambda: asc.adds(y, x, 0.0, n),
               2.0: lambda: asc.mul(y, x, x, n), 0.5: lambda: asc.sqrt(y, x, n),
               -1.0: lambda: asc.reciprocal(y, x, n)}
    if p in special:
        special[p]()
        return
    tmp = a.tmp[0]
    integer = p.is_integer()
    if integer:
        asc.abs(tmp, x, n)
        asc.ln(tmp, tmp, n)
    else:
        asc.ln(tmp, x, n)
    asc.muls(tmp, tmp, p, n)
    asc.exp(y, tmp, n)
    if integer and int(p) % 2:
        _with_sign_of(y, x, a, a.tmp[1], a.tmp[2].reinterpret("uint8"))


def _clip(a: BodyArgs):
    src = a.xs[0]
    lo, hi = a.attrs.get("min"), a.attrs.get("max")
    if lo is None and hi is None:
        asc.adds(a.y, src, 0.0, a.n)
    if lo is not None:
        asc.maxs(a.y, src, lo, a.n)
        src = a.y
    if hi is not None:
        asc.mins(a.y, src, hi, a.n)


def _where(a: BodyArgs):
    cond, x, other = a.xs
    mask = a.tmp[0].reinterpret("uint8")
    asc.compare_scalar(mask, cond, 0.0, asc.CmpMode.NE, a.nv)
    asc.select(a.y, mask, x, other, a.nv)


BODIES: dict[str, Body] = {
    "Add": _binary(asc.add), "Sub": _binary(asc.sub), "Mul": _binary(asc.mul),
    "Div": _binary(asc.div), "Maximum": _binary(asc.max), "Minimum": _binary(asc.min),
    "Relu": _unary(asc.relu), "Abs": _unary(asc.abs),
    "Exp": _unary(asc.exp), "Log": _unary(asc.ln), "Sqrt": _unary(asc.sqrt),
    "Rsqrt": _unary(asc.rsqrt), "Reciprocal": _unary(asc.reciprocal),
    "Neg": Body(lambda a: asc.muls(a.y, a.xs[0], -1.0, a.n)),
    "Adds": Body(lambda a: asc.adds(a.y, a.xs[0], a.attrs["scalar"], a.n)),
    "Muls": Body(lambda a: asc.muls(a.y, a.xs[0], a.attrs["scalar"], a.n)),
    "LeakyRelu": Body(_leaky_relu, temps=1),
    "Sigmoid": Body(_sigmoid, temps=1, float32=True),
    "Silu": Body(_silu, temps=1, float32=True),
    "Tanh": Body(lambda a: vector_math.tanh(a.y, a.xs[0], a.tmp, a.n, a.nv), temps=3,
                 float32=True),
    "Erf": Body(lambda a: _erf(a.y, a.xs[0], a), temps=4, float32=True),
    "Gelu": Body(_gelu, temps=5, float32=True),
    "Pow": Body(_pow, temps=3, float32=True, scalars=("exponent",)),
    "Clip": Body(_clip, scalars=("min", "max")),
    "Where": Body(_where, temps=1),
    "Cast": Body(None),
}
# ---- the model-family ops, comparisons and logic (family_ops.py), on the same template
BODIES.update(family_ops.BODIES)
INPUT_TYPES = family_ops.INPUT_TYPES         # an op's native input dtypes, if not FLOATS
CAST_TYPES = FLOATS + ("int32", "int64", "bool")
TUNING_SPACE = TuningSpace(buffer_num=(1, 2, 4, 8), tile_div=(1, 2, 4), core_div=(1, 2))


# ---------------------------------------------------------------- which cases go native

def _declines(op: str):
    n_inputs = len(get_op(op).inputs)
    first_scalar = n_inputs - len(BODIES[op].scalars)    # scalar operands trail the inputs

    def declines(in_descs, attrs) -> str | None:
        present = [d for d in in_descs if d is not None]
        if any(d.is_padded for d in present):
            return "padded storage runs on the shim"
        for d in in_descs[first_scalar:]:
            if d is not None and d.size != 1:
                return f"a non-scalar {op} operand runs on the shim (shape {d.shape})"
        allowed = CAST_TYPES if op == "Cast" else INPUT_TYPES.get(op, FLOATS)
        data = [d for i, d in enumerate(in_descs)
                if d is not None and not (op == "Where" and i == 0)]
        bad = [d.dtype for d in data if d.dtype not in allowed]
        if op == "Cast" and attrs.get("to") not in CAST_TYPES:
            bad.append(attrs.get("to"))
        if bad:
            return f"native {op} has no {bad[0]} path (has {', '.join(allowed)})"
        if op == "Where" and in_descs[0].dtype != "bool":
            return "Where's condition must be bool"
        return family_ops.declines(op, in_descs, attrs)
    return declines


def _out_round(op: str, attrs: dict) -> str:
    """Cast to an integer truncates toward zero (ONNX); every other narrowing rounds to even."""
    return "CAST_TRUNC" if op == "Cast" and attrs.get("to") == "int32" else "CAST_RINT"


def _tiling(op: str):
    body = BODIES[op]
    n_inputs = len(get_op(op).inputs)

    def tiling(ins, outs, attrs, chip, config):
        step = Step(op, body, tuple(range(n_inputs)), tuple(sorted(attrs.items())))
        descs = list(ins) + [None] * (n_inputs - len(ins))   # omitted optional inputs
        return plan(descs, outs[0], chip, (step,), config, _out_round(op, attrs))
    return tiling


def _register(op: str) -> None:
    n_inputs = len(get_op(op).inputs)
    dtypes = CAST_TYPES if op == "Cast" else (("bool",) + FLOATS if op == "Where"
                                              else INPUT_TYPES.get(op, FLOATS))
    register_kernel(KernelEntry(
        op=op, kernel=make_kernel(f"{op.lower()}_kernel", n_inputs), tiling=_tiling(op),
        dtypes=dtypes, built_for_runtime=BUILT_FOR_RUNTIME, declines=_declines(op),
        tile_unit=_tile_unit(op), tuning_space=TUNING_SPACE))


def _tile_unit(op: str):
    def unit(spec, chip) -> int:
        desc = TensorDesc.nd((1 << 20,), spec.dtype)
        scalars = len(BODIES[op].scalars)
        n = len(get_op(op).inputs) - scalars
        out = TensorDesc.nd(desc.shape, "bool") if op in family_ops.BOOL_OUTPUTS else desc
        launch = _tiling(op)([desc] * n + [TensorDesc.nd((), spec.dtype)] * scalars, [out], {},
                             chip, None)
        return launch.tiling.tile * chip.aiv_cores
    return unit


for _op in BODIES:
    _register(_op)


def _register_cast_like() -> None:
    """CastLike is Cast to the dtype of `like`, whose values the kernel never reads: Cast's
    tiling, declines and kernel, given `to` from like's desc."""
    cast_tiling, cast_declines = _tiling("Cast"), _declines("Cast")
    register_kernel(KernelEntry(
        op="CastLike", kernel=make_kernel("cast_like_kernel", 1),
        tiling=lambda ins, outs, attrs, chip, config: cast_tiling(
            ins[:1], outs, {"to": ins[1].dtype}, chip, config),
        dtypes=CAST_TYPES, built_for_runtime=BUILT_FOR_RUNTIME,
        declines=lambda descs, attrs: cast_declines(descs[:1], {"to": descs[1].dtype}),
        tile_unit=_tile_unit("Cast"), tuning_space=TUNING_SPACE))


_register_cast_like()
