"""Tier B: MatMul and Gemm on the Cube, natively, in every float type; their epilogues (bias
and ReLU on the Cube, the rest on the vector side of a mix kernel), split-K for a decode
step's rows, float32 as plain fp32 or HF32, and the host tiling's sizes from the chip (R11).
Every sample case runs natively in debug mode in test_sample_cases.py; here what is particular
to the kernel."""

import dataclasses
import math

import ml_dtypes
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ixl
from ixl.ascend import get_chip
from ixl.hixl import to_numpy
from ixl.kernels.matmul_epilogue import Epilogue
from ixl.kernels.matmul_tiling import MatmulShape, matmul_shape, plan
from ixl.nixl import Graph, TensorDesc
from ixl.nixl.tuning import TuningConfig
from ixl.profile.metrics import launch_metrics
from ixl.profile.roofline import speed_of_light_us
from tests.helpers import run_arrays

ULP = {"float16": 2.0 ** -10, "bfloat16": 2.0 ** -7, "float32": 2.0 ** -23}


@pytest.fixture(scope="module")
def dev():
    d = ixl.device("910B1", debug=True)
    yield d
    assert d.close() == []


def _close(got, want, dtype, k):
    """Within the output type's rounding and float32 accumulation over K."""
    ulp = ULP[dtype]
    scale = max(1.0, float(np.abs(want).max()))
    np.testing.assert_allclose(got.astype(np.float64), want, rtol=2 * ulp,
                               atol=(2 * ulp + 1e-6 * math.sqrt(max(k, 1))) * scale)


# ---------------------------------------------------------------- shapes, dtypes, layouts

@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_matmul_is_native_and_matches_numpy_over_shapes_and_dtypes(dev, data):
    """numpy.matmul's semantics: 1-D operands, batch dims broadcast, any M, N, K (0 and 1
    included, no multiples of 16 needed), in float16, bfloat16 and float32."""
    dtype = data.draw(st.sampled_from(["float16", "bfloat16", "float32"]))
    m, k, n = (data.draw(st.integers(1, 70)) for _ in range(3))
    k = data.draw(st.sampled_from([k, 0])) if data.draw(st.booleans()) else k
    batch_a = tuple(data.draw(st.lists(st.integers(1, 3), max_size=2)))
    batch_b = tuple(d if data.draw(st.booleans()) else 1 for d in batch_a)[
        data.draw(st.integers(0, len(batch_a))):]
    a_shape = (k,) if data.draw(st.booleans()) and not batch_a else batch_a + (m, k)
    b_shape = (k,) if data.draw(st.booleans()) and not batch_b else batch_b + (k, n)
    rng = np.random.default_rng(data.draw(st.integers(0, 1000)))
    a, b = (rng.uniform(-1, 1, s).astype(to_numpy(dtype)) for s in (a_shape, b_shape))
    (got,), rec = run_arrays(dev, "MatMul", [a, b])
    assert rec.path == "native", rec.reason
    want = np.matmul(a.astype(np.float64), b.astype(np.float64))
    assert got.shape == want.shape
    _close(got, want, dtype, k)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_gemm_is_native_with_transposes_alpha_beta_and_c(dev, data):
    dtype = data.draw(st.sampled_from(["float16", "bfloat16", "float32"]))
    m, k, n = (data.draw(st.integers(1, 60)) for _ in range(3))
    ta, tb = data.draw(st.booleans()), data.draw(st.booleans())
    c_shape = data.draw(st.sampled_from([None, (), (n,), (1, n), (m, 1), (m, n)]))
    alpha = data.draw(st.sampled_from([1.0, 0.5, -2.0]))
    beta = data.draw(st.sampled_from([1.0, 0.25]))
    rng = np.random.default_rng(data.draw(st.integers(0, 1000)))
    a = rng.uniform(-1, 1, (k, m) if ta else (m, k)).astype(to_numpy(dtype))
    b = rng.uniform(-1, 1, (n, k) if tb else (k, n)).astype(to_numpy(dtype))
    arrays = [a, b] + ([] if c_shape is None else
                       [rng.uniform(-1, 1, c_shape).astype(to_numpy(dtype))])
    (got,), rec = run_arrays(dev, "Gemm", arrays, transA=int(ta), transB=int(tb),
                             alpha=alpha, beta=beta)
    assert rec.path == "native", rec.reason
    want = alpha * ((a.T if ta else a).astype(np.float64) @ (b.T if tb else b).astype(np.float64))
    if c_shape is not None:
        want = want + beta * arrays[2].astype(np.float64)
    _close(got, want, dtype, k)
    # the Cube finishes alpha = beta = 1 with no C or a bias row alone; the rest needs the AIVs
    cube_only = alpha == 1 and (c_shape is None or (c_shape in ((n,), (1, n)) and beta == 1
                                                    and dtype != "bfloat16"))
    assert rec.launch.kind.value == ("cube" if cube_only else "mix")


def test_k_of_zero_gives_zeros_and_beta_c_natively(dev):
    (got,), rec = run_arrays(dev, "MatMul", [np.ones((3, 0), np.float16),
                                             np.ones((0, 5), np.float16)])
    assert rec.path == "native" and np.array_equal(got, np.zeros((3, 5)))
    c = np.arange(15, dtype=np.float32).reshape(3, 5)
    (got,), rec = run_arrays(dev, "Gemm", [np.ones((3, 0), np.float32),
                                           np.ones((0, 5), np.float32), c], beta=0.5)
    assert rec.path == "native" and np.array_equal(got, 0.5 * c)


def test_batch_folds_into_m_when_b_is_one_matrix():
    """(B, M, K) @ (K, N) is one taller product: larger tiles, B read once per tile."""
    a, b = TensorDesc.nd((4, 100, 64), "float16"), TensorDesc.nd((64, 32), "float16")
    assert matmul_shape(a, b) == MatmulShape(400, 64, 32, "float16")
    shape = matmul_shape(TensorDesc.nd((3, 1, 6, 8), "float16"), TensorDesc.nd((2, 8, 5),
                                                                             "float16"))
    assert shape.batch == (3, 2) and shape.a_strides == (48, 0) and shape.b_strides == (0, 40)


# ---------------------------------------------------------------- float32: fp32 and HF32

def test_float32_runs_as_plain_fp32_or_as_hf32_when_asked(dev):
    """Plain fp32 (k0 = 4) keeps float32's products; HF32 (k0 = 8) rounds each input to 11
    mantissa bits first: larger errors, half the Cube cycles [HF32][HI-ATC]."""
    rng = np.random.default_rng(3)
    a = rng.uniform(-1, 1, (64, 1024)).astype(np.float32)
    b = rng.uniform(-1, 1, (1024, 64)).astype(np.float32)
    want = a.astype(np.float64) @ b.astype(np.float64)
    errors, mac = {}, {}
    for hf32 in (False, True):
        (got,), rec = run_arrays(dev, "MatMul", [a, b], config={"hf32": hf32})
        assert rec.path == "native"
        errors[hf32] = np.abs(got - want).max()
        mac[hf32] = launch_metrics(rec.launch).values["aic_mac_time(us)"]
    assert errors[False] < 1e-4                       # float32 accumulation over 1024 terms
    assert 10 * errors[False] < errors[True] < 1024 ** 0.5 * 2 ** -10   # 11-bit inputs
    assert mac[True] == pytest.approx(mac[False] / 2, rel=0.15)


def test_hf32_is_a_float32_mode_only(dev):
    a = dev.tensor(np.ones((4, 4), np.float16))
    with pytest.raises(ixl.nixl.tuning.ConfigDoesNotFit, match="hf32 is a float32 mode"):
        dev.run("MatMul", a, a, config={"hf32": True})
    a.free()


# ---------------------------------------------------------------- epilogues and fusion

def _chain(dev, ops, dtype, m=48, k=96, n=80):
    """MatMul followed by `ops` as a graph run with fusion; returns the result, the runs and
    the reference."""
    g = Graph(inputs=["x", "w", "bias", "res"], outputs=["out"])
    v = g.add("MatMul", "x", "w", outputs=("out",) if not ops else None)
    for i, op in enumerate(ops):
        args = {"Add": [v, "bias"], "Residual": [v, "res"], "Gelu": [v], "Relu": [v],
                "Muls": [v]}[op]
        v = g.add("Add" if op == "Residual" else op, *args,
                  outputs=("out",) if i == len(ops) - 1 else None,
                  **({"scalar": 0.5} if op == "Muls" else {}))
    rng = np.random.default_rng(0)
    feeds = {"x": rng.uniform(-1, 1, (2, m, k)), "w": rng.uniform(-1, 1, (k, n)),
             "bias": rng.uniform(-1, 1, (n,)), "res": rng.uniform(-1, 1, (2, m, n))}
    feeds = {name: v.astype(to_numpy(dtype)) for name, v in feeds.items()}
    out = dev.run_graph(g, feeds, fuse=True)["out"]
    got = out.numpy()
    out.free()
    ref = feeds["x"].astype(np.float64) @ feeds["w"].astype(np.float64)
    for op in ops:
        ref = {"Add": lambda r: r + feeds["bias"], "Residual": lambda r: r + feeds["res"],
               "Relu": lambda r: np.maximum(r, 0), "Muls": lambda r: 0.5 * r,
               "Gelu": lambda r: 0.5 * r * (1 + np.vectorize(math.erf)(r / math.sqrt(2)))
               }[op](ref)
    return got, dev.last_graph.runs, ref


@pytest.mark.parametrize("dtype", ["float16", "float32"])
@pytest.mark.parametrize("ops,kind", [(["Add"], "cube"), (["Add", "Relu"], "cube"),
                                      (["Relu"], "cube"), (["Add", "Gelu"], "mix"),
                                      (["Add", "Residual"], "mix"), (["Muls", "Add"], "mix")])
def test_a_matmul_and_its_epilogue_are_one_launch(dev, ops, kind, dtype):
    """Bias and ReLU stay on the Cube (BiasTable, Fixpipe): a cube kernel; anything else is
    the vector side of a mix kernel. Either way one launch."""
    got, runs, ref = _chain(dev, ops, dtype)
    assert [r.op for r in runs] == ["Fused[" + "+".join(["MatMul"] + [
        "Add" if op == "Residual" else op for op in ops]) + "]"]
    assert runs[0].path == "native" and runs[0].launch.kind.value == kind
    _close(got, ref, dtype, 96)


def test_a_bfloat16_bias_runs_on_the_vector_side(dev):
    """L1 -> BiasTable widens half and takes float, not bfloat16 [BT]: the Add moves to the
    AIVs."""
    got, runs, ref = _chain(dev, ["Add"], "bfloat16")
    assert runs[0].launch.kind.value == "mix"
    _close(got, ref, "bfloat16", 96)


def test_the_epilogue_names_what_runs_where():
    from ixl.kernels.elementwise_ops import BODIES
    from ixl.kernels.matmul_epilogue import consumers
    from ixl.kernels.program import Step
    steps = (Step("Add", BODIES["Add"], (2, 3)), Step("Relu", BODIES["Relu"], (4,)),
             Step("Add", BODIES["Add"], (5, 0)))
    descs = [TensorDesc.nd((8, 4), "float16"), TensorDesc.nd((4, 6), "float16"),
             TensorDesc.nd((6,), "float16")]
    epi = consumers(steps, 3, (0, 1), descs, 6)
    assert epi.bias == 2 and epi.relu and [s.op for s in epi.steps] == ["Add"]
    assert epi.steps[0].args == (0, 1) and epi.inputs == (0,)     # the tile, then input 0
    assert epi.names == "bias (BiasTable), ReLU (Fixpipe), Add"


# ---------------------------------------------------------------- the host tiling (R11)

def test_base_sizes_come_from_the_chips_buffers():
    """L0C sets the tile (the most multiply-adds per byte of A and B, columns whole 512-byte
    bursts), L0A/L0B base_k, L1 the K chunk (a whole number of bursts); a chip with half the
    L0C gets a smaller tile with no code change."""
    chip = get_chip("910B1")
    shape = MatmulShape(4096, 4096, 4096, "float16")
    blocks, t = plan(shape, chip, None, Epilogue(), "float16")
    assert (t.base_m, t.base_n, t.base_k, t.k_l1) == (128, 256, 64, 256) and blocks == 24
    assert t.base_m * t.base_n * 4 * t.l0c_buffers <= chip.l0c_bytes
    assert t.base_m * t.base_k * 2 * t.l0_buffers <= chip.l0a_bytes
    assert t.base_k * t.base_n * 2 * t.l0_buffers <= chip.l0b_bytes
    assert (t.base_m + t.base_n) * t.k_l1 * 2 * t.l1_buffers <= chip.l1_bytes
    assert t.k_l1 * 2 % chip.gm_alloc_align == 0
    small = dataclasses.replace(chip, l0c_bytes=64 * 1024)
    _, half = plan(shape, small, None, Epilogue(), "float16")
    assert half.base_m * half.base_n * 4 <= small.l0c_bytes < t.base_m * t.base_n * 4
    single = plan(shape, chip, TuningConfig(l0_buffers=1), Epilogue(), "float16")[1]
    assert single.base_k == 2 * t.base_k                 # L0 single buffered: twice the K


def test_a_small_product_spreads_over_the_cube_cores():
    _, t = plan(MatmulShape(128, 384, 384, "float32"), get_chip("910B1"), None, Epilogue(),
                "float32")
    assert t.tiles >= 24


def test_l2_rounds_keep_b_and_a_rounds_rows_in_l2():
    chip = get_chip("910B1")
    _, t = plan(MatmulShape(8192, 8192, 8192, "float16"), chip, None, Epilogue(), "float16")
    isz = 2
    rows = t.round_rows * t.base_m
    assert 8192 * 8192 * isz + rows * 8192 * 2 * isz <= chip.l2_bytes < \
        8192 * 8192 * isz + (rows + t.base_m) * 8192 * 2 * isz
    seen = {t.tile(i) for i in range(t.tiles)}
    assert len(seen) == t.tiles                           # every tile once
    first_round = {t.tile(i)[1] for i in range(t.round_rows * t.n_tiles)}
    assert first_round == {r * t.base_m for r in range(t.round_rows)}


def test_a_bias_row_limits_base_n_to_the_bias_table():
    chip = get_chip("910B1")
    _, t = plan(MatmulShape(4096, 4096, 4096, "float32"), chip, None, Epilogue(bias=2),
                "float32")
    assert t.base_n * 4 <= chip.bias_table_bytes


# ---------------------------------------------------------------- split-K: a decode step

def test_split_k_sums_a_decode_steps_parts_on_the_cube(dev):
    rng = np.random.default_rng(1)
    for m, k, n, dtype in ((1, 2048, 1024, "float16"), (7, 1536, 768, "float32")):
        a = rng.uniform(-1, 1, (m, k)).astype(to_numpy(dtype))
        b = rng.uniform(-1, 1, (k, n)).astype(to_numpy(dtype))
        c = rng.uniform(-1, 1, (n,)).astype(to_numpy(dtype))
        (got,), rec = run_arrays(dev, "Gemm", [a, b, c])
        assert rec.path == "native" and rec.tiling.k_splits > 1
        assert rec.launch.kind.value == "cube"
        _close(got, a.astype(np.float64) @ b.astype(np.float64) + c, dtype, k)


@pytest.mark.parametrize("m", [1, 16])
def test_a_decode_step_moves_its_weights_near_the_speed_of_light(m):
    """M = 1..16 rows against a 4096 x 4096 float16 weight: bound by moving the weights, at
    >= 85% of the model's speed of light for the bytes it moves."""
    dev = ixl.device("910B1", timing_only=True)
    a, b = dev.empty((m, 4096), "float16"), dev.empty((4096, 4096), "float16")
    y = dev.run("MatMul", a, b)
    rec = dev.last_profile
    sol = speed_of_light_us("910B1", (m * 4096 + 4096 * 4096) * 2, m * 4096 * 2)
    assert sol / rec.time_us >= 0.85, (rec.time_us, sol)
    assert launch_metrics(rec.launch).values["bound_pipe"] == "GM port"
    for t in (a, b, y):
        t.free()
    dev.close()


# ---------------------------------------------------------------- profiles and tuning

@pytest.mark.slow
@pytest.mark.parametrize("side", [4096, pytest.param(8192, marks=pytest.mark.long)])
def test_a_large_square_profiles_with_aic_metrics_and_a_diagnosis(capsys, side):
    """The large case of the issue (8192 cubed, with --long; 4096 cubed, an eighth of the
    simulation, otherwise), timing only: aic metrics, TFLOPS against the peak and a
    diagnosis; the bound pipe is what the model's per-cycle facts make it (README)."""
    import json

    from ixl.cli import main
    shape = f"{side},{side}"
    assert main(["run", "MatMul", "--shape", shape, "--shape", shape, "--dtype", "float16",
                 "--timing-only", "--profile", "--json"]) == 0
    m = json.loads(capsys.readouterr().out)["metrics"]
    assert m["kernel_type"] == "cube" and m["block_dim"] == 24
    assert m["cube_tflops"] == pytest.approx(m["cube_util"] * m["cube_peak_tflops"], rel=1e-2)
    assert m["diagnosis"].startswith(("Cube-bound", "move-bound"))


def test_ixl_tune_matmul_prints_the_ladder_and_stores_the_choice(tmp_path, monkeypatch, capsys):
    from ixl.cli import main
    from ixl.nixl import tuning_cache
    cache = tmp_path / "tuning.json"
    monkeypatch.setenv("IXL_TUNING_CACHE", str(cache))
    assert main(["tune", "MatMul", "--shape", "256,512", "--shape", "512,256", "--save"]) == 0
    out = capsys.readouterr().out
    for row in ("single buffer", "double buffer L0", "double buffer L1 and L0", "tuned"):
        assert row in out
    chosen = tuning_cache.lookup("910B1", "MatMul", [(256, 512), (512, 256)], "float16")
    assert chosen is not None and chosen.base_m and chosen.base_n and chosen.base_k
    dev = ixl.device("910B1", timing_only=True)
    a, b = dev.empty((256, 512), "float16"), dev.empty((512, 256), "float16")
    y = dev.run("MatMul", a, b)
    assert dev.last_profile.config == chosen.to_dict()          # the cache is used
    for t in (a, b, y):
        t.free()
    dev.close()


def test_a_classifier_head_splits_k_over_more_than_a_fractal_of_parts_and_says_so(dev):
    """1 x 1280 . 1280 x 4 (a classifier head) splits K over more than 16 parts; their sums
    read every 16-row block of the partials (the sanitizer saw the rest unwritten before), and
    the tiling's line names the path."""
    a = np.linspace(-1, 1, 1280, dtype=np.float32).reshape(1, 1280)
    b = np.cos(np.arange(1280 * 4, dtype=np.float32)).reshape(1280, 4)
    for dtype in (np.float16, ml_dtypes.bfloat16, np.float32):
        (y,), rec = run_arrays(dev, "MatMul", [a.astype(dtype), b.astype(dtype)])
        assert rec.path == "native"
        assert rec.tiling.k_splits > 16
        assert f"split-K: {rec.tiling.k_splits} parts" in rec.tiling.describe()
        want = a.astype(dtype).astype(np.float32) @ b.astype(dtype).astype(np.float32)
        np.testing.assert_allclose(y.astype(np.float32), want, rtol=2e-2, atol=2e-2)
