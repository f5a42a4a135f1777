"""Lockstep (ascend/lockstep.py): a memoised launch's cores apply their effects together, one
numpy call over the stack of their memories, where the order of GM's bytes allows it; outputs
and modeled times stay those of running the kernel again."""

import ml_dtypes
import numpy as np
import pytest

from ixl.ascend import lockstep
from ixl.ascend.lockstep import _gm_ordered, _grid, _Touch

from .test_memo import same_with_replay_off


def test_grid_finds_the_cores_axes():
    sizes, strides = _grid(np.array([[0, 5], [256, 5], [0, 9], [256, 9]]))
    assert sizes == (2, 2) and strides.tolist() == [[0, 4], [256, 0]]
    assert _grid(np.array([[0], [1], [5]])) is None


def places(sizes, strides) -> list:
    """Each core's offset from a grid, as `_grid` reads them (innermost axis last)."""
    index = np.indices(sizes).reshape(len(sizes), -1).T
    return (index @ np.array(strides)).tolist()


@pytest.mark.parametrize("sizes, strides", [((24,), (4608,)), ((12, 2, 2), (512, 0, 256)),
                                            ((2, 2, 2), (128, 98304, 49152))])
def test_grid_reads_back_what_made_it(sizes, strides):
    offsets = np.array(places(sizes, strides))[:, None]
    found, steps = _grid(offsets)
    assert places(found, steps[:, 0]) == offsets[:, 0].tolist()


def touch(n, lo, hi, write, at=0, cube=False):
    return _Touch(0, np.array(lo), np.array(hi), n, write, at, cube)


def test_interleaved_columns_of_one_output_are_private():
    # two cores write alternate 64-byte columns of the same rows: their hulls overlap,
    # their bytes do not
    rows = np.arange(8) * 256
    assert _gm_ordered([touch(0, rows, rows + 64, True), touch(1, rows + 64, rows + 128, True)])


def test_shared_bytes_one_core_writes_keep_their_order():
    assert not _gm_ordered([touch(0, [0], [128], True), touch(1, [64], [96], False)])
    assert not _gm_ordered([touch(0, [0], [128], True), touch(1, [0], [128], True)])
    assert _gm_ordered([touch(0, [0], [128], False), touch(1, [0], [128], False)])


def test_vector_cores_read_a_cube_output_only_after_it():
    cube_writes = touch(0, [0], [256], True, at=3, cube=True)
    assert _gm_ordered([cube_writes, touch(1, [0], [128], False, at=7)])
    assert not _gm_ordered([cube_writes, touch(1, [0], [128], False, at=2)])
    assert not _gm_ordered([touch(0, [0], [256], False, at=3, cube=True),
                            touch(1, [0], [128], True, at=7)])


@pytest.fixture
def plans(monkeypatch):
    made = []
    plan = lockstep.plan

    def recording(memo, trace, cores):
        found = plan(memo, trace, cores)
        made.append(found)
        return found
    monkeypatch.setattr(lockstep, "plan", recording)
    return made


def launches(op, shapes, dtype, runs=6):
    def work(dev):
        rng = np.random.default_rng(11)
        for _ in range(runs):
            ins = [dev.tensor(rng.standard_normal(s).astype(dtype)) for s in shapes]
            y = dev.run(op, *ins)
            got = y.numpy().copy()
            for t in (*ins, y):
                t.free()
            yield got
    return work


@pytest.mark.parametrize("op, shapes, dtype", [
    ("MatMul", [(256, 512), (512, 384)], np.float16),     # many AIC, tiles on a grid
    ("MatMul", [(64, 576), (576, 192)], ml_dtypes.bfloat16),   # a dtype numpy has no name for
    ("MatMul", [(1, 576), (576, 1536)], np.float32),      # a decode GEMV
    ("MatMul", [(1, 1280), (1280, 4)], np.float32),       # split-K: two phases
    ("Add", [(96, 4096), (96, 4096)], np.float32),        # every AIV
    ("Softmax", [(64, 1000)], np.float16),
])
def test_lockstep_changes_nothing(monkeypatch, plans, op, shapes, dtype):
    timings = same_with_replay_off(monkeypatch, launches(op, shapes, dtype))
    assert "memo" in timings
    joined = [p for p in plans if p is not None]
    assert joined and all(p.joint > 0 for p in joined)
