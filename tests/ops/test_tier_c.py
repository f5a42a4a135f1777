"""Tier C natively: the data-movement ops (Gather, GatherElements, GatherND, Transpose, Concat,
Split, Slice, Expand, Tile, Pad), the ordering ops (TopK, Sort, ArgMax, ArgMin) and Cast from
and to int64 and bool, in debug mode against their goldens, bit for bit: every sample case on
the native path, the integer dtypes the movement kernels take, every permutation, ties, and
the speed-of-light goals of Gather and Transpose."""

import itertools

import ml_dtypes
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ixl
from ixl.ascend.errors import AicoreOutOfBound
from ixl.hixl import get_op
from ixl.profile.roofline import speed_of_light_us
from ixl.verify.cases import iter_samples, run_case, sample_specs
from tests.helpers import run_arrays

MOVES = ("Gather", "GatherElements", "GatherND", "Transpose", "Concat", "Split", "Slice",
         "Expand", "Tile", "Pad")
ORDERS = ("TopK", "Sort", "ArgMax", "ArgMin")
CASES = [pytest.param(s, c, d, id=f"{s.name}-{c.note}-{d}")
         for s, c, d in iter_samples(list(MOVES + ORDERS) + ["Cast"])]


@pytest.fixture(scope="module")
def dev():
    d = ixl.device("910B1", debug=True)
    yield d
    assert d.close() == []


def run(dev, op, arrays, **attrs):
    """Outputs of `op` on `arrays` (checked: native, and equal to the golden bit for bit)."""
    got, record = run_arrays(dev, op, arrays, **attrs)
    assert record.path == "native", record.reason
    for g, want in zip(got, get_op(op).reference(*arrays, **attrs)):
        assert g.dtype == want.dtype and g.shape == want.shape
        np.testing.assert_array_equal(g, want)
    return got


@pytest.fixture(scope="module")
def timing():
    d = ixl.device("910B1", timing_only=True)
    yield d
    assert d.close() == []


@pytest.mark.parametrize("schema, case, dtype", CASES)
def test_every_sample_case_runs_natively(dev, timing, schema, case, dtype):
    """The path of every case (tests/ops/test_sample_cases.py checks the large ones against
    the golden: here they run timing-only)."""
    large = case.note.startswith("large")
    on = timing if large else dev
    res = run_case(on, schema, sample_specs(on, schema, case, dtype), case.attrs,
                   note=case.note)
    assert res.path == "native", res.reason
    assert large or res.ok, "; ".join(c.summary() for c in res.comparisons)


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_movement_of_integers(dev, dtype):
    rng = np.random.default_rng(1)
    x = rng.integers(-99, 99, (3, 5, 7)).astype(dtype)
    i64 = lambda v: np.array(v, np.int64)  # noqa: E731
    run(dev, "Slice", [x, i64([1, -1]), i64([3, -6]), i64([1, 2]), i64([1, -2])])
    run(dev, "Concat", [x, x[:, :2]], axis=1)
    run(dev, "Split", [x, i64([2, 3, 2])], axis=2)
    run(dev, "Expand", [x[:, :1], i64([2, 3, 4, 7])])
    run(dev, "Expand", [x[..., :1], i64([3, 5, 9])])
    run(dev, "Tile", [x, i64([2, 1, 3])])
    for mode in ("constant", "edge", "reflect", "wrap"):
        value = [x.reshape(-1)[:1].reshape(())] if mode == "constant" else []
        run(dev, "Pad", [x, i64([1, 0, 2, 0, 3, 3])] + value, mode=mode)
    for axis in (0, 1):
        run(dev, "Gather", [x, rng.integers(-x.shape[axis], x.shape[axis], (2, 3))],
            axis=axis)
    run(dev, "GatherND", [x, rng.integers(-3, 3, (4, 1))])


@pytest.mark.parametrize("shape", [(3, 5, 7), (2, 17, 1, 33), (1, 128, 12, 32)])
@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.int32])
def test_every_permutation(dev, shape, dtype):
    x = np.random.default_rng(2).integers(-50, 50, shape).astype(dtype)
    for perm in itertools.permutations(range(len(shape))):
        run(dev, "Transpose", [x], perm=list(perm))


@pytest.mark.parametrize("dtype", [np.int64, np.bool_])
def test_every_permutation_of_other_widths_moves_rows_of_one_element(dev, dtype):
    x = np.random.default_rng(2).integers(0, 2, (3, 5, 7)).astype(dtype)
    for perm in itertools.permutations(range(3)):
        run(dev, "Transpose", [x], perm=list(perm))


def test_a_transpose_keeping_the_last_dim_is_row_moves_and_one_moving_it_uses_tiles(dev):
    x = np.arange(128 * 12 * 32, dtype=np.float32).reshape(1, 128, 12, 32)
    run(dev, "Transpose", [x], perm=[0, 2, 1, 3])
    assert dev.last_profile.kernel == "transpose_kernel"
    assert type(dev.last_profile.tiling).__name__ == "RowMoveTiling"
    run(dev, "Transpose", [x], perm=[0, 2, 3, 1])
    assert type(dev.last_profile.tiling).__name__ == "TransposeTiling"


@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
def test_gather_elements_and_the_last_axis(dev, index_dtype):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((6, 5, 7)).astype(np.float32)
    run(dev, "Gather", [x, rng.integers(-7, 7, (4,)).astype(index_dtype)], axis=2)
    run(dev, "GatherElements", [x, rng.integers(-5, 5, (6, 3, 7)).astype(index_dtype)], axis=1)
    run(dev, "GatherElements", [x, rng.integers(-7, 7, (6, 5, 9)).astype(index_dtype)], axis=2)


def test_an_index_past_the_table_is_the_chips_gm_bound_error(dev):
    table = dev.tensor(np.ones((10, 64), np.float32))
    idx = dev.tensor(np.array([3, 10], np.int64))
    with pytest.raises(AicoreOutOfBound, match="outside tensor 'data'"):
        dev.run("Gather", table, idx)
    table.free()
    idx.free()


CAST_TO = {np.int64: ("float32", "float16", "bfloat16", "int32", "int64", "bool"),
           np.int32: ("int64", "bool"), np.bool_: ("float32", "float16", "int32", "int64"),
           np.float32: ("int64", "bool"), np.float16: ("int64", "bool"),
           ml_dtypes.bfloat16: ("int64", "bool")}


@pytest.mark.parametrize("src", list(CAST_TO), ids=lambda d: np.dtype(d).name)
def test_cast_from_and_to_int64_and_bool(dev, src):
    rng = np.random.default_rng(4)
    if src == np.bool_:
        x = rng.random((5, 77)) < 0.5
    elif np.dtype(src).kind == "i":
        x = rng.integers(-(2 ** 30), 2 ** 30, (5, 77)).astype(src)
        x.reshape(-1)[:4] = [0, -1, 1, np.iinfo(src).max]
    else:
        x = (rng.standard_normal((5, 77)) * 3e3).astype(src)
        x.reshape(-1)[:6] = [0, -0.0, 2.5, -2.5, np.inf, np.nan]
    for to in CAST_TO[src]:
        run(dev, "Cast", [x], to=to)


def test_cast_to_int64_saturates_as_the_golden_does(dev):
    x = np.array([np.nan, np.inf, -np.inf, 1e20, -1e20, 9.3e18, 4294967296.0, 2147483648.0,
                  -3e9, 1e-30], np.float32)
    run(dev, "Cast", [x], to="int64")
    run(dev, "Cast", [np.array([-(2 ** 40), 2 ** 33 + 5, -5], np.int64)], to="float32")


@settings(max_examples=25, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_ordering_is_stable_with_ties(dev, data):
    shape = tuple(data.draw(st.lists(st.integers(1, 40), min_size=1, max_size=3)))
    axis = data.draw(st.integers(0, len(shape) - 1))
    dtype = data.draw(st.sampled_from([np.float16, np.float32, ml_dtypes.bfloat16]))
    x = (np.random.default_rng(len(shape)).integers(-3, 3, shape) / 2).astype(dtype)
    k = data.draw(st.integers(1, shape[axis]))
    largest = data.draw(st.sampled_from([0, 1]))
    run(dev, "TopK", [x, np.array([k], np.int64)], axis=axis, largest=largest)
    run(dev, "Sort", [x], axis=axis, descending=largest)
    last = data.draw(st.sampled_from([0, 1]))
    run(dev, "ArgMax", [x], axis=axis, select_last_index=last)
    run(dev, "ArgMin", [x], axis=axis, select_last_index=last, keepdims=0)


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_integers_order_exactly_over_their_whole_range(dev, dtype):
    """Sort32 compares float scores: integers sort as 16-bit digit passes, exact."""
    info = np.iinfo(dtype)
    rng = np.random.default_rng(7)
    wide = rng.integers(info.min, info.max, (4, 37), dtype=dtype)
    wide.reshape(-1)[:4] = [info.min, info.max, -1, 0]
    ties = rng.integers(-2, 2, (37, 3)).astype(dtype)
    for x, axis in ((wide, 1), (ties, 0)):
        for largest in (0, 1):
            run(dev, "TopK", [x, np.array([5], np.int64)], axis=axis, largest=largest)
        run(dev, "Sort", [x], axis=axis, descending=1)
        run(dev, "ArgMax", [x], axis=axis, select_last_index=1)
        run(dev, "ArgMin", [x], axis=axis)


def test_topk_of_a_long_row_keeps_a_running_best_k(dev):
    x = (np.random.default_rng(5).integers(-50, 50, (2, 9000)) / 4).astype(np.float32)
    run(dev, "TopK", [x, np.array([40], np.int64)], axis=-1)


@pytest.mark.slow
@pytest.mark.parametrize("op", ["Gather", "Transpose"])
def test_4096_square_float16_reaches_85_percent_of_the_speed_of_light(op):
    dev = ixl.device("910B1")
    x = dev.empty((4096, 4096), "float16")
    args = [x]
    read = 4096 * 4096 * 2
    if op == "Gather":
        idx = np.random.default_rng(6).integers(0, 4096, 4096).astype(np.int64)
        args.append(dev.tensor(idx))
        read += idx.nbytes
    y = dev.run(op, *args)
    sol = speed_of_light_us("910B1", read, 4096 * 4096 * 2)
    share = sol / dev.last_profile.time_us
    assert dev.last_profile.path == "native" and share >= 0.85, share
    for t in (*args, y):
        t.free()
    assert dev.close() == []
