"""The timing model: deterministic, and ordered the way the chip orders designs (R9, R10)."""

import json

import numpy as np
import pytest

import ixl
from ixl.ascend import AICore, Mode, get_chip
from ixl.ascend import lang as asc
from ixl.ascend.gm import GlobalMemory, GlobalTensor
from ixl.kernels.elementwise import make_kernel, plan
from ixl.kernels.program import Body, Step
from ixl.nixl import KernelEntry
from ixl.nixl.registry import Registry
from ixl.profile import chrome_trace, launch_metrics, summarize


def _add_time(shape, config=None, dtype="float16", chip="910B1"):
    dev = ixl.device(chip, timing_only=True)
    a = dev.empty(shape, dtype)
    out = dev.run("Add", a, a, config=config)
    t = dev.last_profile.time_us
    out.free()
    a.free()
    dev.close()
    return t


def test_modeled_time_is_deterministic():
    assert _add_time((2048, 2048)) == _add_time((2048, 2048))


def test_modeled_time_of_cores_on_their_own_data_does_not_depend_on_their_run_order(
        monkeypatch):
    """The run order only breaks ties between cores that meet on the same lines (simulator.
    core_order): an Add's cores each read their own rows."""
    times = set()
    for order in ("natural", "reverse", "shuffle"):
        monkeypatch.setenv("IXL_CORE_ORDER", order)
        times.add(_add_time((1024, 1024)))
    assert len(times) == 1


def test_more_cores_faster_until_bandwidth_bound():
    times = {n: _add_time((4096, 4096), {"block_dim": n}) for n in (1, 2, 4, 8, 16, 32, 48)}
    assert times[1] > times[2] > times[4] > times[8] > times[16]
    assert times[1] / times[8] > 6              # near-linear while each core has its own port
    assert times[32] / times[48] < 48 / 32      # then the shared GM bandwidth caps the gain


def _heavy_device():
    """Relu's slot with a compute-heavy body, so moves and compute are comparable."""
    def body(a):
        asc.exp(a.y, a.xs[0], a.n)
        for _ in range(5):
            asc.exp(a.y, a.y, a.n)
    step = Step("Relu", Body(body), (0,))
    reg = Registry(load_library=False)
    reg.register(KernelEntry(
        op="Relu", kernel=make_kernel("heavy_kernel", 1),
        tiling=lambda ins, outs, attrs, chip, config: plan(list(ins), outs[0], chip, (step,),
                                                           config),
        dtypes=("float16",), built_for_runtime="1.0"))
    return ixl.device("910B1", timing_only=True, registry=reg)


def test_double_buffering_beats_single_where_moves_and_compute_are_comparable():
    dev = _heavy_device()
    x = dev.empty((48 * 262144,), "float16")
    t = {}
    for n in (1, 2, 4):
        dev.run("Relu", x, config={"buffer_num": n}).free()
        t[n] = dev.last_profile.time_us
        m = launch_metrics(dev.last_profile.launch)
        assert 0.2 < m.values["aiv_vec_ratio"] and 0.2 < m.values["aiv_mte2_ratio"]
    assert t[2] < 0.85 * t[1]
    assert t[4] <= t[2] * 1.05
    x.free()


def _copy_cycles(offset_bytes: int) -> float:
    chip = get_chip("910B1")
    gm = GlobalMemory()
    gm.map(0x1000_0000, 1 << 20)
    src = GlobalTensor(gm, 0x1000_0000 + offset_bytes, np.float16, 1 << 18)
    core = AICore(chip, 0, Mode(timing_only=True), active_cores=1)
    core.begin_block(0, 1)
    pipe = asc.TPipe()
    q = asc.TQue(asc.TPosition.VECIN)
    pipe.init_buffer(q, 1, 64 * 1024)
    x = q.alloc_tensor(np.float16)
    asc.data_copy(x, src, 32 * 1024)
    core.end_block(check=False)
    return core.timeline.end


def test_32_byte_aligned_burst_is_slower_than_512_byte_aligned():
    assert _copy_cycles(32) > 1.3 * _copy_cycles(0)


def test_trace_is_valid_with_one_track_per_pipe_and_no_overlaps(tmp_path):
    dev = ixl.device("910B1", record=True)
    a = dev.tensor(np.ones(200_000, np.float16))
    dev.run("Add", a, a).free()
    trace = json.loads(json.dumps(chrome_trace(dev.last_profile.launch)))
    events = trace["traceEvents"]
    names = {(e["pid"], e["tid"]): e["args"]["name"] for e in events
             if e.get("name") == "thread_name"}
    assert {"VECTOR", "SCALAR", "MTE2", "MTE3"} <= set(names.values())
    by_track = {}
    for e in events:
        if e["ph"] == "X":
            by_track.setdefault((e["pid"], e["tid"]), []).append((e["ts"], e["ts"] + e["dur"]))
    for spans in by_track.values():
        spans.sort()
        assert all(b[0] >= a[1] - 1e-9 for a, b in zip(spans, spans[1:]))
    flows = [e for e in events if e["ph"] in ("s", "f")]
    assert flows and len(flows) % 2 == 0
    dev.close()


def test_metrics_name_the_bound_and_diagnose_in_r9_words():
    dev = ixl.device("910B1", timing_only=True)
    a = dev.empty((8192, 8192), "float16")
    dev.run("Add", a, a).free()
    m = launch_metrics(dev.last_profile.launch)
    for key in ("aiv_time(us)", "aiv_vec_ratio", "aiv_scalar_ratio", "aiv_mte2_ratio",
                "aiv_mte3_ratio", "ai_core_util", "move_ratio", "bubble_ratio", "gm_bytes",
                "achieved_bandwidth(GB/s)", "ub_peak_bytes", "bound_pipe"):
        assert key in m.values
    assert m.values["bound_pipe"] == "GM port" and m.diagnosis.startswith("move-bound")
    assert m.values["gm_bytes"] == 3 * 8192 * 8192 * 2
    a.free()


def test_a_stream_of_small_launches_is_dominated_by_launch_overhead():
    dev = ixl.device("910B1", timing_only=True)
    a = dev.empty((1024,), "float16")
    for _ in range(20):
        dev.run("Relu", a).free()
    s = summarize(dev.stream)
    assert s.launches == 20 and s.launch_share > 0.5
    assert s.total_us == pytest.approx(sum(r.time_us for r in dev.stream))
