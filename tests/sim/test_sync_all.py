"""SyncAll: cores meet, and every core resumes from the slowest one's time."""

import numpy as np
import pytest

from ixl.ascend import Mode, SimulatedChip, get_chip
from ixl.ascend import lang as asc
from ixl.ascend.errors import IllegalInstruction, KernelTimeout


def _launch(body, blocks=4):
    return SimulatedChip(get_chip("910B1")).launch("k", body, blocks, Mode(debug=True))


def _busy(core, cycles_of_work):
    pipe = asc.TPipe()
    b = asc.TBuf()
    pipe.init_buffer(b, 4096)
    t = b.get(np.float32, 1024)
    for _ in range(cycles_of_work):
        asc.exp(t, t, 1024)


def test_every_core_resumes_after_the_slowest():
    seen = {}

    def body(core):
        _busy(core, 1 + 10 * core.block_idx)        # core 3 works the longest
        seen[core.core_id] = core.timeline.end
        yield asc.sync_all()
        seen[(core.core_id, "after")] = core.timeline.scalar

    rec = _launch(body)
    slowest = max(seen[c] for c in range(4))
    assert all(seen[(c, "after")] >= slowest for c in range(4))
    assert max(c.cycles for c in rec.cores) >= slowest


def test_a_core_that_never_reaches_the_barrier_times_out():
    def body(core):
        if core.block_idx:
            yield asc.sync_all()

    with pytest.raises(KernelTimeout, match="3 of 4 cores wait at a SyncAll"):
        _launch(body)


def test_sync_all_needs_every_block_resident():
    def body(core):
        yield asc.sync_all()

    with pytest.raises(IllegalInstruction, match="SyncAll needs every block resident at once"):
        _launch(body, blocks=100)
