"""The Cube's timing: the [CUBEPERF] cycle formula per dtype, MTE1 and Fixpipe rates, the GM
port shared with every active core, and a single-core 256 x 256 x 256 tile loop measured
against its theoretical Mmad cycles."""

import numpy as np
import pytest

from ixl.ascend import lang as asc
from ixl.ascend.costs import cost_table
from ixl.ascend.observe import GmRole
from ixl.ascend.timeline import Pipe
from tests.sim.cube_kernels import GemmTiling, Harness, gemm

F16, F32 = np.dtype(np.float16), np.dtype(np.float32)
P = asc.TPosition
COSTS = cost_table("dav-c220")
HEAD = COSTS.raw["cube"]["mmad"]["head_cycles"]
MTE1_HEAD = COSTS.raw["cube"]["mte1"]["head_cycles"]


def _busy(rec, pipe):
    return rec.cores[0].pipes[pipe].busy


@pytest.mark.parametrize("dtype,acc,k0,hf32", [(F16, F32, 16, False), ("bfloat16", F32, 16, False),
                                               (np.int8, np.int32, 32, False),
                                               (F32, F32, 4, False), (F32, F32, 8, True)])
@pytest.mark.parametrize("m,n,k", [(16, 16, 16), (40, 100, 64), (1, 48, 96)])
def test_mmad_cycles_are_head_plus_fractal_steps(dtype, acc, k0, hf32, m, n, k):
    dtype = np.dtype(dtype)

    def body(core):
        if hf32:
            asc.set_hf32_mode(True)
        a = asc.local_tensor(P.A2, dtype, 0, 64 * 1024 // dtype.itemsize)
        b = asc.local_tensor(P.B2, dtype, 0, 64 * 1024 // dtype.itemsize)
        c = asc.local_tensor(P.CO1, acc, 0, 16 * 1024)
        asc.mmad(c, a, b, asc.MmadParams(m=m, n=n, k=k))
    rec = Harness().launch(body, debug=False)
    ideal = -(-m // 16) * -(-n // 16) * -(-k // k0)
    assert _busy(rec, Pipe.M) == pytest.approx(HEAD + ideal)
    assert rec.cores[0].pipes[Pipe.M].flops == 2 * m * n * k


def test_mte1_moves_256_bytes_a_cycle_into_l0a_and_128_into_l0b():
    def body(core):
        l1 = asc.local_tensor(P.A1, F16, 0, 8192)
        for position in (P.A2, P.B2):
            asc.load_data(asc.local_tensor(position, F16, 0, 8192), l1,
                          asc.LoadData2DParams(repeat_times=16))
    rec = Harness().launch(body, debug=False)
    nbytes = 16 * 512
    assert _busy(rec, Pipe.MTE1) == pytest.approx(2 * MTE1_HEAD + nbytes / 256 + nbytes / 128)


def test_fixpipe_into_l1_moves_128_bytes_a_cycle_and_into_gm_through_the_port():
    h = Harness()
    y = h.empty((64, 64), F16, "y")
    head = COSTS.fixpipe_head_cycles

    def body(core):
        c = asc.local_tensor(P.CO1, F32, 0, 64 * 64)
        p = asc.FixpipeParamsV220(n_size=64, m_size=64, src_stride=64, dst_stride=64,
                                  quant_pre=asc.QuantMode.F322F16)
        asc.fixpipe(asc.local_tensor(P.C1, F16, 0, 4096), c, p, asc.CFG_NZ)
        asc.fixpipe(y, c, p)
    rec = h.launch(body, debug=False)
    to_l1 = head + 64 * 64 * 2 / 128
    # 64 rows of 128 bytes: the row pitch is off the 512-byte burst grid; written into L2
    to_gm = head + max(COSTS.gm_cycles(64 * 64 * 2, 0, 0, 64, False, COSTS.gm_rates(1)))
    assert _busy(rec, Pipe.FIX) == pytest.approx(to_l1 + to_gm)
    assert rec.cores[0].pipes[Pipe.FIX].nbytes == 64 * 64 * 2       # GM bytes only


def test_gm_into_l1_shares_the_port_and_the_chips_bandwidth_with_every_core():
    """A mix launch of 8 groups: 24 cores share GM; an AIC's MTE2 into L1 and an AIV's into UB
    of the same bytes take the same port time."""
    h = Harness()
    x = h.empty((8, 16384), F16, "x")

    def body(core):
        if asc.is_aic():
            asc.data_copy(asc.local_tensor(P.A1, F16, 0, 16384), x[asc.get_block_idx() * 16384],
                          16384)
        else:
            pipe = asc.TPipe()
            q = asc.TQue(P.VECIN)
            pipe.init_buffer(q, 1, 32768)
            t = q.alloc_tensor(F16)
            asc.data_copy(t, x[(asc.get_block_idx() // 2) * 16384], 16384)
            q.enque(t)
            q.free_tensor(q.deque())
    rec = h.launch(body, block_num=8, kind=asc.KernelType.MIX, debug=False)
    rates = COSTS.gm_rates(24)
    assert rates.hbm < rates.miss           # the chip's HBM bandwidth binds, not the port
    port, hbm = COSTS.gm_cycles(0, 32768, 0, 1, True, rates)      # read from HBM (L2 cold)
    assert hbm > port
    want = COSTS.mte_latency_cycles + hbm
    for core in rec.cores:
        assert core.pipes[Pipe.MTE2].busy == pytest.approx(want)


def test_timing_does_not_depend_on_data_or_mode():
    times = []
    for timing_only, debug in ((False, True), (False, False), (True, False)):
        h = Harness()
        a = h.empty((96, 80), F16, "a", GmRole.INPUT)
        b = h.empty((80, 112), F16, "b", GmRole.INPUT)
        c = h.empty((96, 112), F16, "c")
        if not timing_only:
            h.chip.write(a.addr, np.ones((96, 80), F16))
            h.chip.write(b.addr, np.ones((80, 112), F16))
        rec = h.launch(gemm(a, b, c, GemmTiling(96, 80, 112, 64, 64, 32), F16, F16), 2,
                       debug=debug, timing_only=timing_only)
        times.append(rec.time_us)
    assert times[0] == times[1] == times[2]


def test_the_mmad_queue_is_32_deep():
    """Mmads of 277 cycles: the scalar unit dispatches 33 at once; the 34th waits until the
    2nd leaves the queue for the Cube [HC]."""
    seen = {}

    def body(core):
        a = asc.local_tensor(P.A2, F16, 0, 64 * 256)
        b = asc.local_tensor(P.B2, F16, 0, 64 * 256)
        for i in range(40):
            asc.mmad(asc.local_tensor(P.CO1, F32, 0, 64 * 64), a, b,
                     asc.MmadParams(m=64, n=64, k=256))
            seen[i] = core.timeline.scalar           # the scalar unit, after dispatching i
    Harness().launch(body, debug=False)
    step, mmad = COSTS.scalar_issue_cycles, HEAD + 4 * 4 * 16
    assert seen[32] == pytest.approx(33 * step)
    assert seen[33] == pytest.approx(step + mmad)         # when the 2nd Mmad starts


# ---------------------------------------------------------------- the 256^3 tile loop

def _tile_loop(a, bt, c, s=256, base=128):
    """One core: A and B (given transposed, as the vendor's example takes it) whole into L1;
    then per output tile a K loop, L0A / L0B double buffered through queues, one 3-D load each,
    Mmads with unit flags into an L0C ping-pong, one Fixpipe NZ2ND per tile."""
    def body(core):
        pipe = asc.TPipe()
        qa1, qb1 = asc.TQue(P.A1), asc.TQue(P.B1)
        qa2, qb2 = asc.TQue(P.A2), asc.TQue(P.B2)
        pipe.init_buffer(qa1, 1, s * s * 2)
        pipe.init_buffer(qb1, 1, s * s * 2)
        pipe.init_buffer(qa2, 2, base * base * 2)
        pipe.init_buffer(qb2, 2, base * base * 2)
        l0c = [asc.local_tensor(P.CO1, F32, i * base * base * 4, base * base) for i in range(2)]
        a1, b1 = qa1.alloc_tensor(F16), qb1.alloc_tensor(F16)
        for l1, gm in ((a1, a), (b1, bt)):
            asc.data_copy(l1, gm, asc.Nd2NzParams(n_value=s, d_value=s, src_d_value=s,
                                                  dst_nz_c0_stride=s))
        qa1.enque(a1)
        qb1.enque(b1)
        a1, b1 = qa1.deque(), qb1.deque()
        tiles = [(mt, nt) for mt in range(s // base) for nt in range(s // base)]
        for i, (mt, nt) in enumerate(tiles):
            acc = l0c[i % 2]
            for k0 in range(0, s, base):
                a2, b2 = qa2.alloc_tensor(F16), qb2.alloc_tensor(F16)
                for l0, l1, row in ((a2, a1, mt), (b2, b1, nt)):
                    asc.load_data(l0, l1, asc.LoadData3DParamsV2(
                        l1_h=1, l1_w=s, channel_size=s, k_extension=base, m_extension=base,
                        k_start_pt=k0, m_start_pt=row * base))
                qa2.enque(a2)
                qb2.enque(b2)
                a2, b2 = qa2.deque(), qb2.deque()
                asc.mmad(acc, a2, b2, asc.MmadParams(m=base, n=base, k=base,
                                                     cmatrix_init_val=k0 == 0,
                                                     unit_flag=3 if k0 + base == s else 2))
                qa2.free_tensor(a2)
                qb2.free_tensor(b2)
            asc.fixpipe(c[mt * base * s + nt * base], acc, asc.FixpipeParamsV220(
                n_size=base, m_size=base, src_stride=base, dst_stride=s,
                quant_pre=asc.QuantMode.F322F16, unit_flag=3))
        qa1.free_tensor(a1)
        qb1.free_tensor(b1)
    return body


def test_a_single_core_256_cubed_tile_loop_against_its_theoretical_mmad_cycles():
    """The loop runs from the first L1 -> L0 load to the last Fixpipe's end. Theory: the Cube
    at its peak, (256/16)^3 = 4096 cycles. The model adds only what the loop cannot hide:
    filling the pipeline (the first tile's A and B into L0, then a flag), the Mmads' heads,
    one flag latency per step where the MTE1 loads plus the two queue flags outlast an Mmad,
    and draining it (the last tile's Fixpipe into L2, behind its last Mmad)."""
    s = 256
    rng = np.random.default_rng(0)
    a_host = rng.standard_normal((s, s)).astype(F16)
    b_host = rng.standard_normal((s, s)).astype(F16)
    h = Harness()
    a, bt = h.tensor(a_host, "a"), h.tensor(np.ascontiguousarray(b_host.T), "bt")
    c = h.empty((s, s), F16, "c")
    rec = h.launch(_tile_loop(a, bt, c), record=True)
    want = a_host.astype(np.float32) @ b_host.astype(np.float32)
    np.testing.assert_allclose(h.read(c, (s, s)).astype(np.float32), want, rtol=2 ** -10,
                               atol=1e-2)
    slices = rec.cores[0].slices
    mte1 = [x for x in slices if x.pipe is Pipe.MTE1]
    mmads = [x for x in slices if x.pipe is Pipe.M]
    fix = [x for x in slices if x.pipe is Pipe.FIX]
    loop = fix[-1].end - mte1[0].start
    theory = (s // 16) ** 3
    busy = sum(x.end - x.start for x in mmads)
    assert busy == pytest.approx(theory + len(mmads) * HEAD)
    # steady state: between its first and last Mmad the Cube is busy 98% of the time
    assert busy / (mmads[-1].end - mmads[0].start) > 0.98
    fill, drain = mmads[0].start - mte1[0].start, fix[-1].end - mmads[-1].end
    assert fill < 500 and drain < 10
    # the whole loop: 1.18 x theory (4827 cycles); fill 482, heads 169, drain 3: the Fixpipe
    # writes C into L2 (write-allocate, at the L2 rate), so under unit flags it keeps pace with
    # the last Mmads instead of draining a tile through the HBM-rate port after them
    assert loop / theory == pytest.approx(1.18, abs=0.01)
