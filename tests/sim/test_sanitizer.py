"""Debug mode's checks, each with a minimal planted bug (and its exact message) and the clean
twin that must pass: order-based pipe hazards, use after free, cross-core GM races, core order,
uninitialised reads, and writes into inputs."""

import re

import numpy as np
import pytest

import ixl
from ixl.ascend import Mode, SimulatedChip, get_chip
from ixl.ascend import lang as asc
from ixl.ascend.core import current_core
from ixl.ascend.errors import (
    CrossCoreRace,
    HazardError,
    InputWritten,
    ResourceLimit,
    UninitialisedRead,
    UseAfterFree,
)
from ixl.ascend.gm import GlobalTensor
from ixl.ascend.observe import GmRole
from ixl.nixl import KernelEntry, LaunchPlan
from ixl.nixl.registry import Registry
from tests.helpers import device_with_kernel, random_pair

GM = r"GM \[0x[0-9a-f]+, 0x[0-9a-f]+\)"      # a GM range (addresses depend on the allocator)


def exact(message: str, whole: bool = True) -> str:
    """A regex for the message (or its start), with every 'GM [..)' range left free."""
    parts = message.split("GM [..)")
    return "^" + GM.join(re.escape(p) for p in parts) + ("$" if whole else "")


def _run(kernel, shape=(1024,), debug=True, block_dim=1, **kw):
    dev = device_with_kernel(kernel, debug=debug, block_dim=block_dim, **kw)
    a, b = random_pair(shape)
    ta, tb = dev.tensor(a), dev.tensor(b)
    out = dev.run("Add", ta, tb)
    return out.numpy(), (a, b)


def _buffer(count=1024, dtype=np.float16, slack=1):
    """A scratch buffer of its own from the block's pipe (made on first use)."""
    core = current_core()
    pipe = core.pipes[0] if core.pipes else asc.TPipe()
    b = asc.TBuf()
    pipe.init_buffer(b, count * np.dtype(dtype).itemsize * slack)
    return b.get(dtype, count * slack)


def _flag(event: str) -> None:
    """set_flag then wait_flag of one event: the pipes on either side are ordered."""
    asc.set_flag(getattr(asc.HardEvent, event), 0)
    asc.wait_flag(getattr(asc.HardEvent, event), 0)


def _busy_vector(n=40):
    """Vector work on a buffer of its own: long enough that an earlier move has finished in the
    modeled timeline before whatever comes next starts."""
    t = _buffer(4096, np.float32)
    asc.duplicate(t, 1.0, 4096)
    for _ in range(n):
        asc.exp(t, t, 4096)


# ---------------------------------------------------------------- order-based pipe hazards

RAW_MESSAGE = ("pipe hazard on core 0: add (VECTOR) reads UB [0x0, 0x800) that data_copy (MTE2) "
               "writes [0x0, 0x800) earlier in program order, and no sync orders MTE2 before "
               "VECTOR: the chip runs the pipes in parallel, so the result depends on timing; "
               "order them with set_flag/wait_flag(MTE2_V), enque/deque or free/alloc "
               "(see: ixl explain 'pipe hazard')")


def _copy_in_then_add(flag: bool):
    def kernel(ctx, x, y, z):
        t = _buffer()
        asc.data_copy(t, x, 1024)
        _busy_vector()                       # MTE2 is long done in the modeled timeline
        if flag:
            _flag("MTE2_V")
        asc.add(t, t, t, 1024)
        _flag("V_MTE3")
        asc.data_copy(z, t, 1024)
    return kernel


def test_a_read_after_write_with_no_flag_is_a_hazard_however_the_times_fall():
    with pytest.raises(HazardError) as info:
        _run(_copy_in_then_add(flag=False))
    assert str(info.value) == RAW_MESSAGE
    # The modeled times of the two accesses do not overlap: only the order says it is a race.
    dev = device_with_kernel(_copy_in_then_add(flag=False), debug=False)
    dev.record = True
    a, b = random_pair((1024,))
    dev.run("Add", dev.tensor(a), dev.tensor(b))
    slices = dev.last_profile.launch.cores[0].slices
    copy_end = next(s.end for s in slices if s.name == "data_copy")
    add_start = next(s.start for s in slices if s.name == "add")
    assert copy_end < add_start


def test_the_same_read_after_a_flag_is_clean():
    out, (a, _) = _run(_copy_in_then_add(flag=True))
    np.testing.assert_array_equal(out, a + a)


def test_overwriting_a_buffer_the_vector_unit_read_is_a_hazard():
    def kernel(ctx, x, y, z):
        t = _buffer(slack=2)
        asc.data_copy(t, x, 1024)
        _flag("MTE2_V")
        asc.exp(t[1024], t, 1024)          # V reads the first half ...
        asc.data_copy(t, y, 1024)          # ... and MTE2 refills it, with no V -> MTE2 flag

    with pytest.raises(HazardError, match=re.escape(
            "pipe hazard on core 0: data_copy (MTE2) writes UB [0x0, 0x800) that exp (VECTOR) "
            "reads [0x0, 0x800) earlier in program order, and no sync orders VECTOR before MTE2")):
        _run(kernel)


def test_dispatch_order_alone_does_not_order_two_pipes():
    def kernel(ctx, x, y, z):
        t = _buffer()
        asc.duplicate(t, 3.0, 1024)        # V writes ...
        asc.data_copy(z, t, 1024)          # ... MTE3 reads: issued later, but nothing waits

    with pytest.raises(HazardError, match=re.escape(
            "data_copy (MTE3) reads UB [0x0, 0x800) that duplicate (VECTOR) writes [0x0, 0x800) "
            "earlier in program order, and no sync orders VECTOR before MTE3")):
        _run(kernel)


def test_a_flag_set_before_the_write_does_not_cover_it():
    def kernel(ctx, x, y, z):
        t = _buffer()
        asc.set_flag(asc.HardEvent.MTE2_V, 0)      # fires before the copy below
        asc.data_copy(t, x, 1024)
        asc.wait_flag(asc.HardEvent.MTE2_V, 0)
        asc.add(t, t, t, 1024)

    with pytest.raises(HazardError, match=r"add \(VECTOR\) reads UB \[0x0, 0x800\) that "
                                          r"data_copy \(MTE2\) writes"):
        _run(kernel)


def _reuse_scratch(wait_copy_out: bool):
    """Two tiles through one scratch buffer: V fills it, MTE3 copies it out, V refills it."""
    def kernel(ctx, x, y, z):
        t = _buffer(512)
        for k in range(2):
            if k and wait_copy_out:
                _flag("MTE3_V")
            asc.duplicate(t, float(k), 512)
            _flag("V_MTE3")
            asc.data_copy(z[k * 512], t, 512)
    return kernel


def test_refilling_a_buffer_before_its_copy_out_is_done_is_a_hazard():
    with pytest.raises(HazardError, match=re.escape(
            "pipe hazard on core 0: duplicate (VECTOR) writes UB [0x0, 0x400) that data_copy "
            "(MTE3) reads [0x0, 0x400) earlier in program order, and no sync orders MTE3 before "
            "VECTOR")):
        _run(_reuse_scratch(wait_copy_out=False))


def test_refilling_it_after_an_mte3_to_v_flag_is_clean():
    out, _ = _run(_reuse_scratch(wait_copy_out=True))
    assert (out[:512] == 0).all() and (out[512:] == 1).all()


def _chain(barrier):
    """MTE2 -> V -> MTE3 through flags or a barrier: MTE3 is ordered after MTE2 transitively."""
    def kernel(ctx, x, y, z):
        t, u = _buffer(), _buffer()
        asc.data_copy(t, x, 1024)
        barrier("MTE2_V")
        asc.adds(u, t, 1.0, 1024)
        barrier("V_MTE3")
        asc.data_copy(z, u, 1024)
    return kernel


def test_order_is_transitive_through_flags():
    out, (a, _) = _run(_chain(_flag))
    np.testing.assert_array_equal(out, a + np.float16(1))


def test_pipe_barrier_all_orders_every_pipe_and_a_single_pipe_barrier_does_not():
    out, (a, _) = _run(_chain(lambda event: asc.pipe_barrier()))
    np.testing.assert_array_equal(out, a + np.float16(1))
    with pytest.raises(HazardError, match=r"no sync orders MTE2 before VECTOR"):
        _run(_chain(lambda event: asc.pipe_barrier(asc.Pipe.V)))


def _scalar_read(flag: bool):
    def kernel(ctx, x, y, z):
        t = _buffer(16)
        asc.data_copy_pad(t, x, asc.DataCopyExtParams(1, 2, 0, 0))
        if flag:
            _flag("MTE2_S")
        ctx.tiling["value"] = t.get_value(0)
    return kernel


def test_get_value_of_data_mte2_is_still_writing_is_a_hazard():
    with pytest.raises(HazardError) as info:
        _run(_scalar_read(flag=False), tiling={})
    assert str(info.value).startswith(
        "pipe hazard on core 0: get_value (SCALAR) reads UB [0x0, 0x2) that data_copy_pad "
        "(MTE2) writes [0x0, 0x2) earlier in program order, and no sync orders MTE2 before "
        "SCALAR: the chip runs the pipes in parallel, so the result depends on timing; order "
        "them with set_flag/wait_flag(MTE2_S)")


def test_get_value_after_an_mte2_to_scalar_flag_is_clean():
    seen = {}
    a, _ = random_pair((1024,))
    dev = device_with_kernel(_scalar_read(flag=True), tiling=seen)
    dev.run("Add", dev.tensor(a), dev.tensor(a))
    assert seen["value"] == a[0]


def _read_back(flag: bool):
    """A core writes y, then reads the same bytes back (GM read after write)."""
    def kernel(ctx, x, y, z):
        t, u = _buffer(), _buffer()
        asc.duplicate(t, 2.0, 1024)
        _flag("V_MTE3")
        asc.data_copy(z, t, 1024)
        if flag:
            _flag("MTE3_MTE2")
        asc.data_copy(u, z, 1024)
    return kernel


def test_gm_read_after_write_in_one_core_needs_an_mte3_to_mte2_flag():
    with pytest.raises(HazardError) as info:
        _run(_read_back(flag=False))
    assert re.match(exact(
        "pipe hazard on core 0: data_copy (MTE2) reads GM [..) of tensor 'y' that data_copy "
        "(MTE3) writes [0x", whole=False), str(info.value))
    assert "no sync orders MTE3 before MTE2" in str(info.value)
    assert "set_flag/wait_flag(MTE3_MTE2)" in str(info.value)


def test_gm_read_after_write_with_the_flag_is_clean():
    out, _ = _run(_read_back(flag=True))
    assert (out == 2).all()


def _use_after_free(late: bool):
    def kernel(ctx, x, y, z):
        pipe = asc.TPipe()
        q, o = asc.TQue(asc.TPosition.VECIN), asc.TQue(asc.TPosition.VECOUT)
        pipe.init_buffer(q, 1, 2048)
        pipe.init_buffer(o, 1, 2048)
        t = q.alloc_tensor(np.float16)
        asc.data_copy(t, x, 1024)
        q.enque(t)
        t = q.deque()
        r = o.alloc_tensor(np.float16)
        if late:
            q.free_tensor(t)
        asc.adds(r, t, 1.0, 1024)
        if not late:
            q.free_tensor(t)
        o.enque(r)
        r = o.deque()
        asc.data_copy(z, r, 1024)
        o.free_tensor(r)
    return kernel


def test_a_tensor_used_after_free_tensor_is_an_error():
    with pytest.raises(UseAfterFree) as info:
        _run(_use_after_free(late=True))
    assert str(info.value) == (
        "use after free_tensor on core 0: adds (VECTOR) reads UB [0x0, 0x800) of a VECIN "
        "buffer [0x0, 0x800) that free_tensor gave back to its queue (the next alloc_tensor may "
        "refill it at any time): finish with a tensor before freeing it "
        "(see: ixl explain 'use after free')")


def test_freeing_after_the_last_use_is_clean():
    out, (a, _) = _run(_use_after_free(late=False))
    np.testing.assert_array_equal(out, a + np.float16(1))


# ---------------------------------------------------------------- cross-core races

def _two_cores(overlap: int):
    """Each of two cores writes 512 elements of z; core 1's range starts `overlap` elements
    into core 0's."""
    def kernel(ctx, x, y, z):
        t = _buffer(512)
        asc.duplicate(t, float(ctx.block_idx), 512)
        _flag("V_MTE3")
        asc.data_copy(z[ctx.block_idx * (512 - overlap)], t, 512)
    return kernel


def test_two_cores_writing_the_same_bytes_is_a_race():
    with pytest.raises(CrossCoreRace) as info:
        _run(_two_cores(overlap=16), block_dim=2)
    assert re.match(exact(
        "cross-core race: cores 0 and 1 both write GM [..) of tensor 'y' (its bytes "
        "[992, 1024)) with no SyncAll between them: the bytes hold whichever core writes last "
        "(see: ixl explain 'cross-core race')"), str(info.value))


def test_two_cores_writing_their_own_ranges_is_clean():
    out, _ = _run(_two_cores(overlap=0), block_dim=2)
    assert (out[:512] == 0).all() and (out[512:] == 1).all()


def test_one_core_reading_what_another_writes_in_the_same_phase_is_a_race():
    def kernel(ctx, x, y, z):
        t = _buffer(512)
        if ctx.block_idx == 1:
            asc.duplicate(t, 1.0, 512)
            _flag("V_MTE3")
            asc.data_copy(z, t, 512)
        else:
            asc.data_copy(t, z[256], 512)        # reads z[256:768], core 1 writes z[:512]

    with pytest.raises(CrossCoreRace) as info:
        _run(kernel, block_dim=2)
    assert re.match(exact(
        "cross-core race: core 0 reads GM [..) of tensor 'y' (its bytes [512, 1024)) that core "
        "1 writes with no SyncAll between them: what it reads depends on which core runs first"
        " (see: ixl explain 'cross-core race')"), str(info.value))


def _workspace_launch(body, blocks=2, nbytes=4096, mode=Mode(debug=True)):
    """Launch `body(core, y, ws)` on a bare chip with an output y and a workspace."""
    sim = SimulatedChip(get_chip("910B1"))
    sim.gm.map(0x1000, nbytes)
    sim.gm.map(0x10000, nbytes)
    y = GlobalTensor(sim.gm, 0x1000, np.float32, nbytes // 4, "y")
    ws = GlobalTensor(sim.gm, 0x10000, np.float32, nbytes // 4, "workspace")
    sim.launch("k", lambda core: body(core, y, ws), blocks, mode,
               [(y, GmRole.OUTPUT), (ws, GmRole.WORKSPACE)])
    return y.numpy()


def _partials(sync: bool):
    """Each core writes its partial to its workspace slot; core 0 reads both back."""
    def body(core, y, ws):
        t = _buffer(64, np.float32)
        asc.duplicate(t, float(core.block_idx + 1), 64)
        _flag("V_MTE3")
        asc.data_copy(ws[core.block_idx * 8], t, 8)
        if sync:
            yield asc.sync_all()
        if core.block_idx == 0:
            _flag("MTE3_MTE2")
            asc.data_copy(t, ws, 16)
            _flag("MTE2_MTE3")
            asc.data_copy(y, t, 16)
    return body


def test_reading_other_cores_partials_needs_a_sync_all():
    with pytest.raises(CrossCoreRace, match=r"core 0 reads GM \[0x10020, 0x10040\) of tensor "
                                            r"'workspace' \(its bytes \[32, 64\)\) that core 1 "
                                            r"writes with no SyncAll between them"):
        _workspace_launch(_partials(sync=False))


def test_with_a_sync_all_between_the_partials_and_their_reader_it_is_clean():
    y = _workspace_launch(_partials(sync=True))
    np.testing.assert_array_equal(y[:16], [1] * 8 + [2] * 8)


def _last_writer_wins(ctx, x, y, z):
    """Racy on purpose: every core writes its index over the same 16 elements."""
    t = _buffer(16)
    asc.duplicate(t, float(ctx.block_idx), 16)
    _flag("V_MTE3")
    asc.data_copy(z, t, 16)


@pytest.mark.parametrize("order, last", [("natural", 3), ("reverse", 0)])
def test_ixl_core_order_sets_the_order_the_cores_run_in(monkeypatch, order, last):
    monkeypatch.setenv("IXL_CORE_ORDER", order)
    out, _ = _run(_last_writer_wins, block_dim=4, debug=False)
    assert (out[:16] == last).all()


def test_debug_mode_runs_the_cores_in_the_release_order(monkeypatch):
    """Cores run interleaved in modeled time, ties in the run order (natural unless
    IXL_CORE_ORDER says otherwise), in both modes: debug mode times a kernel as release does."""
    seen = []
    monkeypatch.delenv("IXL_CORE_ORDER", raising=False)

    def body(core):
        seen.append(core.core_id)

    for debug in (True, False):
        SimulatedChip(get_chip("910B1")).launch("k", body, 8, Mode(debug=debug))
    assert seen == list(range(8)) * 2
    seen.clear()
    monkeypatch.setenv("IXL_CORE_ORDER", "shuffle")
    for _ in range(2):
        SimulatedChip(get_chip("910B1")).launch("k", body, 8, Mode(debug=True))
    first, again = seen[:8], seen[8:]
    assert sorted(first) == list(range(8)) and first != list(range(8)) and first == again


def test_a_bad_core_order_names_the_variable_and_the_choices(monkeypatch):
    monkeypatch.setenv("IXL_CORE_ORDER", "sideways")
    with pytest.raises(ValueError, match=r"^IXL_CORE_ORDER='sideways' is not a core order: use "
                                         r"one of shuffle, reverse, natural$"):
        _run(_last_writer_wins)


# ---------------------------------------------------------------- uninitialised reads

def _compute_on(loaded: bool):
    def kernel(ctx, x, y, z):
        pipe = asc.TPipe()
        qi, qo = asc.TQue(asc.TPosition.VECIN), asc.TQue(asc.TPosition.VECOUT)
        pipe.init_buffer(qi, 1, 2048)
        pipe.init_buffer(qo, 1, 2048)
        a = qi.alloc_tensor(np.float16)
        if loaded:
            asc.data_copy(a, x, 1024)
        qi.enque(a)
        a = qi.deque()
        o = qo.alloc_tensor(np.float16)
        asc.add(o, a, a, 1024)
        qo.enque(o)
        asc.data_copy(z, qo.deque(), 1024)
    return kernel


def test_a_value_computed_from_never_written_bytes_reaching_gm_is_an_error():
    with pytest.raises(UninitialisedRead) as info:
        _run(_compute_on(loaded=False))
    assert re.match(exact(
        "uninitialised read on core 0: data_copy (MTE3) copies UB [0x800, 0x1000) to GM [..) "
        "of tensor 'y', but UB [0x800, 0x1000) holds what add (VECTOR) computed from UB "
        "[0x0, 0x800), which nothing wrote in this launch "
        "(see: ixl explain 'uninitialised read')"), str(info.value))


def test_the_same_kernel_with_its_input_loaded_is_clean():
    out, (a, _) = _run(_compute_on(loaded=True))
    np.testing.assert_array_equal(out, a + a)


def test_never_written_local_buffer_still_reads_as_nan_in_release_mode_of_a_fresh_chip():
    """Release mode runs no checks; a fresh chip's UB is zero and the sum comes out zero, a
    later launch would see whatever the last one left."""
    out, _ = _run(_compute_on(loaded=False), debug=False)
    assert (out == 0).all()


def test_copying_out_a_never_written_buffer_names_it():
    def kernel(ctx, x, y, z):
        t = _buffer()
        asc.data_copy(z, t, 1024)

    with pytest.raises(UninitialisedRead) as info:
        _run(kernel)
    assert re.match(exact(
        "uninitialised read on core 0: data_copy (MTE3) copies UB [0x0, 0x800) to GM [..) of "
        "tensor 'y', but UB [0x0, 0x800) was never written in this launch "
        "(see: ixl explain 'uninitialised read')"), str(info.value))


def test_get_value_of_a_never_written_byte_is_an_error():
    def kernel(ctx, x, y, z):
        _buffer(16).get_value(3)

    with pytest.raises(UninitialisedRead, match=re.escape(
            "uninitialised read on core 0: get_value (SCALAR) reads UB [0x6, 0x8), but UB "
            "[0x6, 0x8) was never written in this launch")):
        _run(kernel)


def _tail(reduce_lanes: int):
    """100 elements loaded; whole repeats (128 lanes) computed; `reduce_lanes` summed."""
    def kernel(ctx, x, y, z):
        t, u, m = _buffer(128), _buffer(128), _buffer(128, np.uint8)
        asc.data_copy_pad(t, x, asc.DataCopyExtParams(1, 200, 0, 0))
        _flag("MTE2_V")
        asc.muls(u, t, 2.0, 128)                       # lanes 104..127 from unwritten bytes
        asc.compare_scalar(m, u, 0.0, asc.CmpMode.GE, 128)
        asc.select(u, m, u, t, 128)
        asc.whole_reduce_sum(t, u, reduce_lanes, 1)    # the sum into t[0]
        _flag("V_MTE3")
        asc.data_copy_pad(z, t, asc.DataCopyExtParams(1, 2, 0, 0))
    return kernel


def test_lanes_computed_past_the_data_and_never_used_are_clean():
    out, (a, _) = _run(_tail(reduce_lanes=100))
    expected = np.where(2 * a[:100] >= 0, 2 * a[:100], a[:100]).astype(np.float32).sum()
    assert out[0] == pytest.approx(expected, rel=2e-2)


def test_a_reduction_over_lanes_past_the_data_is_an_error():
    with pytest.raises(UninitialisedRead) as info:
        _run(_tail(reduce_lanes=128))
    assert re.match(exact(
        "uninitialised read on core 0: data_copy_pad (MTE3) copies UB [0x0, 0x2) to GM [..) of "
        "tensor 'y', but UB [0x0, 0x2) holds what muls (VECTOR) computed from UB [0xe0, 0x100), "
        "which nothing wrote in this launch (see: ixl explain 'uninitialised read')"),
        str(info.value))


def _missing_partial(written: int):
    """Core 0 writes `written` of the 16 partials it then reads back and copies out."""
    def body(core, y, ws):
        t = _buffer(64, np.float32)
        asc.duplicate(t, 1.0, 64)
        _flag("V_MTE3")
        asc.data_copy(ws, t, written)
        _flag("MTE3_MTE2")
        asc.data_copy(t, ws, 16)
        _flag("MTE2_MTE3")
        asc.data_copy(y, t, 16)
    return body


def test_workspace_bytes_never_written_in_this_launch_are_caught():
    with pytest.raises(UninitialisedRead, match=re.escape(
            "uninitialised read on core 0: data_copy (MTE3) copies UB [0x0, 0x40) to GM "
            "[0x1000, 0x1040) of tensor 'y', but UB [0x20, 0x40) holds what data_copy (MTE2) "
            "computed from GM [0x10020, 0x10040) of tensor 'workspace', which nothing wrote in "
            "this launch")):
        _workspace_launch(_missing_partial(written=8), blocks=1)


def test_workspace_written_before_it_is_read_is_clean():
    y = _workspace_launch(_missing_partial(written=16), blocks=1)
    assert (y[:16] == 1).all()


def test_release_mode_ub_keeps_the_previous_launch_bytes():
    sim = SimulatedChip(get_chip("910B1"))
    seen = []

    def write(core):
        asc.duplicate(_buffer(16), 7.0, 16)

    def read(core):
        seen.append(_buffer(16).numpy())

    sim.launch("write", write, 1, Mode())
    sim.launch("read", read, 1, Mode())
    assert (seen[0] == 7).all()


# ---------------------------------------------------------------- inputs are read-only

def _scratch_in_input(ctx, x, y, z):
    t = _buffer()
    asc.data_copy(t, x, 1024)
    _flag("MTE2_MTE3")
    asc.data_copy(y, t, 1024)                 # uses input b as scratch
    asc.data_copy(z, t, 1024)


def _device(kernel, inplace=()):
    reg = Registry()
    reg._loaded = True
    reg.register(KernelEntry(op="Add", kernel=kernel, dtypes=("float16",),
                             tiling=lambda ins, outs, attrs, c, config: LaunchPlan(1, None),
                             built_for_runtime="1.0", inplace=inplace))
    return ixl.device("910B1", debug=True, registry=reg)


def test_writing_into_an_input_is_an_error():
    dev = _device(_scratch_in_input)
    a, b = random_pair((1024,))
    with pytest.raises(InputWritten) as info:
        dev.run("Add", dev.tensor(a), dev.tensor(b))
    assert re.match(exact(
        "input written on core 0: data_copy (MTE3) writes GM [..) of input 'b' (its bytes "
        "[0, 2048)), which the op does not declare in-place: inputs are read-only; write into "
        "an output, or use the workspace as scratch (see: ixl explain 'input written')"),
        str(info.value))


def test_an_input_the_op_declares_in_place_may_be_written():
    dev = _device(_scratch_in_input, inplace=(1,))
    a, b = random_pair((1024,))
    tb = dev.tensor(b)
    out = dev.run("Add", dev.tensor(a), tb)
    np.testing.assert_array_equal(out.numpy(), a)
    np.testing.assert_array_equal(tb.numpy(), a)


# ---------------------------------------------------------------- every finding is explained

@pytest.mark.parametrize("error", [HazardError, UseAfterFree, CrossCoreRace, UninitialisedRead,
                                   InputWritten])
def test_each_new_error_has_an_explain_entry(error):
    from ixl.explain import lookup
    assert [e.symptom for e in lookup(error.symptom)] == [error.symptom]


def _queue_then_own_flag(own_id):
    """A VECIN queue with a copy enqueued and not yet dequeued, then a copy into a buffer of its
    own ordered before a vector read by an MTE2 -> V flag of id `own_id` (None: allocated)."""
    def kernel(ctx, x, y, z):
        pipe = asc.TPipe()
        q = asc.TQue(asc.TPosition.VECIN, depth=2)
        pipe.init_buffer(q, 2, 2048)
        own = asc.TBuf()
        pipe.init_buffer(own, 2048)
        event = pipe.alloc_event_id(asc.HardEvent.MTE2_V) if own_id is None else own_id
        for _ in range(2):                      # both slots enqueued: ids 0 and 1 pending
            t = q.alloc_tensor(np.float16)
            asc.data_copy(t, x, 1024)
            q.enque(t)
        mine = own.get(np.float16)
        asc.data_copy(mine, y, 1024)
        asc.set_flag(asc.HardEvent.MTE2_V, event)
        asc.wait_flag(asc.HardEvent.MTE2_V, event)
        asc.adds(mine, mine, 1.0, 1024)
        for _ in range(2):
            q.free_tensor(q.deque())
    return kernel


def test_a_hard_coded_event_id_a_queue_uses_takes_the_queues_flag():
    with pytest.raises(HazardError, match=r"no sync orders MTE2 before VECTOR"):
        _run(_queue_then_own_flag(1))


def test_an_allocated_event_id_is_one_no_queue_uses():
    _run(_queue_then_own_flag(None))


def test_alloc_event_id_runs_out_with_the_positions_ids():
    def kernel(ctx, x, y, z):
        pipe = asc.TPipe()
        pipe.init_buffer(asc.TQue(asc.TPosition.VECIN), 8, 256)
        pipe.alloc_event_id(asc.HardEvent.MTE2_V)

    with pytest.raises(ResourceLimit, match=r"alloc_event_id\(MTE2_V\): the 8 event ids of "
                                            r"MTE2->V are all taken"):
        _run(kernel)
