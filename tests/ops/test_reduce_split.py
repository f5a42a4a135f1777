"""A reduction to one value is combined across cores through a GM workspace (issue item:
the cross-core combination), in float32 whatever the input type."""

import numpy as np
import pytest

import ixl
from ixl.kernels.reduce_split import SplitTiling
from ixl.profile.roofline import speed_of_light_us

REFS = {"ReduceSum": np.sum, "ReduceMax": np.max, "ReduceMin": np.min, "ReduceMean": np.mean}


@pytest.mark.parametrize("op", list(REFS))
@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32"])
def test_all_axes_reductions_split_over_every_core(dev, op, dtype):
    x = np.random.default_rng(7).uniform(-1, 1, (1000, 777)).astype(ixl.hixl.to_numpy(dtype))
    out = dev.run(op, dev.tensor(x), keepdims=0)
    rec = dev.last_profile
    assert rec.path == "native" and isinstance(rec.tiling, SplitTiling)
    assert rec.block_dim == dev.chip.aiv_cores
    want = REFS[op](x.astype(np.float64))
    tol = dev.registry.native(op).schema.tolerance(dtype)
    np.testing.assert_allclose(out.numpy().astype(np.float64), want,
                               atol=tol.atol * 10, rtol=tol.rtol)


def test_a_small_input_stays_on_one_core(dev):
    dev.run("ReduceSum", dev.tensor(np.ones((4, 8), np.float32)), keepdims=0)
    assert not isinstance(dev.last_profile.tiling, SplitTiling)


def test_a_long_float16_sum_keeps_float32_accumulation(dev):
    """60000 float16 ones: float16 accumulation would stall at 2048 (2048 + 1 rounds back)."""
    x = np.ones(60000, np.float16)
    out = dev.run("ReduceSum", dev.tensor(x), keepdims=0)
    assert isinstance(dev.last_profile.tiling, SplitTiling)
    assert float(out.numpy()) == 60000.0           # representable in float16


def test_reduce_over_all_of_4096_squared_is_near_the_speed_of_light():
    dev = ixl.device("910B1", timing_only=True)
    x = dev.empty((4096, 4096), "float16")
    dev.run("ReduceMean", x, keepdims=0).free()
    sol = speed_of_light_us("910B1", 4096 * 4096 * 2, 2)
    assert sol / dev.last_profile.time_us >= 0.85


@pytest.mark.parametrize("shape, axes", [((3, 200000), [1]), ((2, 3, 50000), [1, 2]),
                                         ((2, 3, 50000), [-1])])
def test_a_few_long_rows_split_each_row_over_a_group_of_cores(dev, shape, axes):
    x = np.random.default_rng(8).uniform(-1, 1, shape).astype(np.float32)
    out = dev.run("ReduceMean", dev.tensor(x), dev.tensor(np.array(axes, np.int64)), keepdims=1)
    rec = dev.last_profile
    assert isinstance(rec.tiling, SplitTiling) and rec.tiling.units * 2 <= rec.block_dim
    np.testing.assert_allclose(out.numpy(), x.astype(np.float64).mean(axis=tuple(axes),
                                                                      keepdims=True),
                               rtol=1e-5, atol=1e-6)


def test_many_rows_keep_one_core_per_row(dev):
    x = np.random.default_rng(9).uniform(-1, 1, (40, 50000)).astype(np.float32)
    dev.run("ReduceSum", dev.tensor(x), dev.tensor(np.array([1], np.int64)), keepdims=0)
    assert not isinstance(dev.last_profile.tiling, SplitTiling)
