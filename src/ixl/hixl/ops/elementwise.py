"""Elementwise ops (tier S): numpy / ONNX broadcasting for binary ops, same shape for unary."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from ..database import register
from ..dtypes import ALL, ANY_FLOAT, DTYPES, FLOATS, NUMERIC, to_numpy
from ..errors import AttrError, ShapeMismatch
from ..schema import (
    ArgSpec,
    Attr,
    OpSchema,
    SampleCase,
    TileMultiple,
    broadcast_shapes,
    broadcasts_to,
    uniform,
)


def _same(shape, arity: int) -> tuple:
    return (shape,) * arity


def boundary_cases(arity: int) -> list[SampleCase]:
    """R8's boundary shapes, every input the same shape."""
    return [
        SampleCase("exact multiple of the tile on every core", _same(TileMultiple(2), arity)),
        SampleCase("tile + 1", _same(TileMultiple(1, plus=1), arity)),
        SampleCase("one element", _same((1,), arity)),
        SampleCase("a dim of size 0", _same((0, 16), arity)),
        SampleCase("last dim of 7 elements: bytes not a multiple of 32", _same((5, 7), arity)),
        SampleCase("prime length", _same((1009,), arity)),
        SampleCase("large", _same((1024, 2048), arity)),
    ]


BROADCAST_CASES = [
    SampleCase("scalar broadcast", ((), (6, 5))),
    SampleCase("row broadcast", ((6, 5), (5,))),
    SampleCase("column broadcast", ((6, 1), (6, 5))),
    SampleCase("general broadcast", ((4, 1, 3), (5, 1))),
]


def with_attrs(cases: list[SampleCase], **attrs: Any) -> list[SampleCase]:
    return [dataclasses.replace(c, attrs={**c.attrs, **attrs}) for c in cases]


def infer_broadcast(schema: OpSchema, specs: list[ArgSpec], attrs: dict) -> list[ArgSpec]:
    return [ArgSpec(broadcast_shapes(schema.name, [s.shape for s in specs]), specs[0].dtype)]


def infer_same(schema: OpSchema, specs: list[ArgSpec], attrs: dict) -> list[ArgSpec]:
    return [ArgSpec(specs[0].shape, specs[0].dtype)]


def binary(name: str, fn: Callable[..., np.ndarray], doc: str, dtypes: Iterable[str] = FLOATS,
           **kw: Any) -> OpSchema:
    kw.setdefault("samples", boundary_cases(2) + BROADCAST_CASES)
    return register(OpSchema(
        name=name, tier="S", family="elementwise", inputs=("a", "b"), dtypes=tuple(dtypes),
        reference_fn=fn, infer_fn=kw.pop("infer_fn", infer_broadcast), doc=doc, **kw))


def unary(name: str, fn: Callable[..., np.ndarray], doc: str, dtypes: Iterable[str] = FLOATS,
          **kw: Any) -> OpSchema:
    kw.setdefault("samples", boundary_cases(1))
    return register(OpSchema(
        name=name, tier="S", family="elementwise", inputs=("x",), dtypes=tuple(dtypes),
        reference_fn=fn, infer_fn=kw.pop("infer_fn", infer_same), doc=doc, **kw))


NUMERIC_TYPES = {"T": NUMERIC}       # what ONNX models feed arithmetic (int8 and unsigned: no)
FLOAT_TYPES = {"T": ANY_FLOAT}
POSITIVE = (0.01, 8.0)               # inputs of log, sqrt, rsqrt


def _div(a, b):
    """Integer division truncates toward zero (ONNX, C), where numpy's // floors."""
    if a.dtype.kind in "iu":
        return np.abs(a) // np.abs(b) * (np.sign(a) * np.sign(b))
    return a / b


def _div_inputs(schema, specs, rng, attrs):
    """Divisors of magnitude 0.5 to 4, either sign: no quotient overflows float16."""
    a, b = specs
    magnitude = uniform(b, rng, (0.5, 4.0))
    return [uniform(a, rng, schema.input_range),
            np.where(rng.random(b.shape) < 0.5, -magnitude, magnitude).astype(magnitude.dtype)]


def _pow(a, b):
    """Integer powers stay integers; a negative integer exponent goes through float64, which
    numpy refuses on integers."""
    if a.dtype.kind in "iu" and b.dtype.kind in "iu" and (b < 0).any():
        return np.power(a.astype(np.float64), b)
    return np.power(a, b)


def _pow_inputs(schema, specs, rng, attrs):
    """Positive bases, so that fractional exponents stay real."""
    base, exponent = specs
    return [uniform(base, rng, (0.25, 4.0)), uniform(exponent, rng, (-2.0, 2.0))]


_erf = np.frompyfunc(math.erf, 1, 1)   # numpy has no erf; math.erf is accurate to the last bit


def erf(x: np.ndarray) -> np.ndarray:
    return np.asarray(_erf(x), dtype=x.dtype)


def _gelu(x, approximate):
    if approximate == "tanh":
        return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))
    return 0.5 * x * (1 + erf(x / math.sqrt(2)))


def _infer_gelu(schema, specs, attrs):
    if attrs["approximate"] not in ("none", "tanh"):
        raise AttrError(f"Gelu: approximate={attrs['approximate']!r} is not allowed "
                        f"(allowed: 'none', 'tanh')")
    return infer_same(schema, specs, attrs)


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


def _infer_clip(schema, specs, attrs):
    for spec, name in zip(specs[1:], ("min", "max")):
        if spec is not None and spec.size != 1:
            raise ShapeMismatch(f"Clip: {name} must be a scalar, got shape {spec.shape}")
    return infer_same(schema, specs, attrs)


def _clip(x, lo=None, hi=None):
    """max then min: when min > max every value becomes max, as ONNX defines."""
    if lo is not None:
        x = np.maximum(x, lo.reshape(()))
    if hi is not None:
        x = np.minimum(x, hi.reshape(()))
    return x


def _clip_inputs(schema, specs, rng, attrs):
    x, lo, hi = (specs + [None, None])[:3]
    return [uniform(x, rng, schema.input_range),
            None if lo is None else np.full(lo.shape, -1.5).astype(to_numpy(lo.dtype)),
            None if hi is None else np.full(hi.shape, 2.5).astype(to_numpy(hi.dtype))]


def _cast(x, to):
    """Float to integer truncates toward zero and saturates, as the chip converts (CAST_TRUNC
    with saturation): NaN -> 0, +inf and values above the range -> the type's max, -inf and
    values below -> its min. Every other conversion is numpy's."""
    target = to_numpy(to)
    if target.kind not in "iu" or x.dtype.kind != "f":
        return x
    info = np.iinfo(target)
    y = np.trunc(np.nan_to_num(x, nan=0.0, posinf=np.inf, neginf=-np.inf))
    high, low = y >= info.max, y <= info.min
    out = np.where(high | low, 0, y).astype(target)
    out[high] = info.max
    out[low] = info.min
    return out


def _infer_cast(schema, specs, attrs):
    if attrs["to"] not in DTYPES:
        raise AttrError(f"Cast: to={attrs['to']!r} is not a dtype ixl has "
                        f"(allowed: {', '.join(DTYPES)})")
    return [ArgSpec(specs[0].shape, attrs["to"])]


def _infer_cast_like(schema, specs, attrs):
    return [ArgSpec(specs[0].shape, specs[1].dtype)]


CAST_CASES = with_attrs(boundary_cases(1), to="float32") + [
    SampleCase("to int32 (truncates toward zero)", ((4, 33),), {"to": "int32"}),
    SampleCase("to int32: NaN -> 0, infinities saturate", ((8,),), {"to": "int32"},
               values={"x": [math.nan, math.inf, -math.inf, 65504.0, -65504.0, 2.7, -2.7, 0.0]}),
    SampleCase("to int32: out-of-range values saturate", ((4,),), {"to": "int32"},
               dtypes=("bfloat16", "float32"), values={"x": [3e9, -3e9, 1e38, -1e38]}),
    SampleCase("to bool (nonzero is true)", ((4, 33),), {"to": "bool"}),
]

# ---- binary arithmetic ----
binary("Add", np.add, "y = a + b, broadcasting", constraints=NUMERIC_TYPES)
binary("Mul", np.multiply, "y = a * b, broadcasting", constraints=NUMERIC_TYPES)
binary("Sub", np.subtract, "y = a - b, broadcasting", constraints=NUMERIC_TYPES)
binary("Div", _div, "y = a / b, broadcasting; integers truncate toward zero",
       constraints=NUMERIC_TYPES, make_inputs=_div_inputs)
binary("Maximum", np.maximum, "y = max(a, b), broadcasting (ONNX Max of two inputs)",
       constraints=NUMERIC_TYPES)
binary("Minimum", np.minimum, "y = min(a, b), broadcasting (ONNX Min of two inputs)",
       constraints=NUMERIC_TYPES)
POW_SCALAR_CASES = [SampleCase(f"scalar exponent {p}", ((6, 37), ()), values={"b": p})
                    for p in (2.0, 3.0, 0.5, -1.0, -1.5, 0.0)] + [
    SampleCase("scalar exponent 2.5, tile + 1", (TileMultiple(1, plus=1), ()), values={"b": 2.5})]
binary("Pow", _pow, "y = a ** b, broadcasting; the exponent may have its own dtype",
       type_of={"b": "T1"}, constraints={"T": NUMERIC, "T1": NUMERIC},
       make_inputs=_pow_inputs,
       samples=boundary_cases(2) + BROADCAST_CASES + POW_SCALAR_CASES)

# ---- unary maps ----
unary("Relu", lambda x: np.maximum(x, 0), "y = max(x, 0)", constraints=NUMERIC_TYPES)
unary("LeakyRelu", lambda x, alpha: np.where(x >= 0, x, x * alpha), "y = x if x >= 0 else alpha*x",
      attrs={"alpha": Attr(float, 0.01, "slope for x < 0")}, constraints=FLOAT_TYPES)
unary("Gelu", _gelu, "y = x * Phi(x); approximate='tanh' uses the tanh formula",
      attrs={"approximate": Attr(str, "none", "'none' (erf) or 'tanh'")},
      infer_fn=_infer_gelu, constraints=FLOAT_TYPES,
      samples=boundary_cases(1) + with_attrs(boundary_cases(1)[2:6], approximate="tanh"))
unary("Silu", lambda x: x * _sigmoid(x), "y = x * sigmoid(x) (not an ONNX op)",
      constraints=FLOAT_TYPES)
unary("Sigmoid", _sigmoid, "y = 1 / (1 + exp(-x))", constraints=FLOAT_TYPES)
unary("Tanh", np.tanh, "y = tanh(x)", constraints=FLOAT_TYPES)
unary("Exp", np.exp, "y = exp(x)", constraints=FLOAT_TYPES)
unary("Log", np.log, "y = ln(x); NaN below 0, -inf at 0", constraints=FLOAT_TYPES,
      input_range=POSITIVE)
unary("Sqrt", np.sqrt, "y = sqrt(x); NaN below 0", constraints=FLOAT_TYPES,
      input_range=POSITIVE)
unary("Rsqrt", lambda x: 1 / np.sqrt(x), "y = 1 / sqrt(x) (not an ONNX op)",
      constraints=FLOAT_TYPES, input_range=POSITIVE)
unary("Reciprocal", lambda x: 1 / x, "y = 1 / x", constraints=FLOAT_TYPES,
      input_range=(0.125, 8.0))
unary("Abs", np.abs, "y = |x|", constraints=NUMERIC_TYPES)
unary("Neg", np.negative, "y = -x", constraints=NUMERIC_TYPES)
unary("Erf", erf, "y = erf(x)", constraints=FLOAT_TYPES)
unary("Adds", lambda x, scalar: x + scalar, "y = x + scalar (an attribute; not an ONNX op)",
      attrs={"scalar": Attr(float, None, "the addend", required=True)},
      samples=with_attrs(boundary_cases(1), scalar=1.5))
unary("Muls", lambda x, scalar: x * scalar, "y = x * scalar (an attribute; not an ONNX op)",
      attrs={"scalar": Attr(float, None, "the factor", required=True)},
      samples=with_attrs(boundary_cases(1), scalar=-0.75))
register(OpSchema(
    name="Clip", tier="S", family="elementwise", inputs=("x", "min", "max"), dtypes=FLOATS,
    reference_fn=_clip, infer_fn=_infer_clip, optional=2, constraints=NUMERIC_TYPES,
    make_inputs=_clip_inputs, doc="y = min(max(x, min), max); an omitted bound does not clip",
    samples=[dataclasses.replace(c, shapes=c.shapes + ((), ())) for c in boundary_cases(1)]
    + [SampleCase("min only", ((5, 7), ())), SampleCase("max only", ((5, 7), None, ())),
       SampleCase("no bounds", ((5, 7),))]))

# ---- dtype conversion ----
unary("Cast", _cast, "y = x converted to dtype `to`; floats to ints truncate toward zero and "
      "saturate as the chip does: NaN -> 0, +-inf and out-of-range values -> the type's max/min",
      attrs={"to": Attr(str, None, "target dtype name", required=True)},
      type_of={"x": "T1"}, constraints={"T1": ALL}, infer_fn=_infer_cast,
      samples=CAST_CASES)
register(OpSchema(
    name="CastLike", tier="S", family="elementwise", inputs=("x", "like"), dtypes=FLOATS,
    reference_fn=lambda x, like: x, infer_fn=_infer_cast_like,
    type_of={"x": "T1", "like": "T2"}, constraints={"T1": ALL, "T2": ALL},
    doc="y = x converted to the dtype of `like` (its values are not read)",
    samples=[dataclasses.replace(c, shapes=c.shapes[:1] + ((1,),)) for c in boundary_cases(1)]))

# ---- activations, rounding, trigonometry (the CNN, detector and decoder families) ----

def _softplus(x):
    """log(1 + exp(x)) without overflow for large x."""
    return np.logaddexp(0, x)


SELU_ALPHA = 1.67326319217681884765625     # ONNX Selu defaults (float32 values of the paper's)
SELU_GAMMA = 1.05070102214813232421875


def _mod(a, b, fmod):
    """fmod=0: the result takes the divisor's sign (Python's %); fmod=1: the dividend's (C)."""
    if fmod:
        return np.fmod(a, b)
    if a.dtype.kind == "f":
        raise AttrError("Mod: float inputs need fmod=1 (ONNX defines fmod=0 for integers only)")
    return np.mod(a, b)


def _infer_mod(schema, specs, attrs):
    if attrs["fmod"] not in (0, 1):
        raise AttrError(f"Mod: fmod={attrs['fmod']} is not allowed (allowed: 0, 1)")
    if not attrs["fmod"] and specs[0].dtype not in ("int32", "int64"):
        raise AttrError(f"Mod: {specs[0].dtype} inputs need fmod=1 (fmod=0 is integer modulo)")
    return infer_broadcast(schema, specs, attrs)


def _nonzero_divisors(schema, specs, rng, attrs):
    """Divisors of magnitude 0.5 to 4 (integers 1 to 4), either sign."""
    a, b = specs
    if to_numpy(b.dtype).kind in "iu":
        magnitude = rng.integers(1, 5, b.shape)
        divisor = np.where(rng.random(b.shape) < 0.5, -magnitude, magnitude)
        return [uniform(a, rng, (-20, 20)), divisor.astype(to_numpy(b.dtype))]
    return _div_inputs(schema, specs, rng, attrs)


def _infer_prelu(schema, specs, attrs):
    x, slope = specs
    if not broadcasts_to(slope.shape, x.shape):
        raise ShapeMismatch(f"PRelu: slope of shape {slope.shape} does not broadcast to x of "
                            f"shape {x.shape} (one way: its dims equal x's trailing dims or 1)")
    return infer_same(schema, specs, attrs)


def _round_inputs(schema, specs, rng, attrs):
    """Values on a 0.5 grid: the halfway cases (to even) occur."""
    x = uniform(specs[0], rng, schema.input_range)
    return [(np.round(x.astype(np.float32) * 2) / 2).astype(x.dtype)]


unary("HardSigmoid", lambda x, alpha, beta: np.clip(alpha * x + beta, 0, 1),
      "y = max(0, min(1, alpha * x + beta))",
      attrs={"alpha": Attr(float, 0.2, "slope"), "beta": Attr(float, 0.5, "offset")},
      constraints=FLOAT_TYPES)
unary("HardSwish", lambda x: x * np.clip(x / 6 + 0.5, 0, 1), "y = x * HardSigmoid(x) with "
      "alpha 1/6, beta 0.5", constraints=FLOAT_TYPES, input_range=(-8.0, 8.0))
unary("Softplus", _softplus, "y = ln(1 + exp(x))", constraints=FLOAT_TYPES,
      input_range=(-20.0, 20.0))
unary("Mish", lambda x: x * np.tanh(_softplus(x)), "y = x * tanh(softplus(x))",
      constraints=FLOAT_TYPES, input_range=(-8.0, 8.0))
unary("Elu", lambda x, alpha: np.where(x < 0, alpha * np.expm1(np.minimum(x, 0)), x),
      "y = x if x >= 0 else alpha * (exp(x) - 1)",
      attrs={"alpha": Attr(float, 1.0, "scale of the negative part")}, constraints=FLOAT_TYPES)
unary("Selu", lambda x, alpha, gamma: gamma * np.where(
          x <= 0, alpha * np.expm1(np.minimum(x, 0)), x),
      "y = gamma * (x if x > 0 else alpha * (exp(x) - 1))",
      attrs={"alpha": Attr(float, SELU_ALPHA, "scale of the negative part"),
             "gamma": Attr(float, SELU_GAMMA, "overall scale")}, constraints=FLOAT_TYPES)
unary("Sign", np.sign, "y = -1, 0 or 1 by the sign of x", constraints=NUMERIC_TYPES)
unary("Floor", np.floor, "y = the largest integer <= x", constraints=FLOAT_TYPES)
unary("Ceil", np.ceil, "y = the smallest integer >= x", constraints=FLOAT_TYPES)
unary("Round", np.round, "y = x rounded to the nearest integer, halves to even",
      constraints=FLOAT_TYPES, make_inputs=_round_inputs)
unary("Cos", np.cos, "y = cos(x)", constraints=FLOAT_TYPES)
unary("Sin", np.sin, "y = sin(x)", constraints=FLOAT_TYPES)
binary("Mod", _mod, "y = a mod b, broadcasting; fmod=1 (required for floats) keeps the "
       "dividend's sign, fmod=0 (integers) the divisor's",
       attrs={"fmod": Attr(int, 0, "1: C fmod (sign of a); 0: Python % (sign of b)")},
       infer_fn=_infer_mod, constraints=NUMERIC_TYPES, make_inputs=_nonzero_divisors,
       samples=with_attrs(boundary_cases(2) + BROADCAST_CASES, fmod=1) + [
           SampleCase("integer modulo, divisor's sign", ((6, 37), (6, 37)), {"fmod": 0},
                      ("int32", "int64"))])
binary("PRelu", lambda x, slope: np.where(x < 0, x * slope, x),
       "y = x if x >= 0 else slope * x; slope broadcasts to x one way (per channel: (C, 1, 1))",
       infer_fn=_infer_prelu, constraints=NUMERIC_TYPES,
       samples=boundary_cases(2) + [
           SampleCase("per-channel slope of NCHW", ((2, 3, 4, 5), (3, 1, 1))),
           SampleCase("scalar slope", ((6, 5), ())),
           SampleCase("row slope", ((6, 5), (5,)))])
