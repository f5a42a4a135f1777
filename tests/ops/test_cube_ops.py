"""What the profile and the trace show of a kernel on the Cube (MatMul), and TransData
(formats in TensorDesc) natively against its golden. The matrix kernels' own tests are in
test_matmul.py and test_conv.py."""

import json

import numpy as np
import pytest

import ixl
from ixl.cli import main
from ixl.hixl import formats
from ixl.nixl import Format


@pytest.fixture
def dev():
    d = ixl.device("910B1", debug=True)
    yield d
    assert d.close() == []


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("m,k,n", [(1, 7, 3), (1, 64, 40), (1, 576, 192), (16, 16, 16),
                                   (33, 70, 129), (300, 200, 500), (128, 1200, 64)])
def test_matmul_runs_natively_on_the_cube(dev, m, k, n, dtype):
    """One-row products included: their Mmad must not run as a GEMV over ZZ fractals."""
    rng = np.random.default_rng(0)
    a_host, b_host = (rng.uniform(-1, 1, s).astype(ixl.hixl.to_numpy(dtype))
                      for s in ((m, k), (k, n)))
    a, b = dev.tensor(a_host), dev.tensor(b_host)
    y = dev.run("MatMul", a, b)
    rec = dev.last_profile
    assert rec.path == "native" and rec.launch.kind.value == "cube"
    want = a_host.astype(np.float32) @ b_host.astype(np.float32)
    ulp = 2.0 ** -(10 if dtype == "float16" else 7)
    np.testing.assert_allclose(y.numpy().astype(np.float32), want, rtol=2 * ulp,
                               atol=2 * ulp * np.sqrt(k))
    for t in (a, b, y):
        t.free()


def test_ixl_run_profiles_a_cube_kernel_with_aic_metrics(capsys, tmp_path):
    trace = tmp_path / "t.json"
    assert main(["run", "MatMul", "--shape", "256,384", "--shape", "384,512", "--dtype",
                 "float16", "--profile", "--json", "--trace", str(trace)]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["status"] == "pass" and out["path"] == "native"
    m = out["metrics"]
    for key in ("aic_time(us)", "aic_mac_ratio", "aic_mte1_ratio", "aic_mte2_ratio",
                "aic_fixpipe_ratio", "aic_scalar_ratio", "aic_mac_time(us)", "cube_tflops",
                "cube_peak_tflops", "cube_util"):
        assert key in m, key
    assert m["kernel_type"] == "cube" and "aiv_vec_ratio" not in m
    assert 0 < m["aic_mac_ratio"] < 1 and m["cube_peak_tflops"] == pytest.approx(363.7, abs=0.1)
    assert m["cube_tflops"] == pytest.approx(2 * 256 * 384 * 512 / out["modeled_us"] / 1e6,
                                             rel=1e-2)
    lanes = {e["args"]["name"] for e in json.loads(trace.read_text())["traceEvents"]
             if e.get("name") == "thread_name"}
    assert {"CUBE", "MTE1", "FIXPIPE", "MTE2", "SCALAR"} <= lanes
    processes = {e["args"]["name"] for e in json.loads(trace.read_text())["traceEvents"]
                 if e.get("name") == "process_name"}
    assert any("(AIC)" in p for p in processes)


def test_a_large_matmul_profiles_in_timing_only_mode_with_its_diagnosis(capsys):
    assert main(["run", "MatMul", "--shape", "2048,2048", "--shape", "2048,2048", "--dtype",
                 "float16", "--timing-only", "--profile", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    m = out["metrics"]
    assert m["block_dim"] == 24 and m["cores"] == 24
    assert m["diagnosis"].startswith(("move-bound", "Cube-bound", "L1/L0 feed-bound"))


# ---------------------------------------------------------------- TransData and formats

@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "int8"])
def test_transdata_stores_nz_and_back_natively(dev, dtype):
    x_host = (np.arange(3 * 37 * 50) % 97).astype(ixl.hixl.to_numpy(dtype)).reshape(3, 37, 50)
    x = dev.tensor(x_host)
    nz = dev.run("TransData", x, dst_format="FRACTAL_NZ")
    assert dev.last_profile.path == "native"
    c0 = 32 // x_host.itemsize
    assert nz.desc.format is Format.FRACTAL_NZ and nz.shape == (3, 37, 50)
    assert nz.desc.storage_shape == (3, -(-50 // c0), 3, 16, c0)      # (N1, M1, 16, C0)
    np.testing.assert_array_equal(nz.storage(), formats.nd_to_nz(x_host))
    np.testing.assert_array_equal(nz.numpy(), x_host)           # the logical tensor
    back = dev.run("TransData", nz, dst_format="ND")
    assert dev.last_profile.path == "native" and back.desc.format is Format.ND
    np.testing.assert_array_equal(back.numpy(), x_host)
    for t in (x, nz, back):
        t.free()


def test_transdata_stores_nc1hwc0_and_back(dev):
    x_host = np.random.default_rng(1).standard_normal((2, 35, 7, 9)).astype(np.float16)
    x = dev.tensor(x_host)
    y = dev.run("TransData", x, dst_format="NC1HWC0")
    assert dev.last_profile.path == "native" and y.desc.storage_shape == (2, 3, 7, 9, 16)
    np.testing.assert_array_equal(y.storage(), formats.nchw_to_nc1hwc0(x_host))
    z = dev.run("TransData", y, dst_format="ND")
    assert dev.last_profile.path == "native"
    np.testing.assert_array_equal(z.numpy(), x_host)
    for t in (x, y, z):
        t.free()


def test_a_format_the_kernel_does_not_take_still_stores_in_that_format_on_the_shim(dev):
    x_host = np.random.default_rng(2).standard_normal((1, 20, 3, 3)).astype(np.float32)
    x = dev.tensor(x_host)
    y = dev.run("TransData", x, dst_format="NC1HWC0")
    assert dev.last_profile.path == "shim" and "16-bit" in dev.last_profile.reason
    assert y.desc.format is Format.NC1HWC0
    np.testing.assert_array_equal(y.storage(), formats.nchw_to_nc1hwc0(x_host))
    # and an op given a tensor stored NZ reads its logical values (through the shim)
    ones = dev.tensor(np.ones((20, 20), np.float16))
    nz = dev.run("TransData", ones, dst_format="FRACTAL_NZ")
    s = dev.run("Add", nz, nz)
    assert dev.last_profile.path == "shim"
    np.testing.assert_array_equal(s.numpy(), np.full((20, 20), 2, np.float16))
    for t in (x, y, ones, nz, s):
        t.free()
