import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ixl.ascend.errors import KernelTimeout
from ixl.ascend.timeline import Pipe, Timeline, _reserve, overlap


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 500), st.integers(1, 40)), min_size=1, max_size=25))
def test_port_reservations_take_the_earliest_free_time(requests):
    """Against a brute-force port: each move takes the first free cycles from its ready time."""
    busy: list = []
    taken = np.zeros(2000, bool)
    for ready, cycles in requests:
        end = _reserve(busy, ready, cycles)
        free = np.flatnonzero(~taken[ready:]) + ready
        assert end == free[cycles - 1] + 1
        taken[free[:cycles]] = True
    mask = np.zeros(2000, bool)
    for s, e in busy:
        mask[int(s):int(e)] = True
    assert (mask == taken).all()
    assert all(a[1] < b[0] for a, b in zip(busy, busy[1:]))


def test_overlap_of_interval_lists():
    assert overlap([[0, 10], [20, 30]], [[5, 25]]) == 10
    assert overlap([[0, 1]], [[2, 3]]) == 0


def _tl():
    return Timeline(scalar_issue=2, flag_latency=10, queue_depth=4)


def test_flag_orders_pipes_and_adds_latency():
    t = _tl()
    t.issue(Pipe.MTE2, "copy", 100)          # dispatched at 2, done at 102
    t.set_flag(Pipe.MTE2, Pipe.V, 0)
    t.wait_flag(Pipe.MTE2, Pipe.V, 0, 0)
    end = t.issue(Pipe.V, "add", 5)
    assert end == 102 + 10 + 5


def test_pipes_run_in_parallel_without_flags():
    t = _tl()
    t.issue(Pipe.MTE2, "copy", 100)
    assert t.issue(Pipe.V, "add", 5) == 4 + 5


def test_full_queue_stalls_the_scalar_unit():
    t = _tl()
    for _ in range(6):
        t.issue(Pipe.V, "op", 100)
    # the fifth dispatch waits until the first instruction left the 4-deep queue
    assert t.scalar > 100


def test_wait_without_set_is_a_timeout():
    with pytest.raises(KernelTimeout, match="waits for flag MTE3_MTE2 id 2"):
        _tl().wait_flag(Pipe.MTE3, Pipe.MTE2, 2, 0)
