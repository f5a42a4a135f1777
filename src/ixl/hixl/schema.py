"""The op schema: what an op means, written once, runnable at once.

An OpSchema names the op's inputs, attributes and dtypes; checks a call (shapes, dtypes,
attributes) with errors that say what was wrong and what is allowed; infers output specs; holds
the numpy reference that every backend is compared against; and lists sample cases, boundary
shapes included, with a tolerance per dtype.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np

from . import dtypes as dt
from .errors import AttrError, DtypeError, ShapeMismatch

Shape = tuple[int, ...]


@dataclass(frozen=True)
class ArgSpec:
    """Shape and dtype name of one tensor argument (all that semantics need)."""

    shape: Shape
    dtype: str

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))


@dataclass(frozen=True)
class Tolerance:
    """|out - ref| <= atol + rtol * |ref| elementwise; NaN matches NaN, inf matches inf."""

    atol: float
    rtol: float


# Default tolerances: a few units in the last place of each type (float16 eps 2^-10,
# bfloat16 eps 2^-7, float32 eps 2^-23), loose enough for transcendental approximations.
DEFAULT_TOLERANCE = {
    "float16": Tolerance(1e-3, 1e-3),
    "bfloat16": Tolerance(8e-3, 8e-3),
    "float32": Tolerance(1e-5, 1e-5),
    "float64": Tolerance(1e-12, 1e-12),
}
EXACT = Tolerance(0.0, 0.0)


@dataclass(frozen=True)
class TileMultiple:
    """A 1-D size given in units of the running kernel's tile, resolved by `verify`:
    `tiles` whole tiles on every core, plus `plus` elements."""

    tiles: int
    plus: int = 0


@dataclass(frozen=True)
class SampleCase:
    note: str
    shapes: tuple          # one entry per input: a Shape or a TileMultiple
    attrs: dict = field(default_factory=dict)
    dtypes: tuple | None = None    # restrict to these dtypes (None: every dtype of the op)


@dataclass(frozen=True)
class Attr:
    kind: type
    default: Any = None
    doc: str = ""


def _golden_dtype(dtype: np.dtype) -> np.dtype:
    name = dt.name_of(dtype)
    if name in dt.HALF:
        return np.dtype(np.float32)
    return np.dtype(np.float64) if dt.is_float(name) else dtype


def broadcast_shapes(op: str, shapes: Sequence[Shape]) -> Shape:
    """numpy / ONNX multidirectional broadcasting, with an error naming both shapes."""
    try:
        return tuple(int(d) for d in np.broadcast_shapes(*shapes))
    except ValueError:
        listed = " and ".join(str(tuple(s)) for s in shapes)
        raise ShapeMismatch(
            f"{op}: shapes {listed} do not broadcast (dims must be equal or 1, "
            f"compared from the last)") from None


@dataclass
class OpSchema:
    name: str
    tier: str                       # S, A, B, C (R3)
    family: str
    inputs: tuple[str, ...]
    dtypes: tuple[str, ...]
    reference_fn: Callable[..., Any]        # (*float arrays, **attrs) -> array or tuple
    infer_fn: Callable[..., list[ArgSpec]]  # (schema, specs, attrs) -> output specs
    samples: list[SampleCase]
    outputs: tuple[str, ...] = ("y",)
    attrs: dict[str, Attr] = field(default_factory=dict)
    tolerances: dict[str, Tolerance] = field(default_factory=dict)
    input_range: tuple[float, float] = (-4.0, 4.0)
    doc: str = ""
    # ONNX-style type variables: input name -> type variable (default "T" for every input),
    # and type variable -> allowed dtypes ("T" defaults to `dtypes`). Inputs that share a type
    # variable must share a dtype.
    type_of: dict[str, str] = field(default_factory=dict)
    constraints: dict[str, tuple[str, ...]] = field(default_factory=dict)
    optional: int = 0               # how many trailing inputs may be omitted (or None)
    # make_inputs(schema, specs, rng, attrs) -> arrays, for ops whose inputs need a domain
    # (indices in range, positive values); None entries stay None.
    make_inputs: Callable[..., list] | None = None

    # ---- checks and inference ----
    def bind_attrs(self, attrs: dict) -> dict:
        unknown = set(attrs) - set(self.attrs)
        if unknown:
            allowed = ", ".join(self.attrs) or "none"
            raise AttrError(f"{self.name}: unknown attribute(s) {', '.join(sorted(unknown))}; "
                            f"allowed: {allowed}")
        return {k: attrs.get(k, a.default) for k, a in self.attrs.items()}

    def allowed_dtypes(self, input_name: str) -> tuple[str, ...]:
        var = self.type_of.get(input_name, "T")
        return self.constraints.get(var, self.dtypes if var == "T" else ())

    def check(self, specs: Sequence[ArgSpec | None], attrs: dict | None = None) -> dict:
        """Raise a clear error for a call the op does not accept; return the bound attributes."""
        required = len(self.inputs) - self.optional
        if not required <= len(specs) <= len(self.inputs):
            count = (f"{len(self.inputs)}" if not self.optional
                     else f"{required} to {len(self.inputs)}")
            raise ShapeMismatch(f"{self.name} takes {count} input(s) "
                                f"({', '.join(self.inputs)}), got {len(specs)}")
        seen: dict[str, tuple[str, str]] = {}
        for i, (spec, name) in enumerate(zip(specs, self.inputs)):
            if spec is None:
                if i < required:
                    raise ShapeMismatch(f"{self.name}: input {name} is required")
                continue
            allowed = self.allowed_dtypes(name)
            if spec.dtype not in allowed:
                raise DtypeError(f"{self.name} does not support {spec.dtype} for {name} "
                                 f"(supported: {', '.join(allowed)})")
            if any(d < 0 for d in spec.shape):
                raise ShapeMismatch(f"{self.name}: negative dim in shape {spec.shape}")
            var = self.type_of.get(name, "T")
            if var in seen and seen[var][1] != spec.dtype:
                other, other_dtype = seen[var]
                raise DtypeError(f"{self.name}: {other} is {other_dtype} but {name} is "
                                 f"{spec.dtype}; they take one dtype (cast first)")
            seen.setdefault(var, (name, spec.dtype))
        return self.bind_attrs(attrs or {})

    def infer(self, specs: Sequence[ArgSpec], attrs: dict | None = None) -> list[ArgSpec]:
        bound = self.check(specs, attrs)
        return self.infer_fn(self, list(specs), bound)

    # ---- the golden ----
    def reference(self, *arrays: np.ndarray | None, **attrs) -> list[np.ndarray]:
        """The golden: half inputs computed in float32, float32 in float64, each output rounded
        once to the dtype `infer` gives it."""
        bound = self.bind_attrs(attrs)
        specs = [None if a is None else ArgSpec(tuple(a.shape), dt.name_of(a.dtype))
                 for a in arrays]
        out_specs = self.infer_fn(self, specs, bound)
        wide = [None if a is None else a.astype(_golden_dtype(a.dtype)) for a in arrays]
        with np.errstate(all="ignore"):
            result = self.reference_fn(*wide, **bound)
        results = result if isinstance(result, tuple) else (result,)
        return [np.asarray(r).astype(dt.to_numpy(o.dtype)).reshape(o.shape)
                for r, o in zip(results, out_specs)]

    def tolerance(self, dtype: str) -> Tolerance:
        return self.tolerances.get(dtype) or DEFAULT_TOLERANCE.get(dtype, EXACT)

    def random_inputs(self, specs: Sequence[ArgSpec | None], rng: np.random.Generator,
                      attrs: dict | None = None) -> list[np.ndarray | None]:
        """Inputs for a test: the op's own generator, else uniform in `input_range` (drawn in
        float32, enough for every float dtype), integers in the same range, random booleans."""
        if self.make_inputs is not None:
            return self.make_inputs(self, list(specs), rng, self.bind_attrs(attrs or {}))
        return [None if s is None else uniform(s, rng, self.input_range) for s in specs]


def uniform(spec: ArgSpec, rng: np.random.Generator, bounds: tuple[float, float]) -> np.ndarray:
    lo, hi = bounds
    dtype = dt.to_numpy(spec.dtype)
    if dtype.kind == "b":
        return rng.random(spec.shape) < 0.5
    if dtype.kind in "iu":
        return rng.integers(int(lo), int(hi) + 1, spec.shape).astype(dtype)
    x = rng.random(spec.shape, dtype=np.float32)
    x *= np.float32(hi - lo)
    x += np.float32(lo)
    return x.astype(dtype)
