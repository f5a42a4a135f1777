"""The host tiling functions over random shapes, dtypes and tuning configs: each either plans or
declines cleanly (KernelDeclined, ConfigDoesNotFit for a config the caller chose), and what it
plans runs on the chip without a fault. Long rows (an LLM's vocabulary) are drawn often."""

import dataclasses

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, event, given, settings
from hypothesis import strategies as st

import ixl
from ixl.ascend import get_chip
from ixl.hixl import ArgSpec, HixlError, get_op
from ixl.nixl import REGISTRY, KernelDeclined, LaunchPlan, TensorDesc
from ixl.nixl.tuning import ConfigDoesNotFit, TuningConfig
from tests.helpers import run_specs

MAX_ELEMENTS = 1 << 20
DIM = st.one_of(st.integers(0, 9), st.integers(10, 300), st.sampled_from([4096, 30522, 49152,
                                                                           70001]))


def _settings(examples: int):
    return settings(max_examples=examples, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])


@pytest.fixture(scope="module")
def dev():
    d = ixl.device("910B1", timing_only=True)
    yield d
    assert d.close() == []


def _shape(data, rank=None) -> tuple[int, ...]:
    rank = data.draw(st.integers(0, 4)) if rank is None else rank
    shape = tuple(data.draw(DIM) for _ in range(rank))
    assume(int(np.prod([max(d, 1) for d in shape])) <= MAX_ELEMENTS)   # outputs too
    return shape


def _broadcast_from(data, out: tuple[int, ...]) -> tuple[int, ...]:
    """A shape that broadcasts to `out`: leading dims dropped, some dims set to 1."""
    drop = data.draw(st.integers(0, len(out)))
    return tuple(1 if data.draw(st.booleans()) else d for d in out[drop:])


def _config(data, op: str):
    points = REGISTRY.native(op).tuning_space.points(get_chip("910B1"))
    return data.draw(st.one_of(
        st.none(), st.sampled_from(points),
        st.builds(TuningConfig, buffer_num=st.integers(1, 8), tile_div=st.integers(1, 8),
                  block_dim=st.integers(1, 60))))


def _plan_or_decline(dev, op, specs, attrs, config):
    """Plan on the host; then, when it planned, run on the timing-only device."""
    schema, entry = get_op(op), REGISTRY.native(op)
    try:
        bound = schema.check(specs, attrs)
        outs = schema.infer_fn(schema, specs, bound)
    except HixlError:
        assume(False)
    descs = [None if s is None else dataclasses.replace(TensorDesc.nd(s.shape, s.dtype),
                                                        value=s.value) for s in specs]
    if entry.why_not(descs, bound) is not None:
        event("the kernel declines the case")
        return
    try:
        plan = entry.tiling(descs, [TensorDesc.nd(s.shape, s.dtype) for s in outs], bound,
                            dev.chip, config)
    except KernelDeclined:
        plan = None
    assert plan is None or isinstance(plan, LaunchPlan)
    try:
        result = run_specs(dev, op, specs, attrs, config)
    except ConfigDoesNotFit:
        assert plan is None and config is not None
        event("the config does not fit")
        return
    for t in result:
        t.free()
    assert (dev.last_profile.path == "native") == (plan is not None), dev.last_profile.reason
    event("planned and ran" if plan is not None else "declined by the host tiling")


@_settings(150)
@given(data=st.data())
def test_elementwise_tiling_plans_or_declines(dev, data):
    op = data.draw(st.sampled_from(["Add", "Mul", "Where", "Gelu", "Pow", "Clip", "Cast"]))
    dtype = data.draw(st.sampled_from(["float16", "bfloat16", "float32"]))
    out = _shape(data)
    n = len(get_op(op).inputs)
    shapes = [out if data.draw(st.booleans()) else _broadcast_from(data, out) for _ in range(n)]
    specs = [ArgSpec(s, dtype) for s in shapes]
    attrs = {}
    if op == "Where":
        specs[0] = ArgSpec(shapes[0], "bool")
    if op in ("Pow", "Clip"):                     # scalar operands, read as values
        specs = [specs[0]] + [ArgSpec((), dtype, 1.0) for _ in specs[1:]]
    if op == "Cast":
        attrs["to"] = data.draw(st.sampled_from(["float16", "float32", "int32"]))
    _plan_or_decline(dev, op, specs, attrs, _config(data, op))


@_settings(40)
@given(data=st.data())
def test_axis_tiling_plans_or_declines(dev, data):
    op = data.draw(st.sampled_from(["Softmax", "LogSoftmax", "LayerNormalization",
                                    "RMSNormalization"]))
    dtype = data.draw(st.sampled_from(["float16", "bfloat16", "float32"]))
    shape = _shape(data, data.draw(st.integers(1, 4)))
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    specs = [ArgSpec(shape, dtype)]
    if op in ("LayerNormalization", "RMSNormalization"):
        normalized = shape[axis % len(shape):]
        params = 2 if op == "LayerNormalization" else 1
        specs += [ArgSpec(_broadcast_from(data, normalized), dtype) for _ in range(params)]
    _plan_or_decline(dev, op, specs, {"axis": axis}, _config(data, op))


@_settings(80)
@given(data=st.data())
def test_reduction_tiling_plans_or_declines(dev, data):
    op = data.draw(st.sampled_from(["ReduceSum", "ReduceMax", "ReduceMin", "ReduceMean",
                                    "ReduceProd", "ReduceL2", "ReduceLogSumExp"]))
    dtype = data.draw(st.sampled_from(["float16", "bfloat16", "float32"]))
    shape = _shape(data, data.draw(st.integers(1, 4)))
    axes = data.draw(st.lists(st.integers(0, len(shape) - 1), min_size=1, unique=True))
    specs = [ArgSpec(shape, dtype), ArgSpec((len(axes),), "int64", tuple(axes))]
    attrs = {"keepdims": data.draw(st.sampled_from([0, 1]))}
    _plan_or_decline(dev, op, specs, attrs, _config(data, op))


@_settings(40)
@given(data=st.data())
def test_cube_matmul_tiling_plans_or_declines(dev, data):
    dtype = data.draw(st.sampled_from(["float16", "bfloat16", "float32"]))
    m, k, n = (data.draw(DIM) for _ in range(3))
    assume(max(m * k, k * n, m * n) <= MAX_ELEMENTS)
    _plan_or_decline(dev, "MatMul", [ArgSpec((m, k), dtype), ArgSpec((k, n), dtype)], {},
                     _config(data, "MatMul"))


@_settings(40)
@given(data=st.data())
def test_transdata_tiling_plans_or_declines(dev, data):
    dtype = data.draw(st.sampled_from(["float16", "bfloat16", "float32", "int8", "int32"]))
    shape = _shape(data, data.draw(st.integers(2, 4)))
    fmt = data.draw(st.sampled_from(["FRACTAL_NZ", "NC1HWC0"] if len(shape) == 4
                                    else ["FRACTAL_NZ"]))
    _plan_or_decline(dev, "TransData", [ArgSpec(shape, dtype)], {"dst_format": fmt},
                     _config(data, "TransData"))


SPATIAL = st.integers(1, 40)


@_settings(40)
@given(data=st.data())
def test_pool_tiling_plans_or_declines(dev, data):
    op = data.draw(st.sampled_from(["MaxPool", "AveragePool"]))
    dtype = data.draw(st.sampled_from(["float16", "bfloat16", "float32"]))
    rank = data.draw(st.integers(1, 3))
    dims = tuple(data.draw(SPATIAL) for _ in range(rank))
    kernel = [data.draw(st.integers(1, min(5, d))) for d in dims]
    attrs = {"kernel_shape": kernel, "strides": [data.draw(st.integers(1, 3)) for _ in dims],
             "pads": [data.draw(st.integers(0, k - 1)) for k in kernel] * 2,
             "ceil_mode": data.draw(st.sampled_from([0, 1]))}
    shape = (data.draw(st.integers(0, 3)), data.draw(st.integers(1, 8))) + dims
    _plan_or_decline(dev, op, [ArgSpec(shape, dtype)], attrs, _config(data, op))


@_settings(30)
@given(data=st.data())
def test_channel_norm_tiling_plans_or_declines(dev, data):
    op = data.draw(st.sampled_from(["BatchNormalization", "InstanceNormalization",
                                    "GroupNormalization"]))
    dtype = data.draw(st.sampled_from(["float16", "bfloat16", "float32"]))
    groups = data.draw(st.integers(1, 4))
    c = groups * data.draw(st.integers(1, 6))
    shape = (data.draw(st.integers(0, 3)), c) + tuple(
        data.draw(st.sampled_from([1, 3, 7, 40, 300])) for _ in range(data.draw(st.integers(1, 2))))
    params = {"BatchNormalization": 4}.get(op, 2)
    attrs = {"num_groups": groups} if op == "GroupNormalization" else {}
    _plan_or_decline(dev, op, [ArgSpec(shape, dtype)] + [ArgSpec((c,), dtype)] * params, attrs,
                     _config(data, op))


@_settings(30)
@given(data=st.data())
def test_resize_tiling_plans_or_declines(dev, data):
    dtype = data.draw(st.sampled_from(["float16", "bfloat16", "float32"]))
    shape = (data.draw(st.integers(1, 3)), data.draw(st.integers(1, 4)),
             data.draw(st.integers(1, 30)), data.draw(st.integers(1, 300)))
    sizes = shape[:2] + (data.draw(st.integers(1, 60)), data.draw(st.integers(1, 600)))
    attrs = {"mode": data.draw(st.sampled_from(["nearest", "linear", "cubic"])),
             "coordinate_transformation_mode": data.draw(st.sampled_from(
                 ["half_pixel", "asymmetric", "align_corners", "pytorch_half_pixel"]))}
    specs = [ArgSpec(shape, dtype), None, None, ArgSpec((4,), "int64", sizes)]
    _plan_or_decline(dev, "Resize", specs, attrs, _config(data, "Resize"))


MOVE_DTYPES = ["float16", "float32", "int64", "int32", "bool"]


@_settings(50)
@given(data=st.data())
def test_movement_tiling_plans_or_declines(dev, data):
    """Tier C's row moves, tiles and sorts over random shapes (long rows included), dtypes,
    maps and configs."""
    op = data.draw(st.sampled_from(["Transpose", "Slice", "Pad", "Tile", "Expand", "Concat",
                                    "Gather", "TopK", "ArgMax"]))
    dtype = data.draw(st.sampled_from(
        ["float16", "bfloat16", "float32", "int32", "int64"] if op in ("TopK", "ArgMax")
        else MOVE_DTYPES))
    shape = _shape(data, data.draw(st.integers(1, 4)))
    rank = len(shape)
    specs, attrs = [ArgSpec(shape, dtype)], {}
    int64 = lambda values: ArgSpec((len(values),), "int64", tuple(values))  # noqa: E731
    if op == "Transpose":
        attrs["perm"] = data.draw(st.permutations(range(rank)))
    elif op == "Slice":
        starts = [data.draw(st.integers(-d - 2, d + 2)) for d in shape]
        ends = [data.draw(st.integers(-d - 2, d + 2)) for d in shape]
        steps = [data.draw(st.sampled_from([1, 2, 3, -1, -2])) for _ in shape]
        specs += [int64(starts), int64(ends), int64(list(range(rank))), int64(steps)]
    elif op == "Pad":
        pads = [data.draw(st.integers(-1, 3)) for _ in range(2 * rank)]
        specs.append(int64(pads))
        attrs["mode"] = data.draw(st.sampled_from(["constant", "edge", "reflect", "wrap"]))
    elif op == "Tile":
        specs.append(int64([data.draw(st.integers(0, 3)) for _ in shape]))
    elif op == "Expand":
        target = tuple(d if d != 1 else data.draw(st.integers(1, 5)) for d in shape)
        specs.append(int64(list(target)))
    elif op == "Concat":
        axis = data.draw(st.integers(0, rank - 1))
        other = tuple(data.draw(DIM) if i == axis else d for i, d in enumerate(shape))
        specs.append(ArgSpec(other, dtype))
        attrs["axis"] = axis
    elif op == "Gather":
        attrs["axis"] = data.draw(st.integers(-rank, rank - 1))
        specs.append(ArgSpec(_shape(data, data.draw(st.integers(0, 2))), "int64"))
    elif op == "TopK":
        attrs["axis"] = data.draw(st.integers(-rank, rank - 1))
        n = shape[attrs["axis"]]
        specs.append(int64([data.draw(st.integers(0, n))]))
    else:
        attrs["axis"] = data.draw(st.integers(-rank, rank - 1))
    _plan_or_decline(dev, op, specs, attrs, _config(data, op))
