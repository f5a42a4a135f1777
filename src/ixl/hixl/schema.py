"""The op schema: what an op means, written once, runnable at once.

An OpSchema names the op's inputs, attributes and dtypes; checks a call (shapes, dtypes,
attributes) with errors that say what was wrong and what is allowed; infers output specs; holds
the numpy reference that every backend is compared against; and lists sample cases, boundary
shapes included, with a tolerance per dtype.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from . import dtypes as dt
from .errors import AttrError, DtypeError, ShapeMismatch

Shape = tuple[int, ...]


@dataclass(frozen=True)
class ArgSpec:
    """Shape and dtype name of one tensor argument (all that semantics need), plus, for a host
    input (a shape, axes or k that decides the output shape), its flattened contents."""

    shape: Shape
    dtype: str
    value: tuple | None = None

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
    # input name -> fixed contents (host inputs need them)
    values: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Attr:
    kind: type                      # int, float, str, list (of `item`) or np.ndarray
    default: Any = None
    doc: str = ""
    required: bool = False
    item: type = int                # the element kind of a list attribute

    def check(self, op: str, name: str, value: Any) -> Any:
        """`value` if it is of this attribute's kind, else an error naming the attribute, the
        kind it takes and what it got (a string '1' for an int is refused, not converted)."""
        if _is_kind(value, self.kind) and (self.kind is not list
                                           or all(_is_kind(v, self.item) for v in value)):
            return value
        want = _KIND_NAMES.get(self.kind, self.kind.__name__)
        if self.kind is list:
            want += f" of {_ITEM_NAMES.get(self.item, self.item.__name__)}"
        raise AttrError(f"{op}: attribute {name} must be {want}, got "
                        f"{type(value).__name__} {value!r}")


_KIND_NAMES = {int: "an integer", float: "a number", str: "a string", list: "a list",
               np.ndarray: "an array (or a number or list)"}
_ITEM_NAMES = {int: "integers", float: "numbers", str: "strings"}


def _is_kind(value, kind: type) -> bool:
    if kind is int:
        return isinstance(value, (int, np.integer))        # bool too: keepdims=True is 1
    if kind is float:
        return isinstance(value, (int, float, np.integer, np.floating))
    if kind is list:
        return isinstance(value, (list, tuple)) or (isinstance(value, np.ndarray)
                                                    and value.ndim == 1)
    if kind is np.ndarray:
        if not isinstance(value, (np.ndarray, np.generic, int, float, list, tuple)):
            return False
        try:
            return np.asarray(value).dtype.kind in "biuf"
        except ValueError:          # a ragged list
            return False
    return isinstance(value, kind)


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


def broadcasts_to(shape: Shape, target: Shape) -> bool:
    """Whether `shape` broadcasts to `target` one way (as a bias to an output)."""
    return len(shape) <= len(target) and all(
        s in (1, t) for s, t in zip(reversed(shape), reversed(target)))


def normalize_axis(op: str, axis: int, rank: int, what: str = "axis") -> int:
    """An ONNX axis in [-rank, rank - 1] as an index in [0, rank), or a clear error."""
    if not -rank <= int(axis) < rank:
        raise AttrError(f"{op}: {what} {axis} is out of range for a rank-{rank} input "
                        f"(allowed: {-rank}..{rank - 1})")
    return int(axis) % rank


def normalize_axes(op: str, axes: Sequence[int], rank: int, what: str = "axes") -> tuple[int, ...]:
    """Several axes, each in range, none repeated (ONNX forbids duplicates), in given order."""
    out = tuple(normalize_axis(op, a, rank, what) for a in axes)
    if len(set(out)) != len(out):
        raise AttrError(f"{op}: {what} {list(axes)} name an axis twice")
    return out


def contents(value: ArrayLike) -> tuple:
    """A host input's contents as ArgSpec.value holds them: flat, Python numbers."""
    return tuple(np.asarray(value).reshape(-1).tolist())


def host_value(op: str, spec: ArgSpec, name: str) -> tuple:
    """The contents of a host input, which the output shape depends on."""
    if spec.value is None:
        raise ShapeMismatch(f"{op}: the output shape depends on the contents of {name}, which "
                            f"the host must know (give it as a device tensor, not only a spec)")
    return spec.value


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
    constraints: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    optional: int = 0               # how many trailing inputs may be omitted (or None)
    # make_inputs(schema, specs, rng, attrs) -> arrays, for ops whose inputs need a domain
    # (indices in range, positive values); None entries stay None.
    make_inputs: Callable[..., list] | None = None
    # Inputs whose contents the host reads to infer output shapes (tier C: shapes known only at
    # run time): their specs carry `value`.
    host_inputs: tuple[str, ...] = ()
    variadic: bool = False          # the last input repeats (one or more), as Concat's
    variadic_outputs: bool = False  # the output repeats (one or more), as Split's
    heterogeneous: bool = False     # the variadic inputs may differ in dtype (an If's values)

    # ---- checks and inference ----
    def bind_attrs(self, attrs: dict) -> dict:
        """Every attribute: the given value, checked against its kind, or its default (an
        explicit None is the default too)."""
        unknown = set(attrs) - set(self.attrs)
        if unknown:
            allowed = ", ".join(self.attrs) or "none"
            raise AttrError(f"{self.name}: unknown attribute(s) {', '.join(sorted(unknown))}; "
                            f"allowed: {allowed}")
        return {k: a.default if attrs.get(k) is None else a.check(self.name, k, attrs[k])
                for k, a in self.attrs.items()}

    def allowed_dtypes(self, input_name: str) -> tuple[str, ...]:
        var = self.type_of.get(input_name, "T")
        return self.constraints.get(var, self.dtypes if var == "T" else ())

    def check_count(self, count: int) -> None:
        """Refuse a call with too few or too many inputs (an extra one is never ignored: it
        would take an output's place)."""
        required = len(self.inputs) - self.optional
        most = None if self.variadic else len(self.inputs)
        if required <= count and (most is None or count <= most):
            return
        if self.variadic:
            takes = f"{required} or more inputs"
        elif self.optional:
            takes = f"{required} to {len(self.inputs)} inputs"
        else:
            takes = f"{len(self.inputs)} input{'s' if len(self.inputs) != 1 else ''}"
        raise ShapeMismatch(f"{self.name} takes {takes} ({', '.join(self.inputs)}), got {count}")

    def input_names(self, count: int) -> list[str]:
        """Names of `count` inputs: a variadic last input is numbered (inputs0, inputs1, ...).
        More inputs than the op takes is an error."""
        if count > len(self.inputs) and not self.variadic:
            self.check_count(count)
        if not self.variadic:
            return list(self.inputs[:count])
        fixed = list(self.inputs[:-1])
        return fixed + [f"{self.inputs[-1]}{i}" for i in range(count - len(fixed))]

    def output_names(self, count: int) -> list[str]:
        """Names of `count` outputs: a variadic output is numbered (outputs0, outputs1, ...)."""
        if not self.variadic_outputs:
            return list(self.outputs[:count])
        return [f"{self.outputs[-1]}{i}" for i in range(count)]

    def input_dtypes(self, dtype: str, count: int | None = None) -> list[str]:
        """The dtype of each input when the op runs on `dtype`: inputs of type variable T take
        it; another type variable takes it where allowed, else its first dtype (int64 indices)."""
        out = []
        for name in self.input_names(len(self.inputs) if count is None else count):
            declared = self.declared(name)
            allowed = self.allowed_dtypes(declared)
            keep = self.type_of.get(declared, "T") == "T" or dtype in allowed
            out.append(dtype if keep else allowed[0])
        return out

    def main_dtype(self, specs: Sequence[ArgSpec | None]) -> str:
        """The dtype a call is named and judged by: that of its first input of type T."""
        names = self.input_names(len(specs))
        return next((s.dtype for s, n in zip(specs, names) if s is not None
                     and self.type_of.get(self.declared(n), "T") == "T"),
                    next((s.dtype for s in specs if s is not None), "float32"))

    def declared(self, name: str) -> str:
        """The declared input a (possibly numbered variadic) input name belongs to."""
        return name if name in self.inputs else self.inputs[-1]

    def spec_of(self, name: str, array: np.ndarray) -> ArgSpec:
        """The spec of an input array; a host input carries its contents."""
        value = contents(array) if self.declared(name) in self.host_inputs else None
        return ArgSpec(tuple(array.shape), dt.name_of(array.dtype), value)

    def check(self, specs: Sequence[ArgSpec | None], attrs: dict | None = None) -> dict:
        """Raise a clear error for a call the op does not accept; return the bound attributes."""
        self.check_count(len(specs))
        required = len(self.inputs) - self.optional
        seen: dict[str, tuple[str, str]] = {}
        for i, (spec, name) in enumerate(zip(specs, self.input_names(len(specs)))):
            if spec is None:
                if i < required:
                    raise ShapeMismatch(f"{self.name}: input {name} is required")
                continue
            allowed = self.allowed_dtypes(self.declared(name))
            if spec.dtype not in allowed:
                raise DtypeError(f"{self.name} does not support {spec.dtype} for {name} "
                                 f"(supported: {', '.join(allowed)})")
            if any(d < 0 for d in spec.shape):
                raise ShapeMismatch(f"{self.name}: negative dim in shape {spec.shape}")
            var = self.type_of.get(self.declared(name), "T")
            if self.heterogeneous and self.variadic and self.declared(name) == self.inputs[-1]:
                continue
            if var in seen and seen[var][1] != spec.dtype:
                other, other_dtype = seen[var]
                raise DtypeError(f"{self.name}: {other} is {other_dtype} but {name} is "
                                 f"{spec.dtype}; they take one dtype (cast first)")
            seen.setdefault(var, (name, spec.dtype))
        bound = self.bind_attrs(attrs or {})
        missing = [k for k, a in self.attrs.items() if a.required and bound[k] is None]
        if missing:
            raise AttrError(f"{self.name}: attribute {', '.join(missing)} is required")
        return bound

    def infer(self, specs: Sequence[ArgSpec | None], attrs: dict | None = None) -> list[ArgSpec]:
        bound = self.check(specs, attrs)
        return self.infer_fn(self, list(specs), bound)

    # ---- the golden ----
    def reference(self, *arrays: np.ndarray | None, **attrs: Any) -> list[np.ndarray]:
        """The golden: half inputs computed in float32, float32 in float64, each output rounded
        once to the dtype `infer` gives it."""
        bound = self.bind_attrs(attrs)
        specs = [None if a is None else self.spec_of(n, a)
                 for a, n in zip(arrays, self.input_names(len(arrays)))]
        out_specs = self.infer_fn(self, specs, bound)
        wide = [None if a is None else a.astype(_golden_dtype(a.dtype)) for a in arrays]
        with np.errstate(all="ignore"):     # overflow to inf and NaN are results too
            result = self.reference_fn(*wide, **bound)
            results = result if isinstance(result, tuple) else (result,)
            return [np.asarray(r).astype(dt.to_numpy(o.dtype)).reshape(o.shape)
                    for r, o in zip(results, out_specs)]

    def tolerance(self, dtype: str) -> Tolerance:
        return self.tolerances.get(dtype) or DEFAULT_TOLERANCE.get(dtype, EXACT)

    def random_inputs(self, specs: Sequence[ArgSpec | None], rng: np.random.Generator,
                      attrs: dict | None = None) -> list[np.ndarray | None]:
        """Inputs for a test: the op's own generator, else uniform in `input_range` (drawn in
        float32, enough for every float dtype), integers in the same range, random booleans;
        a spec that carries a value (a host input) gives exactly that value."""
        if self.make_inputs is not None:
            arrays = self.make_inputs(self, list(specs), rng, self.bind_attrs(attrs or {}))
        else:
            arrays = [None if s is None else uniform(s, rng, self.input_range) for s in specs]
        return [a if s is None or s.value is None
                else np.array(s.value, dt.to_numpy(s.dtype)).reshape(s.shape)
                for s, a in zip(specs, arrays)]


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
