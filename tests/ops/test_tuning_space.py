"""Every native kernel at every point of its declared tuning space (R10, R11): on a small and a
large case it either runs (the small one matching its golden in debug mode) or declines cleanly
with ConfigDoesNotFit; nothing else, and the tuner hides nothing else. On the large case every
combination of the fields that decide whether a tile fits (buffers, tile, L0 slots, base
blocks) runs at the full core count, and each of their values once at every smaller count
(`large_case_points`): the same coverage of each field, at two thirds of the simulation."""

import dataclasses

import numpy as np
import pytest

import ixl
from ixl.ascend import get_chip
from ixl.hixl import ArgSpec, all_ops, get_op
from ixl.hixl.errors import ShapeMismatch
from ixl.nixl import REGISTRY, TensorDesc
from ixl.nixl.tuning import ConfigDoesNotFit, TuningConfig, TuningSpace
from ixl.profile.tune import NotTunable, Tuner
from ixl.verify.cases import sample_specs
from ixl.verify.compare import compare
from tests.helpers import run_specs

NATIVE = sorted(op for op in all_ops() if REGISTRY.native(op) is not None)


def _dtype(op: str) -> str:
    """float16, or the op's own first dtype (bool for the logical ops)."""
    dtypes = get_op(op).dtypes
    return "float16" if "float16" in dtypes else dtypes[0]


def _native_cases(op: str, dtype: str) -> list:
    """(case, specs) of the op's sample cases its kernel takes at the default configuration,
    smallest output first."""
    dev = ixl.device("910B1", timing_only=True)
    schema, entry = get_op(op), REGISTRY.native(op)
    cases = []
    for case in schema.samples:
        if dtype not in (case.dtypes or schema.dtypes):
            continue
        specs = sample_specs(dev, schema, case, dtype)
        descs = [None if s is None else
                 dataclasses.replace(TensorDesc.nd(s.shape, s.dtype), value=s.value)
                 for s in specs]
        bound = schema.check(specs, case.attrs)
        size = sum(int(np.prod(s.shape)) for s in schema.infer_fn(schema, specs, bound))
        if size > 1 and entry.why_not(descs, bound) is None:
            cases.append((size, case, specs))
    dev.close()
    return [(case, specs) for _, case, specs in sorted(cases, key=lambda c: c[0])]


def large_case_points(points: list[TuningConfig]) -> list[TuningConfig]:
    """Every point at the largest block_dim; at each smaller one, the k-th point takes the
    k-th value of every other field (cycling), until each value of each field has run."""
    full = max((p.block_dim or 0) for p in points)
    chosen = [p for p in points if (p.block_dim or 0) == full]
    fields = [f.name for f in dataclasses.fields(TuningConfig) if f.name != "block_dim"]
    values = {f: sorted({getattr(p, f) for p in chosen}, key=repr) for f in fields}
    rounds = max(len(v) for v in values.values())
    for dim in sorted({p.block_dim for p in points if (p.block_dim or 0) != full}):
        for k in range(rounds):
            want = {f: v[k % len(v)] for f, v in values.items()}
            chosen += [p for p in points if p.block_dim == dim
                       and all(getattr(p, f) == want[f] for f in fields)]
    return chosen


def test_the_large_case_points_cover_every_value_at_every_core_count():
    points = TuningSpace(buffer_num=(1, 2, 4, 8), tile_div=(1, 2, 4), core_div=(1, 2)) \
        .points(get_chip("910B1"))
    chosen = large_case_points(points)
    assert len(points) == 24 and len(chosen) == 16 and len(set(chosen)) == 16
    for dim in (48, 24):
        at = [p for p in chosen if p.block_dim == dim]
        assert {p.buffer_num for p in at} == {1, 2, 4, 8} and {p.tile_div for p in at} == {1, 2, 4}


@pytest.mark.parametrize("op", NATIVE)
def test_every_point_of_the_tuning_space_runs_or_declines_on_a_small_case(op):
    dtype = _dtype(op)
    case, specs = _native_cases(op, dtype)[0]
    schema = get_op(op)
    arrays = schema.random_inputs(specs, np.random.default_rng(0), case.attrs)
    want = schema.reference(*arrays, **case.attrs)
    dev = ixl.device("910B1", debug=True)
    ran = 0
    for point in REGISTRY.native(op).tuning_space.points(dev.chip):
        try:
            outs = run_specs(dev, op, specs, case.attrs, point.to_dict(), arrays)
        except ConfigDoesNotFit:
            continue
        assert dev.last_profile.path == "native", (point, dev.last_profile.reason)
        assert dev.last_profile.tiling.buffer_num == point.buffers      # the tiling carries it
        for got, ref in zip(outs, want):
            c = compare(got.numpy().reshape(got.shape), ref, schema.tolerance(dtype))
            assert c.ok, (point, c.summary())
            got.free()
        ran += 1
    assert ran and dev.close() == []


@pytest.mark.slow
@pytest.mark.parametrize("op", NATIVE)
def test_every_point_of_the_tuning_space_runs_or_declines_on_a_large_case(op):
    dtype = _dtype(op)
    case, specs = _native_cases(op, dtype)[-1]
    dev = ixl.device("910B1", timing_only=True)
    ran = 0
    for point in large_case_points(REGISTRY.native(op).tuning_space.points(dev.chip)):
        try:
            outs = run_specs(dev, op, specs, case.attrs, point.to_dict())
        except ConfigDoesNotFit:
            continue
        assert dev.last_profile.path == "native", (point, dev.last_profile.reason)
        for o in outs:
            o.free()
        ran += 1
    assert ran and dev.close() == []


def test_a_whole_tensor_sum_runs_single_buffered():
    """The split reduction's queue takes the config's buffer count (it held 2 slots whatever
    the tile was sized for, so buffer_num 1 overflowed UB)."""
    dev = ixl.device("910B1", timing_only=True)
    x = dev.empty((4096, 4096), "float16")
    times = {}
    for n in (1, 2):
        dev.run("ReduceSum", x, keepdims=0, config={"buffer_num": n}).free()
        assert dev.last_profile.tiling.config.buffers == n
        times[n] = dev.last_profile.time_us
    x.free()
    assert dev.close() == [] and times[2] < times[1]


def test_a_config_that_does_not_fit_is_refused_by_name():
    dev = ixl.device("910B1", timing_only=True)
    a = dev.empty((64, 64), "float16")
    with pytest.raises(ConfigDoesNotFit, match="buffer_num.*8.*16 MTE2 -> V event ids"):
        dev.run("Add", a, a, config={"buffer_num": 8})
    with pytest.raises(ConfigDoesNotFit, match="tile 100 must be a positive multiple of 128"):
        dev.run("Add", a, a, config={"tile": 100})
    a.free()
    assert dev.close() == []


def test_the_tuner_reports_what_it_does_not_skip():
    with pytest.raises(ShapeMismatch):        # was "min() arg is an empty sequence"
        Tuner("910B1", "Add", [ArgSpec((4, 5), "float16"), ArgSpec((3,), "float16")]).ladder()
    tuner = Tuner("910B1", "ReduceSum", [ArgSpec((1024, 1024), "float16")], {"keepdims": 0})
    try:
        rows, chosen = tuner.ladder()
    finally:
        tuner.close()
    assert [r.variant for r in rows][:3] == ["single buffer", "double buffer", "4-slot pipeline"]
    tuner = Tuner("910B1", "Add", [ArgSpec((4, 5), "float16"), ArgSpec((4, 5), "float16")])
    tuner.unfused("double buffer", TuningConfig().to_dict())   # runs natively: no error
    tuner.close()
    tuner = Tuner("910B1", "Pow", [ArgSpec((4, 5), "float16")] * 2)
    try:
        with pytest.raises(NotTunable, match="runs on the shim"):
            tuner.ladder()            # a non-scalar exponent is the shim's
    finally:
        tuner.close()
