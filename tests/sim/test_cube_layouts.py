"""Layouts: the numpy helpers round-trip and match the API sheet's offsets; the Cube's moves
produce them byte for byte (ND2NZ into L1, the Fixpipe's NZ2ND and NZ outputs, the 3-D load's
img2col); the Fixpipe's conversions follow the documented algorithm."""

import ml_dtypes
import numpy as np
import pytest

from ixl.ascend import lang as asc
from ixl.ascend.cube.fixpipe import convert
from ixl.hixl import formats
from tests.sim.cube_kernels import Harness, load_tile, round_up

F16, F32 = np.dtype(np.float16), np.dtype(np.float32)
BF16 = np.dtype(ml_dtypes.bfloat16)


@pytest.mark.parametrize("dtype", [F16, F32, np.dtype(np.int8)])
@pytest.mark.parametrize("shape", [(1, 1), (16, 16), (17, 33), (3, 40, 70)])
def test_matrix_layouts_round_trip_and_match_the_documented_offsets(shape, dtype):
    x = (np.arange(int(np.prod(shape))) % 251).astype(dtype).reshape(shape)
    m, n = shape[-2:]
    c0 = formats.c0_of(dtype)
    mp, np_, kp = round_up(m, 16), round_up(n, 16), round_up(n, c0)
    nz, zz, zn = formats.nd_to_nz(x), formats.nd_to_zz(x), formats.nd_to_zn(x)
    assert nz.shape[-4:] == formats.nz_shape(shape, c0)[-4:]
    np.testing.assert_array_equal(formats.nz_to_nd(nz, (m, n)), x)
    np.testing.assert_array_equal(formats.zz_to_nd(zz, (m, n)), x)
    np.testing.assert_array_equal(formats.zn_to_nd(zn, (m, n)), x)
    r, c = np.meshgrid(np.arange(m), np.arange(n), indexing="ij")
    last = x.reshape(-1, m, n)[-1]
    nzf = nz.reshape(-1, nz.shape[-4] * mp * c0)[-1]
    np.testing.assert_array_equal(nzf[(c // c0) * mp * c0 + r * c0 + c % c0], last)
    zzf = zz.reshape(-1, mp * kp)[-1]
    np.testing.assert_array_equal(
        zzf[(r // 16) * 16 * kp + (c // c0) * 16 * c0 + (r % 16) * c0 + c % c0], last)
    # ZN of an (m x n) matrix: K = m rows in C0 blocks, N = n columns in 16s
    znf = zn.reshape(-1, round_up(m, c0) * np_)[-1]
    np.testing.assert_array_equal(
        znf[(r // c0) * np_ * c0 + (c // 16) * 16 * c0 + (c % 16) * c0 + r % c0], last)


def test_nc1hwc0_round_trips_and_matches_the_documented_offsets():
    x = np.random.default_rng(0).standard_normal((2, 19, 3, 5)).astype(F16)
    y = formats.nchw_to_nc1hwc0(x)
    assert y.shape == (2, 2, 3, 5, 16)
    np.testing.assert_array_equal(formats.nc1hwc0_to_nchw(y, 19), x)
    n, c, h, w = 1, 17, 2, 4
    assert y.reshape(-1)[(((n * 2 + c // 16) * 3 + h) * 5 + w) * 16 + c % 16] == x[n, c, h, w]
    assert (y[:, 1, :, :, 3:] == 0).all()            # channels past C are zeros


def test_nd2nz_into_l1_lays_out_nz():
    """ND -> L1 (NZ, its pad rows filled with zeros) -> GM as stored: the NZ bytes."""
    m, n = 37, 50
    x_host = np.random.default_rng(1).standard_normal((m, n)).astype(F16)
    mp, np_ = round_up(m, 16), round_up(n, 16)
    h = Harness()
    x = h.tensor(x_host, "x")
    stored = h.empty((np_ // 16, mp, 16), F16, "stored")

    def body(core):
        l1 = asc.local_tensor(asc.TPosition.A1, F16, 0, mp * np_)
        asc.fill(l1, asc.InitConstValueParams(1, mp * np_ * 2 // 32, 0, 0))   # the pad rows
        asc.set_flag(asc.HardEvent.MTE1_MTE2, 0)
        asc.wait_flag(asc.HardEvent.MTE1_MTE2, 0)
        asc.data_copy(l1, x, asc.Nd2NzParams(n_value=m, d_value=n, src_d_value=n,
                                             dst_nz_c0_stride=mp))
        asc.set_flag(asc.HardEvent.MTE2_MTE3, 0)
        asc.wait_flag(asc.HardEvent.MTE2_MTE3, 0)
        asc.data_copy(stored, l1, mp * np_)              # L1 -> GM on MTE3
    h.launch(body)
    np.testing.assert_array_equal(h.read(stored, (np_ // 16, mp, 16)),
                                  formats.nd_to_nz(x_host).reshape(np_ // 16, mp, 16))


def _mmad_out(config, params, out_dtype, out_shape, m=32, n=32, to_l1=False):
    """An identity product (A = I) puts B in L0C; then one Fixpipe with `params`."""
    b_host = (np.random.default_rng(2).standard_normal((m, n)) * 4).astype(F16)
    h = Harness()
    b = h.tensor(b_host, "b")
    eye = h.tensor(np.eye(m, dtype=F16), "eye")
    y = h.empty(out_shape, out_dtype, "y")

    def body(core):
        a2, b2 = load_tile(eye, b, m, m, n, F16)
        c = asc.local_tensor(asc.TPosition.CO1, F32, 0, m * n)
        asc.mmad(c, a2, b2, asc.MmadParams(m=m, n=n, k=m))
        asc.set_flag(asc.HardEvent.M_FIX, 0)
        asc.wait_flag(asc.HardEvent.M_FIX, 0)
        if to_l1:
            l1 = asc.local_tensor(asc.TPosition.C1, out_dtype, 384 * 1024, m * n)
            asc.fixpipe(l1, c, params, config)
            asc.set_flag(asc.HardEvent.FIX_MTE3, 0)
            asc.wait_flag(asc.HardEvent.FIX_MTE3, 0)
            asc.data_copy(y, l1, m * n)
        else:
            asc.fixpipe(y, c, params, config)
    h.launch(body)
    return h.read(y, out_shape), b_host.astype(F32)


def test_fixpipe_nz_output_into_gm_and_into_l1():
    p = asc.FixpipeParamsV220(n_size=32, m_size=32, src_stride=32, dst_stride=32,
                              quant_pre=asc.QuantMode.F322F16)
    got, b = _mmad_out(asc.CFG_NZ, p, F16, (2, 32, 16))
    np.testing.assert_array_equal(got, formats.nd_to_nz(b.astype(F16)).reshape(2, 32, 16))
    got, b = _mmad_out(asc.CFG_ROW_MAJOR, p, F16, (2, 32, 16), to_l1=True)   # L1 is NZ only
    np.testing.assert_array_equal(got, formats.nd_to_nz(b.astype(F16)).reshape(2, 32, 16))


def test_fixpipe_channel_split_writes_float32_as_16_x_8_fractals():
    p = asc.FixpipeParamsV220(n_size=32, m_size=32, src_stride=32, dst_stride=32,
                              is_channel_split=True)
    got, b = _mmad_out(asc.CFG_NZ, p, F32, (4, 32, 8))
    np.testing.assert_array_equal(got, formats.nd_to_nz(b).reshape(4, 32, 8))


def test_fixpipe_nz2nd_with_several_matrices():
    p = asc.FixpipeParamsV220(n_size=16, m_size=16, src_stride=32, dst_stride=16, nd_num=2,
                              src_nd_stride=1, dst_nd_stride=256)
    got, b = _mmad_out(asc.CFG_ROW_MAJOR, p, F32, (2, 16, 16))
    # matrix i starts 1 KB (one 16 x 16 float32 fractal) further into L0C: rows 16i.. of
    # column block 0
    np.testing.assert_array_equal(got[0], b[:16, :16])
    np.testing.assert_array_equal(got[1], b[16:32, :16])


@pytest.mark.parametrize("mode,dtype", [(asc.QuantMode.DEQF16, F16),
                                        (asc.QuantMode.QF322B8_PRE, np.dtype(np.int8)),
                                        (asc.QuantMode.QF322B8_PRE, np.dtype(np.uint8))])
def test_fixpipe_quantisation_follows_the_documented_algorithm(mode, dtype):
    signed = dtype != np.dtype(np.uint8)
    word = asc.quant_word(0.37, offset=-5 if signed else 7, int8=signed)
    if mode is asc.QuantMode.DEQF16:        # int32 in: exercise it through convert directly
        v = np.array([-70000, -3, 0, 5, 123456], np.int32)
        got = convert(v, mode, np.array([word], np.uint64), True, F16)
        scale = np.float32(0.37).view(np.uint32) & np.uint32(0xFFFFE000)
        s = np.array(scale).view(np.float32)
        np.testing.assert_array_equal(got, np.clip(np.maximum(v, 0) * s, -65504, 65504)
                                      .astype(F16))
        return
    p = asc.FixpipeParamsV220(n_size=32, m_size=32, src_stride=32, dst_stride=32,
                              quant_pre=mode, deq_scalar=word)
    got, b = _mmad_out(asc.CFG_ROW_MAJOR, p, dtype, (32, 32))
    s = np.array(np.float32(0.37).view(np.uint32) & np.uint32(0xFFFFE000)).view(np.float32)
    q = np.clip(np.rint(b * s), -256, 255) + (-5 if signed else 7)
    lo, hi = (-128, 127) if signed else (0, 255)
    np.testing.assert_array_equal(got, np.clip(q, lo, hi).astype(dtype))


def test_fixpipe_per_channel_words_come_from_the_fixpipe_buffer():
    m = n = 32
    scales = np.linspace(0.1, 2.0, n).astype(np.float32)
    words = np.array([asc.quant_word(s) for s in scales], np.uint64)
    h = Harness()
    w = h.tensor(words, "words")
    b_host = (np.random.default_rng(3).standard_normal((m, n)) * 4).astype(F16)
    b = h.tensor(b_host, "b")
    eye = h.tensor(np.eye(m, dtype=F16), "eye")
    y = h.empty((m, n), np.int8, "y")

    def body(core):
        l1w = asc.local_tensor(asc.TPosition.C1, np.uint64, 384 * 1024, n)
        asc.data_copy(l1w, w, n)
        asc.set_flag(asc.HardEvent.MTE2_FIX, 0)
        asc.wait_flag(asc.HardEvent.MTE2_FIX, 0)
        fb = asc.local_tensor(asc.TPosition.C2PIPE2GM, np.uint64, 0, n)
        asc.data_copy(fb, l1w, asc.DataCopyParams(1, n * 8 // 128, 0, 0))
        asc.set_fix_pipe_config(fb)
        a2, b2 = load_tile(eye, b, m, m, n, F16)
        c = asc.local_tensor(asc.TPosition.CO1, F32, 0, m * n)
        asc.mmad(c, a2, b2, asc.MmadParams(m=m, n=n, k=m))
        asc.set_flag(asc.HardEvent.M_FIX, 0)
        asc.wait_flag(asc.HardEvent.M_FIX, 0)
        asc.fixpipe(y, c, asc.FixpipeParamsV220(n_size=n, m_size=m, src_stride=m, dst_stride=n,
                                                quant_pre=asc.QuantMode.VQF322B8_PRE))
    h.launch(body)
    s = (scales.view(np.uint32) & np.uint32(0xFFFFE000)).view(np.float32)
    want = np.clip(np.clip(np.rint(b_host.astype(F32) * s), -256, 255), -128, 127)
    np.testing.assert_array_equal(h.read(y, (m, n)), want.astype(np.int8))


def test_img2col_3d_load_then_mmad_is_a_convolution():
    """Conv 3x3, stride 1, pad 1 on an NC1HWC0 map: the 3-D load builds the img2col rows in
    L0A (ZZ), the weights come as ZN (FRACTAL_Z order: c1, kh, kw, c0), one Mmad."""
    n_, c, hh, ww, cout, kh = 1, 32, 6, 5, 16, 3
    rng = np.random.default_rng(4)
    x = rng.standard_normal((n_, c, hh, ww)).astype(F16)
    wt = rng.standard_normal((cout, c, kh, kh)).astype(F16)
    c1, c0 = c // 16, 16
    k = c1 * kh * kh * c0
    m = hh * ww
    w_mat = wt.reshape(cout, c1, c0, kh, kh).transpose(1, 3, 4, 2, 0).reshape(k, cout)
    h = Harness()
    fmap = h.tensor(formats.nchw_to_nc1hwc0(x), "x")
    weights = h.tensor(formats.nd_to_zn(w_mat), "w")
    y = h.empty((m, cout), F32, "y")
    mp = round_up(m, 16)

    def body(core):
        l1 = asc.local_tensor(asc.TPosition.A1, F16, 0, c1 * hh * ww * c0)
        asc.data_copy(l1, fmap, c1 * hh * ww * c0)
        wl1 = asc.local_tensor(asc.TPosition.B1, F16, 128 * 1024, k * cout)
        asc.data_copy(wl1, weights, k * cout)
        asc.set_flag(asc.HardEvent.MTE2_MTE1, 0)
        asc.wait_flag(asc.HardEvent.MTE2_MTE1, 0)
        a2 = asc.local_tensor(asc.TPosition.A2, F16, 0, mp * k)
        asc.load_data(a2, l1, asc.LoadData3DParamsV2(
            pad_list=(1, 1, 1, 1), l1_h=hh, l1_w=ww, channel_size=c, k_extension=k,
            m_extension=mp, filter_w=kh, filter_h=kh, pad_value=0))
        b2 = asc.local_tensor(asc.TPosition.B2, F16, 0, k * cout)
        asc.load_data(b2, wl1, asc.LoadData2DParams(repeat_times=k * cout // 256))
        asc.set_flag(asc.HardEvent.MTE1_M, 0)
        asc.wait_flag(asc.HardEvent.MTE1_M, 0)
        out = asc.local_tensor(asc.TPosition.CO1, F32, 0, mp * cout)
        asc.mmad(out, a2, b2, asc.MmadParams(m=m, n=cout, k=k))
        asc.set_flag(asc.HardEvent.M_FIX, 0)
        asc.wait_flag(asc.HardEvent.M_FIX, 0)
        asc.fixpipe(y, out, asc.FixpipeParamsV220(n_size=cout, m_size=m, src_stride=mp,
                                                  dst_stride=cout))
    h.launch(body)
    xp = np.pad(x[0].astype(np.float64), ((0, 0), (1, 1), (1, 1)))
    want = np.zeros((hh, ww, cout))
    for i in range(hh):
        for j in range(ww):
            want[i, j] = np.einsum("cab,ocab->o", xp[:, i:i + 3, j:j + 3], wt.astype(np.float64))
    np.testing.assert_allclose(h.read(y, (m, cout)), want.reshape(m, cout), rtol=1e-4,
                               atol=1e-3)


@pytest.mark.parametrize("dtype", [F16, F32])
def test_a_one_by_one_img2col_window_lays_out_l0a_as_the_general_gather(dtype, monkeypatch):
    """The 3-D load of a 1 x 1 window (how the MatMul loads A) copies views of the map, not
    a gather: L0A comes out bit for bit as the general img2col path lays it, for windows
    from anywhere in the map, rows past its positions taking the pad value (a seeded sweep
    of windows)."""
    from ixl.ascend.cube import load

    c0 = 32 // np.dtype(dtype).itemsize
    rng = np.random.default_rng(11)
    cases = []
    for _ in range(12):
        hh, ww, c1 = int(rng.integers(1, 4)), int(rng.integers(1, 40)), int(rng.integers(1, 4))
        rows = round_up(hh * ww, 16)        # the window may run into the last fractal's rows
        m0 = int(rng.integers(0, rows))
        k0 = int(rng.integers(0, c1)) * c0
        cases.append((hh, ww, c1, m0, int(rng.integers(1, rows - m0 + 1)), k0,
                      int(rng.integers(1, c1 * c0 - k0 + 1))))

    def l0a(hh, ww, c1, m0, mext, k0, kext):
        fmap = rng.standard_normal(c1 * hh * ww * c0).astype(dtype)
        h = Harness()
        x = h.tensor(fmap, "x")
        mp, kp = round_up(mext, 16), round_up(kext, c0)
        got = {}

        def body(core):
            l1 = asc.local_tensor(asc.TPosition.A1, dtype, 0, fmap.size)
            asc.data_copy(l1, x, fmap.size)
            asc.set_flag(asc.HardEvent.MTE2_MTE1, 0)
            asc.wait_flag(asc.HardEvent.MTE2_MTE1, 0)
            a2 = asc.local_tensor(asc.TPosition.A2, dtype, 0, mp * kp)
            asc.load_data(a2, l1, asc.LoadData3DParamsV2(
                l1_h=hh, l1_w=ww, channel_size=c1 * c0, k_extension=kext, m_extension=mext,
                m_start_pt=m0, k_start_pt=k0, pad_value=3))
            got["a"] = a2.numpy()
        h.launch(body, debug=False)
        return got["a"]

    for case in cases:
        state = rng.bit_generator.state
        fast = l0a(*case)
        rng.bit_generator.state = state
        with monkeypatch.context() as m:
            m.setattr(load._Img2Col, "is_matrix", property(lambda self: False))
            general = l0a(*case)
        assert fast.tobytes() == general.tobytes(), case


@pytest.mark.parametrize("itemsize", [1, 2, 4])
def test_a_transposing_load_lands_each_square_where_its_lane_maps_say(itemsize):
    """The transposing 2-D load moves a square as one strided copy (load._LANDINGS); the
    observers and the sanitizer read the same move from the lane maps (load._square): both
    put every source element at the same destination, with gaps between repeats and
    fractals left alone."""
    from ixl.ascend.cube import load

    src_map, dst_map = load._square(itemsize)
    dtype = {1: np.int8, 2: np.float16, 4: np.float32}[itemsize]
    per, frac = len(src_map) * itemsize // 512, 512 // itemsize
    squares = np.random.default_rng(itemsize).integers(-99, 99, (3, len(src_map))).astype(dtype)
    room = np.zeros((3, per + 1, frac + 5), dtype)
    load._land(room[:, :per, 2:2 + frac], squares, itemsize)
    want = np.zeros_like(room)
    laid = np.zeros((3, per * frac), dtype)
    laid[:, dst_map] = squares[:, src_map]
    want[:, :per, 2:2 + frac] = laid.reshape(3, per, frac)
    assert room.tobytes() == want.tobytes()
