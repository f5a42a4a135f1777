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

    # ---- checks and inference ----
    def bind_attrs(self, attrs: dict) -> dict:
        unknown = set(attrs) - set(self.attrs)
        if unknown:
            allowed = ", ".join(self.attrs) or "none"
            raise AttrError(f"{self.name}: unknown attribute(s) {', '.join(sorted(unknown))}; "
                            f"allowed: {allowed}")
        return {k: attrs.get(k, a.default) for k, a in self.attrs.items()}

    def check(self, specs: Sequence[ArgSpec], attrs: dict | None = None) -> dict:
        """Raise a clear error for a call the op does not accept; return the bound attributes."""
        if len(specs) != len(self.inputs):
            raise ShapeMismatch(f"{self.name} takes {len(self.inputs)} input(s) "
                                f"({', '.join(self.inputs)}), got {len(specs)}")
        for spec in specs:
            if spec.dtype not in self.dtypes:
                raise DtypeError(f"{self.name} does not support {spec.dtype} "
                                 f"(supported: {', '.join(self.dtypes)})")
            if any(d < 0 for d in spec.shape):
                raise ShapeMismatch(f"{self.name}: negative dim in shape {spec.shape}")
        kinds = {s.dtype for s in specs}
        if len(kinds) > 1:
            raise DtypeError(f"{self.name}: inputs have dtypes {' and '.join(sorted(kinds))}; "
                             f"all inputs take one dtype (cast first)")
        return self.bind_attrs(attrs or {})

    def infer(self, specs: Sequence[ArgSpec], attrs: dict | None = None) -> list[ArgSpec]:
        bound = self.check(specs, attrs)
        return self.infer_fn(self, list(specs), bound)

    # ---- the golden ----
    def reference(self, *arrays: np.ndarray, **attrs) -> list[np.ndarray]:
        """The golden: half inputs computed in float32, float32 in float64, rounded once."""
        bound = self.bind_attrs(attrs)
        out_dtype = arrays[0].dtype if arrays else np.dtype(np.float32)
        wide = [a.astype(_golden_dtype(a.dtype)) for a in arrays]
        with np.errstate(all="ignore"):
            result = self.reference_fn(*wide, **bound)
        results = result if isinstance(result, tuple) else (result,)
        return [np.asarray(r).astype(out_dtype) for r in results]

    def tolerance(self, dtype: str) -> Tolerance:
        return self.tolerances.get(dtype) or DEFAULT_TOLERANCE.get(dtype, EXACT)

    def random_inputs(self, specs: Sequence[ArgSpec], rng: np.random.Generator) -> list[np.ndarray]:
        """Uniform in `input_range`, drawn in float32 (enough for every supported dtype)."""
        lo, hi = self.input_range
        out = []
        for s in specs:
            x = rng.random(s.shape, dtype=np.float32)
            x *= np.float32(hi - lo)
            x += np.float32(lo)
            out.append(x.astype(dt.to_numpy(s.dtype)))
        return out
