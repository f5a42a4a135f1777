"""Tier S: native coverage, fusion, the tuning ladder and the speed-of-light goal (R3, R10)."""

import json

import numpy as np
import pytest

import ixl
from ixl.cli import main
from ixl.hixl import ArgSpec, all_ops
from ixl.nixl import REGISTRY, Graph
from ixl.profile import summarize
from ixl.profile.roofline import speed_of_light_us
from ixl.profile.tune import Tuner

TIER_S = ["Add", "Sub", "Mul", "Div", "Maximum", "Minimum", "Pow", "Relu", "LeakyRelu",
          "Gelu", "Silu", "Sigmoid", "Tanh", "Exp", "Log", "Sqrt", "Rsqrt", "Reciprocal", "Abs",
          "Neg", "Clip", "Adds", "Muls", "Cast", "Where"]


def test_every_tier_s_op_has_a_native_kernel():
    assert set(TIER_S) <= set(all_ops())
    missing = [op for op in TIER_S if REGISTRY.native(op) is None]
    assert not missing


@pytest.mark.parametrize("shapes", [((6, 5), (5,)), ((6, 1), (6, 5)), ((), (6, 5)),
                                    ((4, 1, 3), (5, 1)), ((2, 3, 1), (3, 40))])
def test_broadcasting_runs_natively(dev, shapes):
    rng = np.random.default_rng(1)
    a, b = (rng.standard_normal(s).astype(np.float32) for s in shapes)
    out = dev.run("Sub", dev.tensor(a), dev.tensor(b))
    assert dev.last_profile.path == "native"
    np.testing.assert_array_equal(out.numpy(), a - b)


def test_pow_odd_integer_exponent_keeps_the_sign(dev):
    x = np.linspace(-3, 3, 300, dtype=np.float32)
    for p in (3.0, -3.0, 4.0):
        out = dev.run("Pow", dev.tensor(x), dev.tensor(np.array(p, np.float32)))
        assert dev.last_profile.path == "native"
        with np.errstate(divide="ignore"):
            np.testing.assert_allclose(out.numpy(), x.astype(np.float64) ** p, rtol=2e-5)


def test_bad_cases_go_to_the_shim_visibly(dev):
    x = dev.tensor(np.ones((4, 8), np.float32))
    dev.run("Pow", x, dev.tensor(np.full((4, 8), 2, np.float32)))
    assert dev.last_profile.path == "shim" and "non-scalar" in dev.last_profile.reason
    dev.run("Cast", x, to="float64")          # the vector unit has no float64
    assert dev.last_profile.path == "shim" and "float64" in dev.last_profile.reason
    assert dev.last_profile.time_us > 0          # the host round trips are modeled


def _add_gelu_graph():
    g = Graph(inputs=["a", "b"], outputs=["out"])
    s = g.add("Add", "a", "b")
    g.add("Gelu", s, outputs=("out",))
    return g


def test_fused_and_unfused_graphs_agree_and_fusion_saves_a_launch(dev):
    rng = np.random.default_rng(2)
    feeds = {"a": rng.standard_normal((300, 64)).astype(np.float16),
             "b": rng.standard_normal((64,)).astype(np.float16)}
    g = _add_gelu_graph()
    plain = dev.run_graph(g, feeds)["out"]
    unfused = dev.last_graph
    fused_out = dev.run_graph(g, feeds, fuse=True)["out"]
    fused = dev.last_graph
    np.testing.assert_allclose(fused_out.numpy().astype(np.float32),
                               plain.numpy().astype(np.float32), atol=2e-3, rtol=2e-3)
    assert [r.op for r in fused.runs] == ["Fused[Add+Gelu]"]
    assert fused.runs[0].path == "native" and fused.runs[0].nodes == ["Add_0", "Gelu_1"]
    assert unfused.launches == 2 and fused.launches == 1
    assert fused.time_us < unfused.time_us
    before = REGISTRY.fusion.built
    dev.run_graph(g, feeds, fuse=True)["out"].free()
    assert REGISTRY.fusion.built == before           # same signature: the cached kernel


def test_fusion_removes_most_launch_overhead_of_a_chain_of_small_ops():
    dev = ixl.device("910B1", timing_only=True)
    g = Graph(inputs=["x"], outputs=["out"])
    v = "x"
    ops = ["Relu", "Exp", "Neg", "Sigmoid", "Abs", "Sqrt", "Tanh", "Muls"]
    for k, op in enumerate(ops):
        v = g.add(op, v, outputs=("out",) if k == len(ops) - 1 else None,
                  **({"scalar": 2.0} if op == "Muls" else {}))
    x = dev.empty((4096,), "float16")
    dev.run_graph(g, {"x": x})["out"].free()
    plain = summarize(dev.last_graph.runs)
    dev.run_graph(g, {"x": x}, fuse=True)["out"].free()
    fused = summarize(dev.last_graph.runs)
    assert plain.launches == len(ops) and plain.launch_share > 0.7
    assert fused.launches == 1 and fused.launch_us < plain.launch_us / 5
    assert fused.total_us < plain.total_us / 3


def test_r10_ladder_on_add_then_gelu():
    """Add followed by Gelu, 4096 x 4096 float16: double beats single, fused beats both."""
    tuner = Tuner("910B1", "Add", [ArgSpec((4096, 4096), "float16")] * 2, then=["Gelu"])
    try:
        single = tuner.unfused("single buffer", {"buffer_num": 1})
        double = tuner.unfused("double buffer", {"buffer_num": 2})
        fused = tuner.fused({"buffer_num": 2})
    finally:
        tuner.close()
    assert double.time_us < single.time_us
    assert fused.time_us < double.time_us
    assert single.move_ratio > double.move_ratio > fused.move_ratio
    assert fused.ai_core_util > double.ai_core_util > single.ai_core_util


def test_add_8192_squared_reaches_90_percent_of_speed_of_light():
    dev = ixl.device("910B1", timing_only=True)
    a = dev.empty((8192, 8192), "float16")
    dev.run("Add", a, a).free()
    sol = speed_of_light_us("910B1", 2 * 8192 * 8192 * 2, 8192 * 8192 * 2)
    assert sol / dev.last_profile.time_us >= 0.90


def test_tune_json_and_cache(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("IXL_TUNING_CACHE", str(tmp_path / "tuning.json"))
    assert main(["tune", "Relu", "--shape", "256,256", "--then", "Exp", "--json", "--save"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["variant"] for r in rows] == ["single buffer", "double buffer", "4-slot pipeline",
                                            "tuned", "fused"]
    for r in rows:
        assert set(r) >= {"variant", "time_us", "ai_core_util", "move_ratio"}
    stored = json.loads((tmp_path / "tuning.json").read_text())
    (key, config), = stored.items()
    assert key == "910B1|Relu|256x256|float16" and "buffer_num" in config
    dev = ixl.device("910B1", timing_only=True)
    x = dev.empty((256, 256), "float16")
    dev.run("Relu", x).free()
    assert dev.last_profile.config == config          # the tiling used the cached choice


@pytest.mark.parametrize("dtype", [np.float16, np.float32, "bfloat16"])
def test_where_with_a_condition_row_broadcast_over_many_rows(dev, dtype):
    rng = np.random.default_rng(3)
    dt = np.dtype(dtype)
    cond = rng.random(37) < 0.5
    x, y = (rng.standard_normal((300, 37)).astype(dt) for _ in range(2))
    out = dev.run("Where", dev.tensor(cond), dev.tensor(x), dev.tensor(y))
    assert dev.last_profile.path == "native"
    np.testing.assert_array_equal(out.numpy(), np.where(cond, x, y))


@pytest.mark.parametrize("axes", [[1], [2], [-1], [0, 2]])
def test_reductions_read_their_axes_when_shapes_cannot_tell(dev, axes):
    """keepdims=0 on (3, 2, 2): axis 1 and axis 2 leave the same shape; the host reads the
    axes input, so the native kernel reduces the right one."""
    x = np.arange(12, dtype=np.float32).reshape(3, 2, 2)
    out = dev.run("ReduceSum", dev.tensor(x), dev.tensor(np.array(axes, np.int64)), keepdims=0)
    assert dev.last_profile.path == "native"
    np.testing.assert_array_equal(out.numpy(), x.sum(axis=tuple(axes)))


def test_a_scalar_broadcast_over_long_rows_runs_natively(dev):
    x = np.random.default_rng(5).standard_normal((3, 40000)).astype(np.float32)
    out = dev.run("Mul", dev.tensor(x), dev.tensor(np.array(1.5, np.float32)))
    assert dev.last_profile.path == "native" and not dev.last_profile.tiling.rows
    np.testing.assert_allclose(out.numpy(), x * np.float32(1.5))


@pytest.mark.parametrize("shapes, dtype", [
    (((3, 1, 40000), (4, 1)), np.float32),        # a last-dim broadcast over long rows
    (((16, 30522), (30522,)), np.float32),        # a bias over an LLM vocabulary
    (((2, 49152), (49152,)), np.float16),
    (((5, 1), (5, 70001)), np.float16),           # odd length: a short last segment
])
def test_a_broadcast_row_longer_than_a_tile_runs_natively_in_segments(dev, shapes, dtype):
    rng = np.random.default_rng(6)
    x, y = (rng.standard_normal(s).astype(dtype) for s in shapes)
    out = dev.run("Add", dev.tensor(x), dev.tensor(y))
    tiling = dev.last_profile.tiling
    assert dev.last_profile.path == "native" and tiling.rows
    assert tiling.segment < max(s[-1] for s in shapes)        # rows cut into segments
    np.testing.assert_array_equal(out.numpy(), x + y)
    g = Graph(inputs=["x", "y"], outputs=["out"])
    g.add("Relu", g.add("Add", "x", "y"), outputs=("out",))
    fused = dev.run_graph(g, {"x": x, "y": y}, fuse=True)
    assert [r.op for r in dev.last_graph.runs] == ["Fused[Add+Relu]"]
    np.testing.assert_array_equal(fused["out"].numpy(), np.maximum(x + y, 0))
