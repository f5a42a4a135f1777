"""The Cube's numbers: hand-written cube kernels against numpy (float32 accumulation), layouts
that round-trip, and a wrong layout that computes wrong numbers, as on the chip."""

import numpy as np
import pytest

from ixl.ascend import lang as asc
from ixl.ascend.cube.mmad import to_hf32
from tests.sim.cube_kernels import BF16, GemmTiling, Harness, gemm, load_tile, round_up

F16, F32 = np.dtype(np.float16), np.dtype(np.float32)


def _inputs(m, k, n, dtype, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((m, k)).astype(dtype), rng.standard_normal((k, n)).astype(dtype))


@pytest.mark.parametrize("dtype", [F16, BF16, F32], ids=["float16", "bfloat16", "float32"])
@pytest.mark.parametrize("m,k,n", [(16, 16, 16), (17, 40, 33), (64, 128, 32),
                                   (128, 96, 160), (256, 512, 384), (256, 384, 512)])
def test_gemm_agrees_with_numpy_in_float32(m, k, n, dtype):
    a_host, b_host = _inputs(m, k, n, dtype)
    h = Harness()
    a, b = h.tensor(a_host, "a"), h.tensor(b_host, "b")
    c = h.empty((m, n), F32, "c")
    h.launch(gemm(a, b, c, GemmTiling(m, k, n), dtype, F32), block_num=4)
    want = a_host.astype(np.float64) @ b_host.astype(np.float64)
    # products of halves are exact in float32; the sums round in float32
    np.testing.assert_allclose(h.read(c, (m, n)), want, rtol=1e-5, atol=1e-5 * np.sqrt(k))


@pytest.mark.parametrize("out", [F16, BF16])
def test_gemm_rounds_float32_to_half_on_the_way_out(out):
    a_host, b_host = _inputs(48, 64, 80, F16, seed=1)
    h = Harness()
    a, b = h.tensor(a_host, "a"), h.tensor(b_host, "b")
    c = h.empty((48, 80), out, "c")
    h.launch(gemm(a, b, c, GemmTiling(48, 64, 80, 32, 48, 32), F16, out))
    got = h.read(c, (48, 80))
    assert got.dtype == out
    want = a_host.astype(np.float32) @ b_host.astype(np.float32)
    ulp = 2.0 ** -(10 if out == F16 else 7)       # one rounding of the float32 sum
    np.testing.assert_allclose(got.astype(np.float32), want, rtol=ulp, atol=1e-3)


# ---------------------------------------------------------------- one tile, knobs for layouts

def _one_tile(a, b, c, m, k, n, dtype, a_zz=True, b_zn=True, mmad_kw=None, fix_kw=None,
              bias=None):
    """A and B whole into L1 (NZ), into L0A / L0B (ZZ / ZN unless told otherwise), one Mmad
    (from the bias, when given: GM -> L1 -> BiasTable), one Fixpipe NZ2ND into float32 C."""
    mp, np_ = round_up(m, 16), round_up(n, 16)

    def body(core):
        bt = None
        if bias is not None:
            l1 = asc.local_tensor(asc.TPosition.C1, bias.dtype, 384 * 1024, bias.count)
            asc.data_copy(l1, bias, bias.count)
            asc.set_flag(asc.HardEvent.MTE2_MTE1, 1)
            asc.wait_flag(asc.HardEvent.MTE2_MTE1, 1)
            bt = asc.local_tensor(asc.TPosition.C2, np.float32, 0, bias.count)
            asc.data_copy(bt, l1, asc.DataCopyParams(1, bias.count * 4 // 64, 0, 0))
        a2, b2 = load_tile(a, b, m, k, n, dtype, a_zz=a_zz, b_zn=b_zn)
        l0c = asc.local_tensor(asc.TPosition.CO1, np.float32, 0, mp * np_)
        params = asc.MmadParams(m=m, n=n, k=k, **(mmad_kw or {}))
        if bt is None:
            asc.mmad(l0c, a2, b2, params)
        else:
            asc.mmad(l0c, a2, b2, bt, params)
        asc.set_flag(asc.HardEvent.M_FIX, 0)
        asc.wait_flag(asc.HardEvent.M_FIX, 0)
        asc.fixpipe(c, l0c, asc.FixpipeParamsV220(n_size=n, m_size=m, src_stride=mp,
                                                  dst_stride=n, **(fix_kw or {})))
    return body


def _run_tile(m, k, n, dtype=F16, bias=None, **kw):
    a_host, b_host = _inputs(m, k, n, dtype, seed=2)
    h = Harness()
    a, b = h.tensor(a_host, "a"), h.tensor(b_host, "b")
    c = h.empty((m, n), F32, "c")
    h.launch(_one_tile(a, b, c, m, k, n, dtype, bias=None if bias is None
                       else h.tensor(bias, "bias"), **kw))
    return h.read(c, (m, n)), a_host.astype(np.float32) @ b_host.astype(np.float32)


def test_the_right_layouts_compute_the_product():
    got, want = _run_tile(48, 64, 32)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-4)


def test_a_left_matrix_left_in_nz_order_gives_wrong_numbers():
    got, want = _run_tile(48, 64, 32, a_zz=False)
    assert not np.allclose(got, want, atol=1e-2)
    # ... while the first fractal row (16 x 16 of a one-column-block K) is still right
    got, want = _run_tile(48, 16, 32, a_zz=False)
    np.testing.assert_allclose(got[:16], want[:16], rtol=1e-5, atol=1e-4)


def test_a_right_matrix_not_transposed_into_zn_gives_wrong_numbers():
    got, want = _run_tile(32, 32, 32, b_zn=False)
    assert not np.allclose(got, want, atol=1e-2)


def test_gemv_m_1_reads_a_as_a_vector():
    k, n = 40, 48
    rng = np.random.default_rng(3)
    x_host = rng.standard_normal((1, k)).astype(F16)
    w_host = rng.standard_normal((k, n)).astype(F16)
    h = Harness()
    x = h.tensor(np.pad(x_host[0], (0, 256 - k)), "x")     # one whole fractal in GM
    w = h.tensor(w_host, "w")
    y = h.empty((1, n), F32, "y")
    kp, np_ = round_up(k, 16), round_up(n, 16)

    def body(core):
        a2 = asc.local_tensor(asc.TPosition.A2, F16, 0, kp)
        b1 = asc.local_tensor(asc.TPosition.B1, F16, 0, kp * np_)
        b2 = asc.local_tensor(asc.TPosition.B2, F16, 0, kp * np_)
        asc.load_data(a2, x, asc.LoadData2DParams(repeat_times=1))    # GM -> L0A, 1 fractal
        asc.data_copy(b1, w, asc.Nd2NzParams(n_value=k, d_value=n, src_d_value=n,
                                             dst_nz_c0_stride=kp))
        asc.set_flag(asc.HardEvent.MTE2_MTE1, 0)
        asc.wait_flag(asc.HardEvent.MTE2_MTE1, 0)
        for ki in range(kp // 16):
            asc.load_data(b2[ki * np_ * 16], b1, asc.LoadData2DParams(
                start_index=ki, repeat_times=np_ // 16, src_stride=kp // 16, if_transpose=True))
        asc.set_flag(asc.HardEvent.MTE1_M, 0)
        asc.wait_flag(asc.HardEvent.MTE1_M, 0)
        asc.set_flag(asc.HardEvent.MTE2_M, 0)
        asc.wait_flag(asc.HardEvent.MTE2_M, 0)
        c = asc.local_tensor(asc.TPosition.CO1, np.float32, 0, 16 * np_)
        asc.mmad(c, a2, b2, asc.MmadParams(m=1, n=n, k=k))
        asc.set_flag(asc.HardEvent.M_FIX, 0)
        asc.wait_flag(asc.HardEvent.M_FIX, 0)
        asc.fixpipe(y, c, asc.FixpipeParamsV220(n_size=n, m_size=1, src_stride=16,
                                                dst_stride=n))
    h.launch(body)
    np.testing.assert_allclose(h.read(y, (1, n)), x_host.astype(np.float32)
                               @ w_host.astype(np.float32), rtol=1e-5, atol=1e-4)


def test_int8_accumulates_in_int32_and_requantises():
    m, k, n = 32, 64, 32
    rng = np.random.default_rng(4)
    a_host = rng.integers(-128, 128, (m, k), dtype=np.int8)
    b_host = rng.integers(-128, 128, (k, n), dtype=np.int8)
    want = a_host.astype(np.int32) @ b_host.astype(np.int32)
    h = Harness()
    a, b = h.tensor(a_host, "a"), h.tensor(b_host, "b")
    y32 = h.empty((m, n), np.int32, "y32")
    y8 = h.empty((m, n), np.int8, "y8")
    word = asc.quant_word(1 / 512, offset=3)
    kp, np_ = round_up(k, 32), round_up(n, 16)

    def body(core):
        a1 = asc.local_tensor(asc.TPosition.A1, np.int8, 0, m * kp)
        b1 = asc.local_tensor(asc.TPosition.B1, np.int8, 32768, kp * np_)
        asc.data_copy(a1, a, asc.Nd2NzParams(n_value=m, d_value=k, src_d_value=k,
                                             dst_nz_c0_stride=m))
        # B transposed into L1 as 16-row groups of K: NZ(B) with C0 = 32 columns, then
        # LoadDataWithTranspose squares of 32 x 32 (two 16 x 32 fractals)
        asc.data_copy(b1, b, asc.Nd2NzParams(n_value=k, d_value=n, src_d_value=n,
                                             dst_nz_c0_stride=kp))
        asc.set_flag(asc.HardEvent.MTE2_MTE1, 0)
        asc.wait_flag(asc.HardEvent.MTE2_MTE1, 0)
        a2 = asc.local_tensor(asc.TPosition.A2, np.int8, 0, m * kp)
        b2 = asc.local_tensor(asc.TPosition.B2, np.int8, 0, kp * np_)
        for mi in range(m // 16):
            asc.load_data(a2[mi * 16 * kp], a1, asc.LoadData2DParams(
                start_index=mi, repeat_times=kp // 32, src_stride=m // 16))
        # ZN(B) for int8: fractal (k1, n1) is 32 (K) x 16 (N), column-major inside
        for k1 in range(kp // 32):
            asc.load_data_with_transpose(b2[k1 * np_ * 32], b1, asc.LoadData2dTransposeParams(
                start_index=k1, repeat_times=np_ // 32, src_stride=kp // 32, dst_gap=1,
                dst_frac_gap=0))
        asc.set_flag(asc.HardEvent.MTE1_M, 0)
        asc.wait_flag(asc.HardEvent.MTE1_M, 0)
        c = asc.local_tensor(asc.TPosition.CO1, np.int32, 0, m * np_)
        asc.mmad(c, a2, b2, asc.MmadParams(m=m, n=n, k=k))
        asc.set_flag(asc.HardEvent.M_FIX, 0)
        asc.wait_flag(asc.HardEvent.M_FIX, 0)
        asc.fixpipe(y32, c, asc.FixpipeParamsV220(n_size=n, m_size=m, src_stride=m,
                                                  dst_stride=n))
        asc.fixpipe(y8, c, asc.FixpipeParamsV220(n_size=n, m_size=m, src_stride=m,
                                                 dst_stride=n, quant_pre=asc.QuantMode.REQ8,
                                                 deq_scalar=word))
    h.launch(body)
    np.testing.assert_array_equal(h.read(y32, (m, n)), want)
    requant = np.clip(np.clip(np.rint(want.astype(np.float32) / 512), -256, 255) + 3, -128, 127)
    np.testing.assert_array_equal(h.read(y8, (m, n)), requant.astype(np.int8))


def test_hf32_rounds_mantissas_to_11_bits_and_runs_twice_as_fast():
    m = k = n = 32
    a_host, b_host = _inputs(m, k, n, F32, seed=5)
    results, cycles = {}, {}
    for hf32 in (False, True):
        h = Harness()
        a, b = h.tensor(a_host, "a"), h.tensor(b_host, "b")
        c = h.empty((m, n), F32, "c")
        body = gemm(a, b, c, GemmTiling(m, k, n), F32, F32)

        def run(core, body=body, hf32=hf32):
            asc.set_hf32_mode(hf32)
            body(core)
        rec = h.launch(run)
        results[hf32] = h.read(c, (m, n))
        cycles[hf32] = rec.cores[0].pipes[asc.Pipe.M].busy
    exact = a_host.astype(np.float64) @ b_host.astype(np.float64)
    np.testing.assert_allclose(results[False], exact, rtol=1e-5, atol=1e-5)
    hf = to_hf32(a_host).astype(np.float64) @ to_hf32(b_host).astype(np.float64)
    np.testing.assert_allclose(results[True], hf, rtol=1e-5, atol=1e-5)
    assert np.abs(results[True] - exact).max() > 1e-4      # the 11-bit rounding shows
    # 2 x 2 x (32 / 8) against 2 x 2 x (32 / 4) Cube cycles, plus the head each
    assert cycles[False] - cycles[True] == pytest.approx(2 * 2 * (8 - 4))


def test_hf32_rounding_is_to_nearest_even_or_away_from_zero():
    one = np.float32(1.0)
    ulp11 = np.float32(2.0 ** -11)
    half = np.float32(2.0 ** -12)           # exactly half an 11-bit ulp above 1
    x = np.array([one + half, one + ulp11 + half, -(one + half)], np.float32)
    np.testing.assert_array_equal(to_hf32(x, True), [one, one + 2 * ulp11, -one])
    np.testing.assert_array_equal(to_hf32(x, False), [one + ulp11, one + 2 * ulp11,
                                                      -(one + ulp11)])


def test_bias_from_the_bias_table_is_broadcast_over_m_then_relu():
    m, k, n = 32, 32, 48
    bias_host = np.random.default_rng(7).standard_normal(n).astype(F16)
    got, want = _run_tile(m, k, n, bias=bias_host, fix_kw={"relu_en": True})
    np.testing.assert_allclose(got, np.maximum(want + bias_host.astype(np.float32), 0),
                               rtol=1e-5, atol=1e-4)
