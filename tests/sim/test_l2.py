"""L2 between HBM and the cores (ascend/l2.py): hits at the L2 rate, misses at HBM's, reuse
across launches and cores, and what CacheMode.DISABLE buys a streamed input [L2M][L2S]."""

import numpy as np
import pytest

import ixl
from ixl.ascend import lang as asc
from ixl.ascend.core import get_block_idx
from ixl.ascend.errors import IllegalInstruction
from ixl.ascend.l2 import L2Cache
from ixl.ascend.timeline import Pipe
from ixl.profile import launch_metrics

from .cube_kernels import Harness

TILE = 32 * 1024
MB = 1 << 20


def _reader(*tensors, write_to=None, shift=0):
    """Each block reads its share of every tensor in order through UB, tile by tile (and
    copies the last one's tiles into `write_to`); block b takes share (b + shift) mod blocks."""
    def body(core):
        blocks = core.block_num
        b = (get_block_idx() + shift) % blocks
        pipe = asc.TPipe()
        q = asc.TQue(asc.TPosition.VECIN)
        pipe.init_buffer(q, 2, TILE)
        for t in tensors:
            share = t.nbytes // blocks
            for off in range(b * share, (b + 1) * share, TILE):
                x = q.alloc_tensor(np.uint8)
                asc.data_copy(x, t.reinterpret(np.uint8)[off], TILE)
                q.enque(x)
                x = q.deque()
                if write_to is not None and t is tensors[-1]:
                    asc.data_copy(write_to.reinterpret(np.uint8)[off], x, TILE)
                q.free_tensor(x)
    return body


def _launch(h, body, blocks=1):
    return h.launch(body, block_num=blocks, kind=asc.KernelType.VECTOR, debug=False,
                    timing_only=True)


def _mte2(rec) -> float:
    return sum(c.pipes[Pipe.MTE2].busy for c in rec.cores)


def test_a_second_read_hits_in_l2_and_streams_at_the_l2_rate():
    h = Harness()
    x = h.empty((MB,), np.uint8, "x")
    cold = _launch(h, _reader(x))
    warm = _launch(h, _reader(x))
    assert cold.cores[0].l2.read_miss == MB and cold.cores[0].l2.read_hit == 0
    assert warm.cores[0].l2.read_hit == MB and warm.cores[0].l2.read_miss == 0
    # the port moves what L2 serves port_ratio (5.1 / 1.8 TB/s) times faster
    assert _mte2(warm) < _mte2(cold) / 2


def test_the_host_writing_a_tensor_drops_it_from_l2():
    h = Harness()
    x = h.empty((MB,), np.uint8, "x")
    _launch(h, _reader(x))
    h.chip.write(x.addr, np.ones(MB, np.uint8))
    again = _launch(h, _reader(x))
    assert again.cores[0].l2.read_hit == 0 and again.cores[0].l2.read_miss == MB


def test_data_one_core_brought_in_hits_for_another_core_in_the_next_launch():
    h = Harness()
    x = h.empty((2 * MB,), np.uint8, "x")
    first = _launch(h, _reader(x), blocks=2)
    assert sum(c.l2.read_hit for c in first.cores) == 0
    rec = _launch(h, _reader(x, shift=1), blocks=2)      # each core reads the other's half
    assert sum(c.l2.read_hit for c in rec.cores) == 2 * MB


def _tiles_read_by_four_cores(stagger: bool):
    """Four cores each read all 8 tiles of one tensor: in the same order, or block b starting
    at tile 2b."""
    h = Harness()
    x = h.empty((8 * TILE,), np.uint8, "x")

    def body(core):
        b = get_block_idx()
        pipe = asc.TPipe()
        q = asc.TQue(asc.TPosition.VECIN)
        pipe.init_buffer(q, 2, TILE)
        for i in range(8):
            t = q.alloc_tensor(np.uint8)
            k = (i + 2 * b) % 8 if stagger else i
            asc.data_copy(t, x.reinterpret(np.uint8)[k * TILE], TILE)
            q.enque(t)
            q.free_tensor(q.deque())
    return _launch(h, body, blocks=4)


def test_cores_reading_the_same_data_in_one_launch_fetch_it_from_hbm_once():
    """The cores run interleaved in modeled time: what one core reads first is in L2 for the
    others (each core reads the whole tensor, staggered so that each tile is first read by
    one of them)."""
    rec = _tiles_read_by_four_cores(stagger=True)
    assert sum(c.l2.read_miss for c in rec.cores) == 8 * TILE      # each tile once
    assert sum(c.l2.read_hit for c in rec.cores) == 24 * TILE
    assert all(c.l2.read_miss == 2 * TILE for c in rec.cores)      # the first two steps


def test_writes_allocate_and_a_working_set_larger_than_l2_misses():
    h = Harness()
    h.chip.l2 = L2Cache(4 * MB, 128, 0.15)       # a small L2: the test moves little data
    x, y = h.empty((8 * MB,), np.uint8, "x"), h.empty((2 * MB,), np.uint8, "y")
    first = _launch(h, _reader(x))
    assert first.cores[0].l2.read_miss == 8 * MB
    again = _launch(h, _reader(x))
    assert again.cores[0].l2.read_hit == 0      # LRU: each line left before it came round
    # a write allocates: what a kernel wrote is then read from L2
    _launch(h, _reader(x.window(0, 2 * MB), write_to=y))
    rec = _launch(h, _reader(y))
    assert rec.cores[0].l2.read_hit == 2 * MB


def test_bypassing_l2_for_a_streamed_input_keeps_the_reused_data_and_gains():
    """[L2M]: read-once data marked CACHE_MODE_DISABLE does not evict what is reused. Each
    launch reads a 2 MB table it reuses and streams 6 MB it reads once, on a 4 MB L2."""
    times = {}
    for mode in (asc.CacheMode.NORMAL, asc.CacheMode.DISABLE):
        h = Harness()
        h.chip.l2 = L2Cache(4 * MB, 128, 0.15)
        table = h.empty((2 * MB,), np.uint8, "table")
        stream = [h.empty((6 * MB,), np.uint8, f"s{i}") for i in range(2)]
        for s in stream:
            s.set_l2_cache_hint(mode)
        _launch(h, _reader(table, stream[0]))
        rec = _launch(h, _reader(table, stream[1]))
        times[mode] = rec.cores[0].cycles
        hits = rec.cores[0].l2.read_hit
        diagnosis = launch_metrics(rec).diagnosis
        if mode is asc.CacheMode.DISABLE:
            assert hits == 2 * MB and rec.cores[0].l2.bypass_read == 6 * MB
            assert "6 MB read past L2 (CacheMode.DISABLE)" in diagnosis
        else:
            assert hits == 0
    assert times[asc.CacheMode.DISABLE] < 0.9 * times[asc.CacheMode.NORMAL]


def test_persistent_mode_is_refused_as_ascend_c_does():
    h = Harness()
    x = h.empty((1024,), np.uint8, "x")
    with pytest.raises(IllegalInstruction, match=r"PERSISTENT\) is not yet supported"):
        x.set_l2_cache_hint(asc.CacheMode.PERSISTENT)


def test_cores_streaming_the_same_lines_at_once_pay_more_than_staggered_ones():
    """[MEMOPT]: cores hitting the same 512 B at the same time serialize (10-20%); cores that
    each start at their own offset do not meet."""
    same, staggered = _tiles_read_by_four_cores(False), _tiles_read_by_four_cores(True)
    assert sum(c.l2.same_line_reads for c in same.cores) > 0
    assert sum(c.l2.same_line_reads for c in staggered.cores) == 0
    assert max(c.cycles for c in staggered.cores) < max(c.cycles for c in same.cores)


def test_a_flushed_l2_makes_the_next_launch_as_cold_as_the_first():
    with ixl.device("910B1", timing_only=True) as dev:
        a = dev.empty((1024, 1024), "float16")
        times = []
        for flush in (False, False, True):
            if flush:
                dev.flush_l2()
            out = dev.run("Add", a, a)
            times.append(dev.last_profile.time_us)
            out.free()
        a.free()
    cold, warm, flushed = times
    assert warm < cold and flushed == cold
