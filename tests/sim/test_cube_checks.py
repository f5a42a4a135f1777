"""The Cube core's own checks (always on) and debug mode's checks on its pipes: each
violation gives the chip's error, worded like the UB's."""

import re

import numpy as np
import pytest

from ixl.ascend import lang as asc
from ixl.ascend.errors import (
    AccumulationWithoutInit,
    AicoreOutOfBound,
    BufferOverflow,
    HazardError,
    IllegalInstruction,
    KernelTimeout,
    ResourceLimit,
    UninitialisedRead,
)
from tests.sim.cube_kernels import Harness, load_tile

F16, F32 = np.dtype(np.float16), np.dtype(np.float32)
P = asc.TPosition


def _cube(body, debug=True, harness=None):
    return (harness or Harness()).launch(body, debug=debug)


def _raises(exc, message, body, **kw):
    with pytest.raises(exc, match=re.escape(message)):
        _cube(body, **kw)


# ---------------------------------------------------------------- capacity and alignment

@pytest.mark.parametrize("position,space,capacity", [
    (P.A1, "L1", 512 * 1024), (P.A2, "L0A", 64 * 1024), (P.B2, "L0B", 64 * 1024),
    (P.CO1, "L0C", 128 * 1024), (P.C2, "BT", 1024), (P.C2PIPE2GM, "FB", 7 * 1024)])
def test_buffers_beyond_a_cube_memory_overflow_it(position, space, capacity):
    def body(core):
        pipe = asc.TPipe()
        q = asc.TQue(position)
        pipe.init_buffer(q, 1, capacity + 1)
    # rounded up to the memory's buffer alignment, it asks for more than the memory holds
    with pytest.raises(BufferOverflow, match=rf"^{space} overflow: requires \d+ bytes, "
                                             rf"{capacity} available"):
        _cube(body)


def test_two_queues_that_fit_alone_overflow_l1_together():
    def body(core):
        pipe = asc.TPipe()
        pipe.init_buffer(asc.TQue(P.A1), 2, 128 * 1024)
        pipe.init_buffer(asc.TQue(P.B1), 2, 128 * 1024 + 32)
    _raises(BufferOverflow, "L1 overflow: requires 524352 bytes, 524288 available "
                            "(init_buffer of 2 x 131104 bytes at L1 0x40000)", body)


@pytest.mark.parametrize("position,addr,align", [(P.A1, 16, 32), (P.A2, 256, 512),
                                                 (P.B2, 1000, 512), (P.C2, 32, 64)])
def test_cube_addresses_must_be_aligned(position, addr, align):
    def body(core):
        asc.local_tensor(position, F16, addr, 16)
    _raises(IllegalInstruction, f"Illegal instruction, which is usually caused by unaligned "
                                f"addresses: core 0 (AIC) local_tensor at {position.value} "
                                f"{position.space.value} address {addr:#x} is not "
                                f"{align}-byte aligned", body)


def test_an_mmad_destination_is_a_whole_l0c_fractal():
    def body(core):
        a = asc.local_tensor(P.A2, F16, 0, 256)
        b = asc.local_tensor(P.B2, F16, 0, 256)
        c = asc.local_tensor(P.CO1, F32, 0, 512)
        asc.mmad(c[64], a, b, asc.MmadParams(m=16, n=16, k=16))   # 256 bytes in: 64-aligned
    _raises(IllegalInstruction, "mmad dst L0C address 0x100 is not 1024-byte aligned", body)


def test_an_access_past_a_cube_memory_is_out_of_bound():
    def body(core):
        a1 = asc.local_tensor(P.A1, F16, 500 * 1024, 1024)
        a2 = asc.local_tensor(P.A2, F16, 0, 1024)
        asc.load_data(a2, a1, asc.LoadData2DParams(repeat_times=32))
    _raises(AicoreOutOfBound, "aicore memory out of bound: core 0 (AIC) load_data L1 "
                              "[0x7d000, 0x81000), L1 holds 524288 bytes", body)


# ---------------------------------------------------------------- parameter ranges

@pytest.mark.parametrize("make,message", [
    (lambda: asc.MmadParams(m=4096, n=16, k=16), "mmad m 4096 outside [0, 4095]"),
    (lambda: asc.MmadParams(m=16, n=16, k=5000), "mmad k 5000 outside [0, 4095]"),
    (lambda: asc.MmadParams(m=16, n=16, k=16, unit_flag=1), "mmad unit_flag 1: one of 0, 2, 3"),
])
def test_mmad_sizes_outside_their_range_are_illegal(make, message):
    def body(core):
        a = asc.local_tensor(P.A2, F16, 0, 256)
        b = asc.local_tensor(P.B2, F16, 0, 256)
        c = asc.local_tensor(P.CO1, F32, 0, 256)
        asc.mmad(c, a, b, make())
    _raises(IllegalInstruction, message, body)


def test_copy_and_load_parameters_outside_their_ranges_are_illegal():
    h = Harness()
    x = h.empty((64, 64), F16, "x")

    def nd2nz(core):
        asc.data_copy(asc.local_tensor(P.A1, F16, 0, 4096), x,
                      asc.Nd2NzParams(n_value=16385, d_value=16, src_d_value=16,
                                      dst_nz_c0_stride=16))

    def load(core):
        asc.load_data(asc.local_tensor(P.A2, F16, 0, 256), asc.local_tensor(P.A1, F16, 0, 256),
                      asc.LoadData2DParams(repeat_times=256))

    def load3d(core):
        asc.load_data(asc.local_tensor(P.A2, F16, 0, 256), asc.local_tensor(P.A1, F16, 0, 256),
                      asc.LoadData3DParamsV2(l1_w=16, channel_size=16, k_extension=16,
                                             m_extension=16, stride_w=64))

    def fill(core):
        asc.fill(asc.local_tensor(P.A2, F16, 0, 256), asc.InitConstValueParams(32768, 1, 0, 0))
    _raises(IllegalInstruction, "data_copy(Nd2NzParams) n_value 16385 outside [0, 16384]",
            nd2nz, harness=h)
    _raises(IllegalInstruction, "load_data repeat_times 256 outside [0, 255]", load)
    _raises(IllegalInstruction, "stride_w 64 outside [1, 63]", load3d)
    _raises(IllegalInstruction, "fill repeat_times 32768 outside [0, 32767]", fill)


def test_fixpipe_conversions_and_sizes_are_checked():
    h = Harness()
    y16, y32 = h.empty((16, 16), F16, "y16"), h.empty((16, 16), F32, "y32")

    def wrong_type(core):
        c = asc.local_tensor(P.CO1, F32, 0, 256)
        asc.fixpipe(y16, c, asc.FixpipeParamsV220(n_size=16, m_size=16, src_stride=16,
                                                  dst_stride=16))
    _raises(IllegalInstruction, "fixpipe float32 -> float16 with quant_pre NoQuant: from "
                                "float32 it converts NoQuant to float32; F322F16 to float16",
            wrong_type, harness=h)

    def no_quant_into_l1(core):
        c = asc.local_tensor(P.CO1, F32, 0, 256)
        asc.fixpipe(asc.local_tensor(P.C1, F32, 0, 256), c, asc.FixpipeParamsV220(
            n_size=16, m_size=16, src_stride=16, dst_stride=16))
    _raises(IllegalInstruction, "fixpipe into L1 needs a conversion (NoQuant goes to GM only)",
            no_quant_into_l1)

    def nz_tail(core):
        c = asc.local_tensor(P.CO1, F32, 0, 256)
        asc.fixpipe(y32, c, asc.FixpipeParamsV220(n_size=7, m_size=16, src_stride=16,
                                                  dst_stride=16), asc.CFG_NZ)
    _raises(IllegalInstruction, "fixpipe n_size 7: an NZ output takes whole 16-column blocks",
            nz_tail, harness=h)


# ---------------------------------------------------------------- operands in the wrong place

def test_an_operand_in_the_wrong_memory_is_refused():
    def left_in_l0b(core):
        a = asc.local_tensor(P.B2, F16, 0, 256)
        b = asc.local_tensor(P.B2, F16, 512, 256)
        asc.mmad(asc.local_tensor(P.CO1, F32, 0, 256), a, b, asc.MmadParams(m=16, n=16, k=16))
    _raises(IllegalInstruction, "mmad a (the left matrix) must be in L0A, got a LocalTensor "
                                "at B2 (L0B)", left_in_l0b)

    def load_into_l1(core):
        asc.load_data(asc.local_tensor(P.A1, F16, 0, 256), asc.local_tensor(P.B1, F16, 512, 256),
                      asc.LoadData2DParams())
    _raises(IllegalInstruction, "load_data dst must be in L0A or L0B, got a LocalTensor at A1 "
                                "(L1)", load_into_l1)

    def types(core):
        a = asc.local_tensor(P.A2, F16, 0, 256)
        b = asc.local_tensor(P.B2, np.dtype("float32"), 0, 128)
        asc.mmad(asc.local_tensor(P.CO1, F32, 0, 256), a, b, asc.MmadParams(m=16, n=16, k=8))
    _raises(IllegalInstruction, "mmad float16 x float32 -> float32: the Cube takes float16, "
                                "bfloat16 or float32 into float32, and int8 into int32", types)


def test_a_cube_core_has_no_ub_and_no_vector_pipe_and_a_vector_core_no_l1():
    def vecin_on_aic(core):
        pipe = asc.TPipe()
        pipe.init_buffer(asc.TQue(P.VECIN), 1, 1024)
    _raises(IllegalInstruction, "init_buffer at VECIN: core 0 (AIC) is an AIC core, which has "
                                "no UB (its memories: L1, L0A, L0B, L0C, BT, FB)", vecin_on_aic)

    def v_flag_on_aic(core):
        asc.set_flag(asc.HardEvent.V_MTE3, 0)
    _raises(IllegalInstruction, "set_flag(V_MTE3): core 0 (AIC) is an AIC core, which has no "
                                "PIPE_V", v_flag_on_aic)

    h = Harness()

    def a1_on_aiv(core):
        pipe = asc.TPipe()
        pipe.init_buffer(asc.TQue(P.A1), 1, 1024)
    with pytest.raises(IllegalInstruction, match=re.escape(
            "init_buffer at A1: core 0 is an AIV core, which has no L1 (its memories: UB)")):
        h.launch(a1_on_aiv, kind=asc.KernelType.VECTOR)


def test_co2_is_gm_on_a2_and_event_ids_are_per_pipe_pair():
    def co2(core):
        asc.TPipe().init_buffer(asc.TQue(P.CO2), 1, 1024)
    _raises(IllegalInstruction, "TQue position CO2 has no queue here: on dav-c220 CO2 is GM",
            co2)

    def nine(core):
        asc.TPipe().init_buffer(asc.TQue(P.A1), 9, 1024)
    _raises(ResourceLimit, "9 queue buffers at A1: the chip has 8 event ids per position", nine)

    def shared(core):
        pipe = asc.TPipe()
        pipe.init_buffer(asc.TQue(P.A1), 5, 1024)
        pipe.init_buffer(asc.TQue(P.B1), 4, 1024)
    _raises(ResourceLimit, "9 queue buffers synchronise MTE2_MTE1: the positions it joins "
                           "share the chip's 8 event ids", shared)


# ---------------------------------------------------------------- debug mode's checks

def _tile(a, b, c, m=32, k=32, n=32, *, flags=True, init=True, load_b=True):
    """A 32 x 32 x 32 tile with its flags; knobs plant bugs."""
    def body(core):
        a2, b2 = load_tile(a, b, m, k, n, F16, flags=flags, load_b=load_b, l1_b=8192)
        l0c = asc.local_tensor(P.CO1, F32, 0, m * n)
        asc.mmad(l0c, a2, b2, asc.MmadParams(m=m, n=n, k=k, cmatrix_init_val=init))
        asc.set_flag(asc.HardEvent.M_FIX, 0)
        asc.wait_flag(asc.HardEvent.M_FIX, 0)
        asc.fixpipe(c, l0c, asc.FixpipeParamsV220(n_size=n, m_size=m, src_stride=m,
                                                  dst_stride=n))
        asc.set_flag(asc.HardEvent.FIX_M, 0)
        asc.wait_flag(asc.HardEvent.FIX_M, 0)
    return body


def _harness():
    h = Harness()
    rng = np.random.default_rng(0)
    a = h.tensor(rng.standard_normal((32, 32)).astype(F16), "a")
    b = h.tensor(rng.standard_normal((32, 32)).astype(F16), "b")
    return h, a, b, h.empty((32, 32), F32, "c")


def test_the_clean_tile_passes_every_check():
    h, a, b, c = _harness()
    h.launch(_tile(a, b, c))


def test_a_load_of_l1_that_mte2_still_writes_is_a_pipe_hazard():
    h, a, b, c = _harness()
    with pytest.raises(HazardError, match=re.escape(
            "pipe hazard on core 0 (AIC): load_data (MTE1) reads L1 [0x0, 0x600) that "
            "data_copy (MTE2) writes [0x0, 0x800) earlier in program order, and no sync "
            "orders MTE2 before MTE1")):
        h.launch(_tile(a, b, c, flags=False))


def test_reads_of_l1_never_written_reach_gm_as_an_uninitialised_read():
    h, a, b, c = _harness()
    with pytest.raises(UninitialisedRead, match=re.escape(
            "uninitialised read on core 0 (AIC): fixpipe (FIXPIPE) copies L0C [0x0, 0x1000) to "
            "GM [")) as e:
        h.launch(_tile(a, b, c, load_b=False))
    assert "holds what load_data (MTE1) computed from L1 [0x2000, 0x2200), which nothing " \
           "wrote in this launch" in str(e.value)


def test_an_accumulation_onto_stale_l0c_is_caught():
    h, a, b, c = _harness()
    _raises(AccumulationWithoutInit, "L0C accumulation without init on core 0 (AIC): mmad "
                                     "(CUBE) accumulates into L0C [0x0, 0x1000) "
                                     "(cmatrix_init_val False) that nothing wrote in this "
                                     "launch (stale L0C)", _tile(a, b, c, init=False),
            harness=h)


def test_an_accumulation_onto_a_tile_already_copied_out_is_caught():
    """A second tile whose first Mmad forgets cmatrix_init_val adds onto the first tile."""
    h, a, b, c = _harness()
    first = _tile(a, b, c)

    def body(core):
        first(core)
        l0c = asc.local_tensor(P.CO1, F32, 0, 1024)
        asc.mmad(l0c, asc.local_tensor(P.A2, F16, 0, 1024), asc.local_tensor(P.B2, F16, 0, 1024),
                 asc.MmadParams(m=32, n=32, k=32, cmatrix_init_val=False))
    _raises(AccumulationWithoutInit, "into L0C [0x0, 0x1000) (cmatrix_init_val False) whose "
                                     "tile a fixpipe already copied out", body, harness=h)


def test_release_mode_accumulates_onto_stale_l0c_silently():
    """L0C keeps what the last launch left (as UB does): without init the sum is wrong."""
    h, a, b, c = _harness()
    h.launch(_tile(a, b, c), debug=False)
    right = h.read(c, (32, 32)).copy()
    h.launch(_tile(a, b, c, init=False), debug=False)
    np.testing.assert_allclose(h.read(c, (32, 32)), 2 * right, rtol=1e-6)


def test_unit_flags_that_nothing_sets_hang():
    def fix_first(core):
        c = asc.local_tensor(P.CO1, F32, 0, 256)
        asc.fixpipe(asc.local_tensor(P.C1, F16, 0, 256), c, asc.FixpipeParamsV220(
            n_size=16, m_size=16, src_stride=16, dst_stride=1, unit_flag=3,
            quant_pre=asc.QuantMode.F322F16), asc.CFG_NZ)
    _raises(KernelTimeout, "AI Core execution timed out: core 0 (AIC) fixpipe with unit_flag 3 "
                           "waits for L0C 0x0's unit flags, which no mmad with unit_flag 3 into "
                           "that buffer sets", fix_first)

    def two_lasts(core):
        a = asc.local_tensor(P.A2, F16, 0, 256)
        b = asc.local_tensor(P.B2, F16, 0, 256)
        c = asc.local_tensor(P.CO1, F32, 0, 256)
        asc.fill(a, asc.InitConstValueParams(1, 1, 0, 1))
        asc.fill(b, asc.InitConstValueParams(1, 1, 0, 1))
        asc.set_flag(asc.HardEvent.MTE1_M, 0)
        asc.wait_flag(asc.HardEvent.MTE1_M, 0)
        for _ in range(2):
            asc.mmad(c, a, b, asc.MmadParams(m=16, n=16, k=16, unit_flag=3))
    _raises(KernelTimeout, "mmad with unit_flag 3 waits for L0C 0x0's unit flags to clear",
            two_lasts)
