"""The model-family ops natively: what the sample cases do not reach. Relative accuracy where
the composed functions are tiny (tanh, softplus, expm1 near 0), trigonometry over a wide range,
exact rounding and modulo, exact int32 comparisons, bool outputs, fusion roles, products that
overflow, pools' indices and ties, streamed channel groups and rows, Resize's column runs."""

import math

import numpy as np
import pytest

import ixl
from ixl.hixl import get_op
from ixl.nixl import REGISTRY, Graph, TensorDesc
from ixl.nixl.registry import Registry

FAMILY = ["HardSigmoid", "HardSwish", "Softplus", "Mish", "PRelu", "Elu", "Selu", "Sign",
          "Floor", "Ceil", "Round", "Mod", "Cos", "Sin", "And", "Or", "Xor", "Not", "Equal",
          "Greater", "Less", "GreaterOrEqual", "LessOrEqual", "MaxPool", "AveragePool",
          "GlobalAveragePool", "GlobalMaxPool", "BatchNormalization", "InstanceNormalization",
          "GroupNormalization", "ReduceProd", "ReduceL1", "ReduceL2", "ReduceSumSquare",
          "ReduceLogSum", "ReduceLogSumExp", "Resize"]


def run(dev, op, *arrays, **attrs):
    out = dev.run(op, *[None if a is None else dev.tensor(a) for a in arrays], **attrs)
    assert dev.last_profile.path == "native", dev.last_profile.reason
    outs = out if isinstance(out, tuple) else (out,)
    return [o.numpy() for o in outs] if len(outs) > 1 else outs[0].numpy()


def test_every_family_op_has_a_native_kernel():
    assert [op for op in FAMILY if REGISTRY.native(op) is None] == []


# ---- composed functions: relative accuracy where they are tiny ----

def test_tanh_keeps_its_relative_precision_near_zero(dev):
    x = np.concatenate([np.logspace(-9, 1, 400), -np.logspace(-9, 1, 400)]).astype(np.float32)
    got = run(dev, "Tanh", x)
    np.testing.assert_allclose(got, np.tanh(x.astype(np.float64)), rtol=2e-6, atol=0)


@pytest.mark.parametrize("op, fn", [
    ("Softplus", lambda x: np.logaddexp(0, x)),
    ("Mish", lambda x: x * np.tanh(np.logaddexp(0, x))),
    ("Elu", lambda x: np.where(x < 0, np.expm1(x), x))])
def test_tiny_results_keep_their_relative_precision(dev, op, fn):
    x = np.concatenate([-np.logspace(-7, 1.9, 300), np.logspace(-7, 1.9, 300)]).astype(
        np.float32)
    got = run(dev, op, x)
    np.testing.assert_allclose(got, fn(x.astype(np.float64)), rtol=5e-6, atol=0)


def test_softplus_and_elu_at_the_infinities_and_nan(dev):
    x = np.array([np.inf, -np.inf, np.nan, -200.0, 200.0], np.float32)
    np.testing.assert_array_equal(run(dev, "Softplus", x), [np.inf, 0, np.nan, 0, 200])
    np.testing.assert_array_equal(run(dev, "Elu", x, alpha=2.0), [np.inf, -2, np.nan, -2, 200])


@pytest.mark.parametrize("op, fn", [("Sin", np.sin), ("Cos", np.cos)])
def test_sin_and_cos_over_a_wide_range(dev, op, fn):
    x = np.concatenate([np.linspace(-10, 10, 2001), np.linspace(-3e4, 3e4, 2001),
                        [np.pi / 4, np.pi / 2, np.pi, 1e-20]]).astype(np.float32)
    got = run(dev, op, x)
    np.testing.assert_allclose(got, fn(x.astype(np.float64)), rtol=0, atol=4e-6)
    assert np.isnan(run(dev, op, np.array([np.nan, np.inf], np.float32))).all()


# ---- rounding, sign, modulo: exact ----

def test_rounding_is_exact_halves_to_even_and_large_values_pass(dev):
    x = np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 3.7, -3.7, 2.0 ** 23 + 1, -(2.0 ** 30),
                  3e38, np.inf, -np.inf, np.nan], np.float32)
    for op, fn in (("Round", np.round), ("Floor", np.floor), ("Ceil", np.ceil)):
        np.testing.assert_array_equal(run(dev, op, x), fn(x), err_msg=op)


def test_sign_of_zero_and_nan(dev):
    x = np.array([-3.0, -0.0, 0.0, 2.0, np.nan, -np.inf], np.float16)
    np.testing.assert_array_equal(run(dev, "Sign", x), np.sign(x))


def test_fmod_is_exact_near_multiples(dev):
    rng = np.random.default_rng(3)
    b = (rng.uniform(0.1, 10, 5000) * rng.choice([-1, 1], 5000)).astype(np.float32)
    k = rng.integers(-3000, 3000, 5000).astype(np.float32)
    a = (k * b + rng.uniform(-1e-3, 1e-3, 5000).astype(np.float32) * b).astype(np.float32)
    np.testing.assert_array_equal(run(dev, "Mod", a, b, fmod=1), np.fmod(a, b))


def test_integer_mod_is_exact_over_int32_and_gives_0_for_a_zero_divisor(dev):
    rng = np.random.default_rng(4)
    info = np.iinfo(np.int32)
    a = rng.integers(info.min, info.max, 4096, dtype=np.int32)
    b = np.concatenate([rng.integers(info.min, info.max, 2048),
                        rng.integers(-9, 10, 2048)]).astype(np.int32)
    b[b == 0] = 7
    b[:3] = 0
    want = np.mod(a, np.where(b == 0, 1, b)).astype(np.int32)
    want[:3] = 0
    np.testing.assert_array_equal(run(dev, "Mod", a, b, fmod=0), want)


def test_integer_fmod_and_int64_go_to_the_shim_and_say_why(dev):
    a = dev.tensor(np.arange(1, 9, dtype=np.int32))
    dev.run("Mod", a, a, fmod=1)
    assert dev.last_profile.path == "shim" and "fmod=0" in dev.last_profile.reason
    b = dev.tensor(np.arange(1, 9, dtype=np.int64))
    dev.run("Mod", b, b)
    assert dev.last_profile.path == "shim" and "int64" in dev.last_profile.reason


# ---- comparisons and logic: bool outputs ----

def test_comparisons_give_bool_natively_and_nan_compares_false(dev):
    a = np.array([1, np.nan, -2, 3, np.inf, 0], np.float32)
    b = np.array([1, np.nan, 5, -3, np.inf, -0.0], np.float32)
    for op, fn in (("Equal", np.equal), ("Greater", np.greater), ("Less", np.less),
                   ("GreaterOrEqual", np.greater_equal), ("LessOrEqual", np.less_equal)):
        got = run(dev, op, a, b)
        assert got.dtype == np.bool_
        np.testing.assert_array_equal(got, fn(a, b), err_msg=op)


def test_int32_equal_is_exact_where_float32_would_round(dev):
    a = np.array([2 ** 30, 2 ** 30 + 1, -(2 ** 31), 2 ** 31 - 1, 5], np.int32)
    b = np.array([2 ** 30 + 1, 2 ** 30 + 1, -(2 ** 31), 2 ** 31 - 2, 5], np.int32)
    np.testing.assert_array_equal(run(dev, "Equal", a, b), a == b)


def test_logical_ops_broadcast(dev):
    rng = np.random.default_rng(5)
    a, b = rng.random((3, 4, 5)) < 0.5, rng.random((4, 1)) < 0.5
    for op, fn in (("And", np.logical_and), ("Or", np.logical_or), ("Xor", np.logical_xor)):
        np.testing.assert_array_equal(run(dev, op, a, b), fn(a, b), err_msg=op)
    np.testing.assert_array_equal(run(dev, "Not", a), ~a)


def test_new_maps_fuse_and_comparisons_do_not(dev):
    fusion = REGISTRY.fusion
    assert {fusion.role(op) for op in ("Softplus", "Mish", "Sin", "Mod", "Not", "And")} == {
        "map"}
    assert {fusion.role(op) for op in ("Equal", "Greater", "LessOrEqual")} == {None}
    g = Graph(inputs=["a", "b"], outputs=["out"])
    s = g.add("Add", "a", "b")
    g.add("Mish", g.add("Softplus", s), outputs=("out",))
    rng = np.random.default_rng(6)
    a, b = (rng.standard_normal((64, 300)).astype(np.float32) for _ in range(2))
    out = dev.run_graph(g, {"a": a, "b": b}, fuse=True)["out"]
    assert [r.op for r in dev.last_graph.runs] == ["Fused[Add+Softplus+Mish]"]
    sp = np.logaddexp(0, (a + b).astype(np.float64))
    np.testing.assert_allclose(out.numpy(), sp * np.tanh(np.logaddexp(0, sp)), rtol=2e-6,
                               atol=1e-7)


# ---- reductions ----

def test_a_product_with_a_zero_is_zero_even_where_partial_products_overflow(dev):
    x = np.full((3, 4096), 4.0, np.float32)
    x[0, 4000] = 0.0
    x[2, 7] = -1.0
    got = run(dev, "ReduceProd", x, np.array([1], np.int64))
    np.testing.assert_array_equal(got.ravel(), [0.0, np.inf, -np.inf])
    small = np.array([[0.5, 3.0, -2.0, 1e-3]], np.float32)
    np.testing.assert_allclose(run(dev, "ReduceProd", small, np.array([-1], np.int64)),
                               [[-3e-3]], rtol=1e-6)


def test_family_reductions_over_columns_and_the_noop(dev):
    x = np.random.default_rng(7).uniform(0.1, 2, (5, 6, 7)).astype(np.float32)
    axes = np.array([1], np.int64)
    for op, fn in (("ReduceL1", lambda v: np.abs(v).sum(1, keepdims=True)),
                   ("ReduceL2", lambda v: np.sqrt((v * v).sum(1, keepdims=True))),
                   ("ReduceLogSum", lambda v: np.log(v.sum(1, keepdims=True))),
                   ("ReduceLogSumExp", lambda v: np.log(np.exp(v).sum(1, keepdims=True))),
                   ("ReduceProd", lambda v: v.prod(1, keepdims=True))):
        np.testing.assert_allclose(run(dev, op, x, axes), fn(x.astype(np.float64)),
                                   rtol=3e-6, err_msg=op)
        noop = run(dev, op, x, np.array([], np.int64), noop_with_empty_axes=1)
        np.testing.assert_array_equal(noop, x, err_msg=op)


def test_log_sum_exp_of_minus_infinity_and_huge_values(dev):
    x = np.array([[-np.inf] * 5, [1e30, 1e30, 0, 0, 0]], np.float32)
    got = run(dev, "ReduceLogSumExp", x, np.array([1], np.int64))
    np.testing.assert_allclose(got.ravel(), [-np.inf, 1e30 + math.log(2)], rtol=1e-6)


# ---- pools ----

def test_max_pool_indices_take_the_first_maximum_in_row_major_window_order(dev):
    x = np.zeros((1, 2, 6, 6), np.float32)          # every window all ties
    x[0, 1, 3, 1] = x[0, 1, 2, 3] = 5.0             # a tie across rows and columns
    ref = get_op("MaxPool").reference(x, kernel_shape=[3, 3], strides=[2, 2],
                                      pads=[1, 1, 1, 1])
    for order in (0, 1):
        y, idx = run(dev, "MaxPool", x, kernel_shape=[3, 3], strides=[2, 2],
                     pads=[1, 1, 1, 1], storage_order=order)
        want = get_op("MaxPool").reference(x, kernel_shape=[3, 3], strides=[2, 2],
                                           pads=[1, 1, 1, 1], storage_order=order)
        np.testing.assert_array_equal(y, ref[0])
        assert idx.dtype == np.int64
        np.testing.assert_array_equal(idx, want[1])


def test_max_pool_declines_planes_whose_indices_float32_cannot_count(dev):
    big = TensorDesc.nd((1, 1, 4096, 4097), "float32")
    reason = REGISTRY.native("MaxPool").why_not([big], {"kernel_shape": [2, 2]})
    assert reason is not None and "float32" in reason


def test_average_pool_counts_padding_but_not_the_ceil_overhang(dev):
    x = np.random.default_rng(8).standard_normal((2, 3, 7, 8)).astype(np.float16)
    attrs = dict(kernel_shape=[3, 2], strides=[2, 3], pads=[1, 0, 1, 1], ceil_mode=1)
    for include in (0, 1):
        got = run(dev, "AveragePool", x, count_include_pad=include, **attrs)
        want = get_op("AveragePool").reference(x.astype(np.float32), count_include_pad=include,
                                               **attrs)[0]
        np.testing.assert_allclose(got.astype(np.float32), want, rtol=2e-3, atol=2e-3)


# ---- channel normalisations ----

def _golden(op, arrays, **attrs):
    return get_op(op).reference(*[a.astype(np.float64) for a in arrays], **attrs)[0]


def test_group_norm_streams_a_group_longer_than_ub(dev):
    rng = np.random.default_rng(9)
    x = (rng.standard_normal((1, 16, 40, 40)) * 3 + 50).astype(np.float32)
    scale, bias = rng.standard_normal((2, 16)).astype(np.float32)
    got = run(dev, "GroupNormalization", x, scale, bias, num_groups=1)
    assert dev.last_profile.tiling.rows < dev.last_profile.tiling.group      # it streamed
    np.testing.assert_allclose(got, _golden("GroupNormalization", [x, scale, bias],
                                            num_groups=1), rtol=1e-4, atol=1e-4)


def test_batch_norm_splits_rows_longer_than_ub(dev):
    rng = np.random.default_rng(10)
    x = rng.standard_normal((1, 3, 150, 160)).astype(np.float32)
    scale, bias, mean = rng.standard_normal((3, 3)).astype(np.float32)
    var = rng.uniform(0.5, 2, 3).astype(np.float32)
    got = run(dev, "BatchNormalization", x, scale, bias, mean, var)
    assert dev.last_profile.tiling.segment < 150 * 160
    np.testing.assert_allclose(got, _golden("BatchNormalization", [x, scale, bias, mean, var]),
                               rtol=1e-5, atol=1e-5)


# ---- Resize ----

@pytest.mark.parametrize("x_shape, attrs, sizes", [
    ((2, 3, 6, 8), dict(mode="linear"), [2, 3, 9, 12]),                         # x1.5: P 3, Q 2
    ((1, 2, 5, 300), dict(mode="linear", coordinate_transformation_mode="align_corners"),
     [1, 2, 5, 7]),                                                            # no short period
    ((1, 1, 9, 40), dict(mode="nearest", nearest_mode="ceil",
                         coordinate_transformation_mode="half_pixel_symmetric"), [1, 1, 4, 110]),
    ((1, 2, 4, 20), dict(mode="cubic", exclude_outside=1), [1, 2, 7, 50])])
def test_resize_runs_natively_and_matches_the_golden(dev, x_shape, attrs, sizes):
    x = np.random.default_rng(11).standard_normal(x_shape).astype(np.float32)
    s = np.array(sizes, np.int64)
    got = dev.run("Resize", dev.tensor(x), None, None, dev.tensor(s), **attrs)
    assert dev.last_profile.path == "native", dev.last_profile.reason
    want = get_op("Resize").reference(x.astype(np.float64), None, None, s, **attrs)[0]
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-5, atol=1e-5)


def test_resize_of_a_leading_dim_goes_to_the_shim(dev):
    x = dev.tensor(np.ones((2, 3, 4, 4), np.float32))
    dev.run("Resize", x, None, dev.tensor(np.array([1, 2, 1, 1], np.float32)))
    assert dev.last_profile.path == "shim" and "last two dims" in dev.last_profile.reason


def test_native_pools_and_norms_beat_the_shim_on_a_cnn_layer():
    """Modeled times (deterministic) of a 64-channel 112x112 layer's MaxPool and
    BatchNormalization, native against the shim (a registry without kernels)."""
    times = {}
    for path, extra in (("native", {}), ("shim", {"registry": Registry(load_library=False)})):
        dev = ixl.device("910B1", timing_only=True, **extra)
        x = dev.empty((1, 64, 112, 112), "float16")
        c = [dev.empty((64,), "float16") for _ in range(4)]
        for op, args, attrs in (("MaxPool", [x], dict(kernel_shape=[3, 3], strides=[2, 2],
                                                       pads=[1, 1, 1, 1])),
                                ("BatchNormalization", [x] + c, {})):
            outs = dev.run(op, *args, **attrs)
            assert dev.last_profile.path == path
            times[op, path] = dev.last_profile.time_us
            for o in outs if isinstance(outs, tuple) else (outs,):
                o.free()
        for t in [x] + c:
            t.free()
        assert dev.close() == []
    assert times["MaxPool", "native"] < times["MaxPool", "shim"], times
    assert times["BatchNormalization", "native"] < times["BatchNormalization", "shim"] / 4, times
