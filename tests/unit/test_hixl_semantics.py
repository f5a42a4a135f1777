"""HIXL goldens on the edge cases that ONNX defines and numpy does differently."""

import math

import ml_dtypes
import numpy as np
import pytest

import ixl
from ixl.hixl import get_op


def ref(op, *arrays, **attrs):
    return get_op(op).reference(*arrays, **attrs)


def i64(*values):
    return np.array(values, np.int64)


def test_topk_ties_take_the_lower_index_first_both_ways():
    x = np.array([[1, 3, 3, 2, 3, 1]], np.float32)
    values, idx = ref("TopK", x, i64(4))
    assert idx.tolist() == [[1, 2, 4, 3]] and values.tolist() == [[3, 3, 3, 2]]
    values, idx = ref("TopK", x, i64(3), largest=0)
    assert idx.tolist() == [[0, 5, 3]] and idx.dtype == np.int64


def test_topk_largest_of_the_smallest_int64_does_not_overflow():
    lo = np.iinfo(np.int64).min
    _, idx = ref("TopK", np.array([lo, 0, lo], np.int64), i64(3))
    assert idx.tolist() == [1, 0, 2]


def test_sort_is_stable_and_returns_indices():
    x = np.array([2, 1, 2, 1], np.float16)
    values, idx = ref("Sort", x, descending=1)
    assert values.tolist() == [2, 2, 1, 1] and idx.tolist() == [0, 2, 1, 3]


def test_argmax_first_or_last_of_ties():
    x = np.array([[1, 5, 5], [7, 7, 0]], np.float32)
    assert ref("ArgMax", x, axis=1)[0].tolist() == [[1], [0]]
    assert ref("ArgMax", x, axis=1, keepdims=0, select_last_index=1)[0].tolist() == [2, 1]


@pytest.mark.parametrize("op, dtype, expected", [
    ("ReduceSum", np.float32, 0.0), ("ReduceMax", np.float16, -np.inf),
    ("ReduceMin", np.float32, np.inf), ("ReduceMax", np.int32, np.iinfo(np.int32).min),
])
def test_reductions_over_an_empty_set_give_their_identity(op, dtype, expected):
    (y,) = ref(op, np.zeros((2, 0, 4), dtype), i64(1))
    assert y.shape == (2, 1, 4) and y.dtype == dtype and (y == expected).all()


def test_reduce_mean_of_an_empty_set_is_nan_and_noop_keeps_the_input():
    assert np.isnan(ref("ReduceMean", np.zeros((0, 3), np.float32), i64(0))[0]).all()
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    assert (ref("ReduceSum", x, np.zeros(0, np.int64), noop_with_empty_axes=1)[0] == x).all()
    assert ref("ReduceSum", x)[0].tolist() == [[15]]


def test_integer_division_truncates_toward_zero():
    (y,) = ref("Div", np.array([-7, 7, -7], np.int32), np.array([2, -2, -2], np.int32))
    assert y.tolist() == [-3, -3, 3]


def test_pow_keeps_the_base_dtype_and_takes_negative_integer_exponents():
    (y,) = ref("Pow", np.array([2, 3], np.int64), np.array([-1, 2], np.int64))
    assert y.dtype == np.int64 and y.tolist() == [0, 9]
    (y,) = ref("Pow", np.array([2.0], np.float16), np.array([0.5], np.float32))
    assert y.dtype == np.float16 and y[0] == np.float16(math.sqrt(2))


def test_halves_are_computed_in_float32_and_rounded_once():
    x = np.linspace(-3, 3, 101).astype(ml_dtypes.bfloat16)
    (y,) = ref("Gelu", x, approximate="tanh")
    wide = x.astype(np.float32)
    expected = 0.5 * wide * (1 + np.tanh(np.float32(math.sqrt(2 / math.pi))
                                         * (wide + np.float32(0.044715) * wide ** 3)))
    assert y.dtype == x.dtype and (y == expected.astype(x.dtype)).all()


def test_layer_norm_gives_float32_statistics_shaped_for_broadcast():
    x = np.random.default_rng(0).standard_normal((2, 3, 4)).astype(np.float16)
    y, mean, inv = ref("LayerNormalization", x, None, None, axis=1)
    assert mean.shape == inv.shape == (2, 1, 1) and mean.dtype == inv.dtype == np.float32
    wide = x.astype(np.float32)
    np.testing.assert_allclose(mean.ravel(), wide.reshape(2, -1).mean(1), rtol=1e-6)
    np.testing.assert_allclose(inv.ravel(), 1 / np.sqrt(wide.reshape(2, -1).var(1) + 1e-5),
                               rtol=1e-5)


def test_conv_matches_a_direct_loop_with_groups_dilation_and_same_lower():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((1, 4, 6, 6))
    w = rng.standard_normal((2, 2, 2, 2))
    (y,) = ref("Conv", x, w, group=2, dilations=[2, 1], auto_pad="SAME_LOWER")
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 0)))   # extent 3x2: pads 2 and 1, more before
    expected = np.zeros((1, 2, 6, 6))
    for m in range(2):
        g = m                                             # one output channel per group
        for i in range(6):
            for j in range(6):
                patch = xp[0, 2 * g:2 * g + 2, i:i + 3:2, j:j + 2]
                expected[0, m, i, j] = (patch * w[m]).sum()
    np.testing.assert_allclose(y, expected, rtol=1e-12)


@pytest.mark.parametrize("starts, ends, axes, steps", [
    ([-1], [-1000], [1], [-2]), ([1], [1000], [0], [1]), ([100], [-100], [0], [-1]),
    ([0, 0], [3, -1], [1, 0], [1, 1]),
])
def test_slice_clamps_like_python_slicing(starts, ends, axes, steps):
    x = np.arange(50).reshape(5, 10).astype(np.float32)
    (y,) = ref("Slice", x, i64(*starts), i64(*ends), i64(*axes), i64(*steps))
    index = [slice(None)] * 2
    for s, e, a, st in zip(starts, ends, axes, steps):
        index[a] = slice(s, e, st)
    assert (y == x[tuple(index)]).all()


def test_reshape_zero_copies_a_dim_unless_allowzero():
    x = np.zeros((2, 3, 4), np.float32)
    assert ref("Reshape", x, i64(0, -1))[0].shape == (2, 12)
    assert ref("Reshape", np.zeros((0, 3), np.float32), i64(3, 0), allowzero=1)[0].shape == (3, 0)


def test_shape_start_end_clamp_and_range_counts():
    assert ref("Shape", np.zeros((2, 3, 4)), start=-10, end=10)[0].tolist() == [2, 3, 4]
    assert ref("Shape", np.zeros((2, 3, 4)), start=2, end=1)[0].shape == (0,)
    (y,) = ref("Range", *(np.array(v, np.int32) for v in (10, 6, -3)))
    assert y.tolist() == [10, 7] and y.dtype == np.int32


def test_shape_dynamic_ops_run_on_the_device_with_host_inputs():
    with ixl.device("910B1", debug=True) as dev:
        x = dev.tensor(np.arange(24, dtype=np.float32).reshape(2, 3, 4))
        shape = dev.tensor(i64(4, -1))
        y = dev.run("Reshape", x, shape)
        assert y.shape == (4, 6) and dev.last_profile.path == "view"     # no data moved
        np.testing.assert_array_equal(y.numpy(), np.arange(24).reshape(4, 6))
        parts = dev.run("Concat", y, y, y, axis=0)
        assert parts.shape == (12, 6)
        c = dev.run("Constant", value=np.array(2.5, np.float32))
        assert c.shape == () and c.numpy().reshape(()) == 2.5
        for t in (x, shape, y, parts, c):
            t.free()
