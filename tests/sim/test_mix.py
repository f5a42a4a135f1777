"""Kernel types and mix kernels: which cores a launch occupies, GetBlockIdx / GetSubBlockIdx,
cross-core flags in their three modes (a core yields at a wait and resumes at the set's time
plus the flag latency), the errors of a wait nobody satisfies, and a Cube -> vector hand-off
through a GM workspace run through the device."""

import re

import numpy as np
import pytest

import ixl
from ixl.ascend import lang as asc
from ixl.ascend.costs import cost_table
from ixl.ascend.errors import CrossCoreRace, IllegalInstruction, KernelTimeout
from ixl.nixl import RUNTIME_VERSION, KernelEntry, LaunchPlan
from tests.sim.cube_kernels import GemmTiling, Harness, gemm

F16 = np.dtype(np.float16)
LATENCY = cost_table("dav-c220").flag_latency_cycles
MIX, CUBE, VECTOR = asc.KernelType.MIX, asc.KernelType.CUBE, asc.KernelType.VECTOR


def _launch(body, blocks=1, kind=MIX, debug=True):
    return Harness().launch(body, block_num=blocks, kind=kind, debug=debug)


def test_a_mix_launch_is_groups_of_one_aic_and_two_aivs():
    seen = []

    def body(core):
        seen.append((asc.is_aic(), asc.get_block_idx(), asc.get_block_num(),
                     asc.get_sub_block_idx(), asc.get_task_ratio(), str(core.core_id)))
    rec = _launch(body, blocks=3)
    assert sorted(seen) == sorted(
        [(True, b, 3, 0, 1, f"{b} (AIC)") for b in range(3)]
        + [(False, 2 * b + s, 3, s, 2, str(2 * b + s)) for b in range(3) for s in range(2)])
    assert [str(c.core_id) for c in rec.cores] == ["0", "1", "2", "3", "4", "5", "0 (AIC)",
                                                   "1 (AIC)", "2 (AIC)"]
    costs = cost_table("dav-c220")
    assert rec.launch_us == pytest.approx(costs.launch_us(2 * 3))   # 3 AI Cores' worth


def test_a_cube_kernel_counts_aics_and_loops_blocks_over_them():
    blocks = []
    rec = _launch(lambda core: blocks.append((core.core_id.index, asc.get_block_idx())),
                  blocks=30, kind=CUBE)
    assert len(rec.cores) == 24 and sorted(b for _, b in blocks) == list(range(30))
    assert all(core == block % 24 for core, block in blocks)


def test_a_mix_kernel_needs_every_group_resident_and_a_split_chip():
    with pytest.raises(IllegalInstruction, match=re.escape(
            "a mix kernel's block_dim 25 exceeds the 24 AI Cores of 910B1")):
        _launch(lambda core: None, blocks=25)
    with pytest.raises(IllegalInstruction, match="its AI Cores are coupled"):
        Harness("310P3").launch(lambda core: None, kind=CUBE)


def _busy(cycles_of_work):
    """Occupy this core's compute pipe for a while (a vector exp, or a Cube Mmad)."""
    if asc.is_aic():
        a = asc.local_tensor(asc.TPosition.A2, F16, 0, 256)
        b = asc.local_tensor(asc.TPosition.B2, F16, 0, 256)
        for _ in range(cycles_of_work):
            asc.mmad(asc.local_tensor(asc.TPosition.CO1, np.float32, 0, 256), a, b,
                     asc.MmadParams(m=16, n=16, k=16))
    else:
        pipe = asc.TPipe()
        t = asc.TBuf()
        pipe.init_buffer(t, 4096)
        x = t.get(np.float32, 1024)
        for _ in range(cycles_of_work):
            asc.exp(x, x, 1024)


def test_mode_2_the_aic_releases_both_aivs_at_its_set_plus_the_flag_latency():
    times = {}

    def body(core):
        if asc.is_aic():
            _busy(50)
            asc.cross_core_set_flag(2, asc.Pipe.M, 3)
            times["set"] = core.timeline.free[asc.Pipe.M]
        else:
            yield asc.cross_core_wait_flag(3)
            times[asc.get_sub_block_idx()] = core.timeline.scalar
    _launch(body, debug=False)
    assert times[0] == times[1] == pytest.approx(times["set"] + LATENCY)


def test_mode_2_the_aic_passes_once_both_aivs_set():
    times = {}

    def body(core):
        if asc.is_aic():
            yield asc.cross_core_wait_flag(5)
            times["aic"] = core.timeline.scalar
        else:
            _busy(10 + 40 * asc.get_sub_block_idx())         # AIV 1 sets last
            asc.cross_core_set_flag(2, asc.Pipe.V, 5)
            times[asc.get_sub_block_idx()] = core.timeline.free[asc.Pipe.V]
    _launch(body, debug=False)
    assert times[1] > times[0]
    assert times["aic"] == pytest.approx(times[1] + LATENCY)


def test_mode_1_pairs_the_aivs_and_mode_0_all_cores_of_a_kind():
    times = {}

    def body(core):
        if asc.is_aic():
            _busy(5 + 5 * asc.get_block_idx())
            asc.cross_core_set_flag(0, asc.Pipe.M, 1)
            yield asc.cross_core_wait_flag(1)
            times[("aic", asc.get_block_idx())] = core.timeline.scalar
            return
        _busy(1 + asc.get_block_idx())
        asc.cross_core_set_flag(1, asc.Pipe.V, 2)
        times[("set", asc.get_block_idx())] = core.timeline.free[asc.Pipe.V]
        yield asc.cross_core_wait_flag(2)
        times[("aiv", asc.get_block_idx())] = core.timeline.scalar
    _launch(body, blocks=2, debug=False)
    for b in range(2):       # each AIV pair passes at its slower member's set
        pair = max(times[("set", 2 * b)], times[("set", 2 * b + 1)]) + LATENCY
        assert times[("aiv", 2 * b)] == times[("aiv", 2 * b + 1)] == pytest.approx(pair)
    assert times[("aic", 0)] == times[("aic", 1)]       # a barrier of the AICs


def test_a_wait_no_core_will_satisfy_is_the_chips_timeout():
    def body(core):
        if not asc.is_aic():
            yield asc.cross_core_wait_flag(4)
    with pytest.raises(KernelTimeout, match=re.escape(
            "vector core execution timed out: core 0 waits at cross_core_wait_flag(4), and no "
            "running core is left to set it (2 core(s) blocked on cross-core flags)")):
        _launch(body)


def test_cross_core_flag_limits_and_misuse_are_errors():
    def overflow(core):
        if asc.is_aic():
            for _ in range(16):
                asc.cross_core_set_flag(2, asc.Pipe.FIX, 0)
    with pytest.raises(IllegalInstruction, match="counts 16 sets not yet waited for; its counter "
                                                 "holds 15"):
        _launch(overflow)

    def bad_id(core):
        asc.cross_core_set_flag(2, asc.Pipe.MTE2, 11)
    with pytest.raises(IllegalInstruction, match=r"flag id 11 outside \[0, 11\)"):
        _launch(bad_id)

    def not_yielded(core):
        if not asc.is_aic():
            asc.cross_core_wait_flag(1)
    with pytest.raises(IllegalInstruction, match=re.escape(
            "was never yielded: a kernel waits for another core by `yield "
            "asc.cross_core_wait_flag(1)`")):
        _launch(not_yielded)

    def in_a_vector_kernel(core):
        asc.cross_core_set_flag(0, asc.Pipe.V, 0)
    with pytest.raises(IllegalInstruction, match="in a vector-only kernel: only a mix kernel "
                                                 "starts the cross-core scheduler"):
        _launch(in_a_vector_kernel, kind=VECTOR)

    def on_scalar(core):
        asc.cross_core_set_flag(2, asc.Pipe.S, 0)
    with pytest.raises(IllegalInstruction, match="not S or ALL"):
        _launch(on_scalar)


def test_a_sync_all_meets_every_core_of_a_mix_launch():
    ends = {}

    def body(core):
        _busy(3 if asc.is_aic() else 30)
        yield asc.sync_all()
        ends[str(core.core_id)] = core.timeline.scalar
    _launch(body, blocks=2, debug=False)
    assert len(set(ends.values())) == 1 and len(ends) == 6


# ---------------------------------------------------------------- Cube -> vector through GM

def _relu_matmul_kernel(set_pipe):
    """The AIC computes A . B into the workspace and signals both AIVs (mode 2); each AIV
    waits, reads its half, applies ReLU and writes y."""
    def kernel(ctx, a, b, y):
        t = ctx.tiling
        ws = ctx.workspace.reinterpret(F16)
        if ctx.is_aic:
            gemm(a, b, ws, t, F16, F16)(None)
            asc.cross_core_set_flag(2, set_pipe, 0)
            return
        yield asc.cross_core_wait_flag(0)
        half = t.m * t.n // 2
        off = ctx.sub_block_idx * half
        pipe = asc.TPipe()
        q_in, q_out = asc.TQue(asc.TPosition.VECIN), asc.TQue(asc.TPosition.VECOUT)
        pipe.init_buffer(q_in, 1, half * 2)
        pipe.init_buffer(q_out, 1, half * 2)
        x = q_in.alloc_tensor(F16)
        asc.data_copy(x, ws[off], half)
        q_in.enque(x)
        x = q_in.deque()
        z = q_out.alloc_tensor(F16)
        asc.relu(z, x, half)
        q_out.enque(z)
        q_in.free_tensor(x)
        z = q_out.deque()
        asc.data_copy(y[off], z, half)
        q_out.free_tensor(z)
    return kernel


def _relu_matmul_entry(set_pipe, m=64, k=48, n=64):
    return KernelEntry(
        op="MatMul", kernel=_relu_matmul_kernel(set_pipe),
        tiling=lambda ins, outs, attrs, chip, config: LaunchPlan(
            1, GemmTiling(m, k, n, 64, 64, 32), m * n * 2),
        dtypes=("float16",), built_for_runtime=RUNTIME_VERSION, kind=MIX)


def test_a_mix_kernel_hands_the_cubes_result_to_the_vector_cores_through_the_workspace():
    rng = np.random.default_rng(0)
    a_host, b_host = rng.standard_normal((64, 48)).astype(F16), \
        rng.standard_normal((48, 64)).astype(F16)
    with ixl.device("910B1", debug=True) as dev:
        a, b = dev.tensor(a_host), dev.tensor(b_host)
        y = dev.empty((64, 64), "float16")
        rec = dev.launch(_relu_matmul_entry(asc.Pipe.FIX), [a, b], [y])
        want = np.maximum(a_host.astype(np.float32) @ b_host.astype(np.float32), 0)
        np.testing.assert_allclose(y.numpy().astype(np.float32), want, rtol=2 ** -10, atol=1e-2)
        assert rec.launch.kind is MIX and len(rec.launch.cores) == 3
        for t in (a, b, y):
            t.free()


def test_a_set_on_a_pipe_that_is_not_the_writers_races_with_the_reader():
    """The Fixpipe writes the workspace; a flag set on PIPE_M fires before it is done."""
    with ixl.device("910B1", debug=True) as dev:
        a, b = dev.tensor(np.ones((64, 48), F16)), dev.tensor(np.ones((48, 64), F16))
        y = dev.empty((64, 64), "float16")
        with pytest.raises(CrossCoreRace, match=re.escape(
                "cross-core race: core 0 reads GM [")) as e:
            dev.launch(_relu_matmul_entry(asc.Pipe.M), [a, b], [y])
        assert "that core 0 (AIC) writes with no SyncAll or cross-core flag ordering them" \
            in str(e.value)
        for t in (a, b, y):
            t.free()


def test_flags_set_and_never_waited_are_reported_in_debug_mode():
    def body(core):
        if asc.is_aic():
            asc.cross_core_set_flag(2, asc.Pipe.M, 6)
    _launch(body, debug=False)                  # the chip leaves the counters set
    with pytest.raises(KernelTimeout, match=re.escape(
            "the launch ended with cross-core flags set and never waited: core 0 flag 6 x1, "
            "core 1 flag 6 x1")):
        _launch(body)


def test_the_trace_draws_cross_core_flags_between_the_cores():
    from ixl.profile import chrome_trace

    def body(core):
        if asc.is_aic():
            _busy(2)
            asc.cross_core_set_flag(2, asc.Pipe.M, 3)
        else:
            yield asc.cross_core_wait_flag(3)
    rec = Harness().launch(body, kind=MIX, debug=False, record=True)
    assert [(str(e.setter), str(e.waiter)) for e in rec.cross_edges] in (
        [("0 (AIC)", "0"), ("0 (AIC)", "1")], [("0 (AIC)", "1"), ("0 (AIC)", "0")])
    flows = [e for e in chrome_trace(rec)["traceEvents"] if e.get("cat") == "cross-core"]
    assert sorted(e["ph"] for e in flows) == ["f", "f", "s", "s"]
    assert {e["pid"] for e in flows if e["ph"] == "s"} == {1 << 16}
