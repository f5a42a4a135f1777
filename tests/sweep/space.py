"""The shape sweep's ground, shared by its one module per op family.

- Boundaries come from the kernels themselves: block and repeat lanes of the dtype, the tile a
  host tiling chooses, and the sizes where a tiling changes strategy, found by bisecting the
  tiling's own `describe()` over one dim (`change_point`).
- `check` runs one drawn case in debug mode (every chip rule and sanitizer observer) against
  its golden, on the path the registry promises (native unless the kernel declines the case),
  and says which path the host tiling chose when it fails.
- How many examples: `DEFAULT_EXAMPLES` per family test in the default suite; `pytest --long`
  makes it `WIDE_EXAMPLES`, and IXL_SWEEP_EXAMPLES=N sets it outright. The seed is fixed
  (derandomized), so a run is repeatable and a failure shrinks to its smallest shape.
- IXL_SWEEP_REPORT=FILE appends one JSON line per case tried (op, dtype, shapes, path, status),
  the count of shapes a wide sweep tried per op.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
from collections.abc import Callable, Sequence

from hypothesis import HealthCheck, event, note, reject, settings
from hypothesis import strategies as st

from ixl.ascend import get_chip
from ixl.hixl import ArgSpec, HixlError, SampleCase, get_op, to_numpy
from ixl.nixl import REGISTRY, KernelDeclined, TensorDesc
from ixl.verify.cases import run_case, sample_specs

DEFAULT_EXAMPLES = 20
WIDE_EXAMPLES = 500
CHIP = get_chip("910B1")
MAX_ELEMENTS = 1 << 19          # per tensor: debug runs stay well under a second


def examples() -> int:
    return int(os.environ.get("IXL_SWEEP_EXAMPLES") or DEFAULT_EXAMPLES)


def sweep_settings() -> settings:
    return settings(max_examples=examples(), deadline=None, derandomize=True, database=None,
                    print_blob=False,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much,
                                           HealthCheck.data_too_large])


# ---------------------------------------------------------------- boundaries

def near(*points: int, lo: int = 1) -> list[int]:
    """Each point and its neighbours (a tail of one, a tile exactly, one over), sorted."""
    return sorted({q for p in points for q in (p - 1, p, p + 1) if q >= lo})


def lanes(dtype: str) -> tuple[int, int]:
    """(elements of a 32-byte block, of a 256-byte repeat) of `dtype`."""
    isz = to_numpy(dtype).itemsize
    return CHIP.block_elems(isz), CHIP.lanes(isz)


def small_edges(dtype: str) -> list[int]:
    """1, 15/16/17, 31/32/33 ... the block and repeat lanes and their doubles."""
    block, repeat = lanes(dtype)
    return near(1, 16, 32, block, 2 * block, repeat, 2 * repeat)


def dim(edges: Sequence[int], hi: int) -> st.SearchStrategy[int]:
    """A dim: a boundary most of the time (shrinking to the smallest), else any size up to
    `hi`."""
    edges = sorted({e for e in edges if 0 <= e <= hi})
    return st.one_of(st.sampled_from(edges), st.integers(1, hi)) if edges \
        else st.integers(1, hi)


def fits(*shapes: Sequence[int] | None, limit: int = MAX_ELEMENTS) -> bool:
    return all(s is None or math.prod(s) <= limit for s in shapes)


# ---------------------------------------------------------------- the host tiling's view

def _bind(op: str, specs: list[ArgSpec | None], attrs: dict):
    schema = get_op(op)
    bound = schema.check(specs, attrs)
    outs = schema.infer_fn(schema, specs, bound)
    descs = [None if s is None else dataclasses.replace(TensorDesc.nd(s.shape, s.dtype),
                                                        value=s.value) for s in specs]
    return bound, descs, [TensorDesc.nd(o.shape, o.dtype) for o in outs]


def specs_of(op: str, case: SampleCase, dtype: str) -> list[ArgSpec | None]:
    schema = get_op(op)
    names = schema.input_names(len(case.shapes))
    dtypes = schema.input_dtypes(dtype, len(case.shapes))
    return [None if s is None else ArgSpec(tuple(s), d, case.values.get(n))
            for s, n, d in zip(case.shapes, names, dtypes)]


def _planned(op: str, specs: list[ArgSpec | None], attrs: dict) -> str | None:
    """The host tiling's describe() for the inputs, None when the kernel declines them."""
    entry = REGISTRY.native(op)
    bound, descs, outs = _bind(op, specs, attrs)
    if entry is None or entry.why_not(descs, bound) is not None:
        return None
    try:
        return entry.tiling(descs, outs, bound, CHIP, None).tiling.describe()
    except KernelDeclined:
        return None


def path_of(op: str, case: SampleCase, dtype: str) -> str | None:
    """What the host tiling chooses for the case (its describe()), None when the kernel
    declines it or the case is not valid."""
    try:
        return _planned(op, specs_of(op, case, dtype), case.attrs)
    except HixlError:
        return None


def change_point(path: Callable[[int], str | None], lo: int, hi: int) -> int | None:
    """The smallest n in (lo, hi] whose path differs from lo's, by bisection (for a size where
    a tiling switches strategy once: resident to streamed, one tile to several)."""
    first = path(lo)
    if path(hi) == first:
        return None
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if path(mid) == first:
            lo = mid
        else:
            hi = mid
    return hi


# ---------------------------------------------------------------- the check

def check(dev, op: str, case: SampleCase, dtype: str) -> None:
    """Run the case in debug mode against its golden: outputs within tolerance, on the native
    path unless the kernel declines the case (counted as an event); a failure names the path
    the host tiling chose."""
    schema = get_op(op)
    try:
        specs = sample_specs(dev, schema, case, dtype)
        planned = _planned(op, specs, case.attrs)
    except HixlError:
        reject()            # not a valid case of the op: draw another
    shapes = [None if s is None else s.shape for s in specs]
    where = f"{op} {dtype} shapes {shapes} attrs {case.attrs} values {case.values} " \
            f"[path: {planned or 'declined'}]"
    note(where)
    try:
        res = run_case(dev, schema, specs, case.attrs, note=case.note)
    except Exception as e:
        _report(op, dtype, shapes, case, planned, "error")
        raise AssertionError(f"{where}: {type(e).__name__}: {e}") from e
    _report(op, dtype, shapes, case, planned, res.status)
    assert res.ok, f"{where}: " + "; ".join(c.summary() for c in res.comparisons if not c.ok)
    if planned is None:
        event(f"{op}: {res.path} ({res.reason})")
    else:
        assert res.path == "native", f"{where}: ran on {res.path}: {res.reason}"
        event(f"{op}: native")


def _report(op, dtype, shapes, case, path, status) -> None:
    target = os.environ.get("IXL_SWEEP_REPORT")
    if not target:
        return
    row = {"op": op, "dtype": dtype, "shapes": shapes, "attrs": case.attrs,
           "values": case.values, "path": path, "status": status}
    with open(target, "a", encoding="utf-8") as f:
        f.write(json.dumps(row, default=str) + "\n")


def template(data, op: str) -> SampleCase:
    """One of the op's own sample cases (its attrs, fixed values and dtypes) to vary."""
    cases = [c for c in get_op(op).samples if not c.note.startswith("large")]
    return data.draw(st.sampled_from(cases), label="template")


def dtype_of(data, op: str, case: SampleCase | None = None) -> str:
    dtypes = (case.dtypes if case is not None and case.dtypes else None) or get_op(op).dtypes
    return data.draw(st.sampled_from(list(dtypes)), label="dtype")
