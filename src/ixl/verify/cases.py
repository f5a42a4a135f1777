"""Run an op on a device against its golden: one case, or every sample case of the database."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from ..hixl import ArgSpec, OpSchema, SampleCase, TileMultiple, all_ops, get_op, to_numpy
from ..hixl.schema import contents
from .compare import Comparison, compare

if TYPE_CHECKING:
    from ..nixl.device import Device
    from ..nixl.record import RunRecord

# Size unit for TileMultiple cases of ops that run on the shim (no kernel tile to follow).
SHIM_TILE_UNIT = 4096


@dataclass
class CaseResult:
    op: str
    note: str
    shapes: list[tuple[int, ...] | None]
    dtype: str
    chip: str
    path: str
    comparisons: list[Comparison]
    attrs: dict = field(default_factory=dict)
    reason: str | None = None
    kernel: str | None = None
    block_dim: int = 0
    modeled_us: float = 0.0
    record: RunRecord | None = None

    @property
    def ok(self) -> bool:
        return all(c.ok for c in self.comparisons)

    @property
    def status(self) -> str:
        return "pass" if self.ok else "fail"

    def worst(self, attr: str) -> float:
        return max((getattr(c, attr) for c in self.comparisons), default=0.0)

    def to_json(self) -> dict:
        first = next((c for c in self.comparisons if not c.ok), None)
        return {
            "op": self.op, "case": self.note,
            "shapes": [None if s is None else list(s) for s in self.shapes],
            "dtype": self.dtype, "chip": self.chip, "status": self.status, "path": self.path,
            "reason": self.reason, "kernel": self.kernel, "block_dim": self.block_dim,
            "attrs": self.attrs,
            "max_abs_err": self.worst("max_abs_err"), "max_rel_err": self.worst("max_rel_err"),
            "mismatches": sum(c.mismatches for c in self.comparisons),
            "first_mismatch": list(first.first_mismatch) if first and first.first_mismatch
            is not None else None,
            "modeled_us": round(self.modeled_us, 3),
        }


def run_case(dev: Device, schema: OpSchema, specs: list[ArgSpec | None],
             attrs: dict | None = None, *, seed: int = 0, note: str = "") -> CaseResult:
    """Random inputs, run on `dev`, compare every output with the golden."""
    attrs = attrs or {}
    arrays = schema.random_inputs(specs, np.random.default_rng(seed), attrs)
    names = schema.input_names(len(arrays))
    inputs = [None if a is None else dev.tensor(a, name=n) for a, n in zip(arrays, names)]
    try:
        outs = dev.run(schema.name, *inputs, **attrs)
    finally:
        for t in inputs:
            if t is not None:
                t.free()
    outs = outs if isinstance(outs, tuple) else (outs,)
    try:
        got = [o.numpy().reshape(o.shape) for o in outs]
    finally:
        for o in outs:
            o.free()
    refs = schema.reference(*arrays, **attrs)
    dtype = schema.main_dtype(specs)
    comps = [compare(g, r, schema.tolerance(dtype)) for g, r in zip(got, refs)]
    rec = dev.last_profile
    assert rec is not None                          # the run just made it
    shapes = [s.shape if s else None for s in specs]
    return CaseResult(schema.name, note, shapes, dtype, dev.chip.name,
                      rec.path, comps, attrs, rec.reason, rec.kernel, rec.block_dim,
                      rec.time_us, rec)


def host_bytes(specs: list[ArgSpec], out_specs: list[ArgSpec]) -> int:
    """About how much host memory `run_case` needs besides the device's own: each input and
    its widened copy for the golden, each output read back, the golden's output (wide and
    rounded) and the comparison's float64 work arrays."""
    def size(s, per_elem):
        return s.size * per_elem(to_numpy(s.dtype).itemsize)
    return (sum(size(s, lambda n: n + 8) for s in specs if s is not None)
            + sum(size(s, lambda n: 2 * n + 40) for s in out_specs))


def resolve_shape(shape: tuple[int, ...] | TileMultiple, unit: int) -> tuple[int, ...]:
    if isinstance(shape, TileMultiple):
        return (shape.tiles * unit + shape.plus,)
    return tuple(shape)


def tile_unit(dev: Device, schema: OpSchema, dtype: str) -> int:
    """Elements that give every core one whole tile, for the kernel that will run."""
    entry = dev.registry.native(schema.name)
    if entry is None or entry.tile_unit is None:
        return SHIM_TILE_UNIT
    return entry.tile_unit(ArgSpec((1,), dtype), dev.chip)


def sample_specs(dev: Device, schema: OpSchema, case: SampleCase, dtype: str
                 ) -> list[ArgSpec | None]:
    unit = tile_unit(dev, schema, dtype)
    names = schema.input_names(len(case.shapes))
    dtypes = schema.input_dtypes(dtype, len(case.shapes))
    return [None if s is None else ArgSpec(resolve_shape(s, unit), d, None if n not in case.values
                                           else contents(case.values[n]))
            for s, n, d in zip(case.shapes, names, dtypes)]


def numbered_samples(ops: list[str] | None = None
                     ) -> Iterator[tuple[OpSchema, int, SampleCase, str]]:
    """Every sample case of `ops` (all by default) in each of its dtypes, with the case's
    index in its op's samples."""
    for name in ops or list(all_ops()):
        schema = get_op(name)
        for index, case in enumerate(schema.samples):
            for dtype in case.dtypes or schema.dtypes:
                yield schema, index, case, dtype


def iter_samples(ops: list[str] | None = None) -> Iterator[tuple[OpSchema, SampleCase, str]]:
    for schema, _, case, dtype in numbered_samples(ops):
        yield schema, case, dtype


def verify_op_cases(dev: Device, ops: list[str] | None = None, seed: int = 0,
                    progress: Callable[[int, int, CaseResult], None] | None = None
                    ) -> list[CaseResult]:
    todo = list(iter_samples(ops))
    results = []
    for i, (schema, case, dtype) in enumerate(todo):
        specs = sample_specs(dev, schema, case, dtype)
        results.append(run_case(dev, schema, specs, case.attrs, seed=seed, note=case.note))
        if progress:
            progress(i + 1, len(todo), results[-1])
    return results
