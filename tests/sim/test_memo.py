"""The timing memo (ascend/memo.py): a replay from an L2 state an earlier replay of the same
trace started from takes that replay's timing, and its outputs and modeled times are those of
running the kernel again, launch by launch and pipe by pipe; from any other L2 state it is
timed again."""

import numpy as np

from ixl.ascend import replay
from ixl.ascend.gm import Segment
from ixl.ascend.l2 import READ, WRITE, CacheMode, L2Cache

from .test_replay import launch_facts, untraced_device


def runs(monkeypatch, replay_on: bool, work) -> list:
    """`work(dev)` on a fresh device: each launch's outputs, facts, and how it ran."""
    monkeypatch.setenv("IXL_REPLAY", "1" if replay_on else "0")
    dev = untraced_device()
    out = []
    for got in work(dev):
        launch = dev.last_profile.launch
        out.append((got, launch_facts(dev.last_profile), launch.replay, launch.timing))
    dev.close()
    return out


def same_with_replay_off(monkeypatch, work) -> list[str]:
    """Asserts replay on and off agree on every launch's bytes and facts; returns how each
    launch with replay on was timed."""
    on, off = runs(monkeypatch, True, work), runs(monkeypatch, False, work)
    assert len(on) == len(off)
    for (got_on, facts_on, _, _), (got_off, facts_off, _, timing) in zip(on, off):
        assert got_on.tobytes() == got_off.tobytes()
        assert facts_on == facts_off
        assert timing == "timed"
    return [timing for *_, timing in on]


def exp_fresh_buffers(dev):
    for seed in range(1, 8):
        x = dev.tensor(np.random.default_rng(seed).standard_normal((64, 640)).astype(np.float16))
        y = dev.run("Exp", x)
        got = y.numpy().copy()
        np.testing.assert_array_equal(got, np.exp(x.numpy().astype(np.float32))
                                      .astype(np.float16))
        x.free()
        y.free()
        yield got


def test_a_replay_from_the_same_l2_takes_the_memo(monkeypatch):
    timings = same_with_replay_off(monkeypatch, exp_fresh_buffers)
    assert timings == ["timed"] * 3 + ["memo"] * 4


def exp_warm_and_flushed(dev):
    """One input read again and again (its lines in L2 by then), L2 flushed twice."""
    x = dev.tensor(np.random.default_rng(0).standard_normal((256, 1024)).astype(np.float32))
    for i in range(10):
        if i in (6, 8):
            dev.backend.flush_l2()
        y = dev.run("Exp", x)
        got = y.numpy().copy()
        y.free()
        yield got


def test_a_replay_from_another_l2_state_is_timed_again(monkeypatch):
    timings = same_with_replay_off(monkeypatch, exp_warm_and_flushed)
    assert "memo" in timings
    assert "timed" in timings[4:]          # a state no memo started from, after one was kept


def split_k_head(dev):
    """The classifier head 1 x 1280 by 1280 x 4: split-K, its parts summed after a SyncAll
    (a launch of two phases)."""
    rng = np.random.default_rng(3)
    for _ in range(6):
        a = dev.tensor(rng.standard_normal((1, 1280)).astype(np.float32))
        b = dev.tensor(rng.standard_normal((1280, 4)).astype(np.float32))
        y = dev.run("MatMul", a, b)
        got = y.numpy().copy()
        np.testing.assert_allclose(got, a.numpy() @ b.numpy(), rtol=1e-4, atol=1e-4)
        for t in (a, b, y):
            t.free()
        yield got


def test_a_launch_of_several_phases_is_memoised_exactly(monkeypatch):
    timings = same_with_replay_off(monkeypatch, split_k_head)
    assert timings[3:] == ["memo"] * 3


def test_a_memo_whose_second_phase_does_not_hold_leaves_l2_as_it_was(monkeypatch):
    """The first phase's lines entered L2 before the second phase's fingerprint was checked:
    on its mismatch L2 goes back as it was, and the launch is timed from the L2 it found (its
    facts, and the next launches', agree with replay off)."""
    restored = []
    restore = L2Cache.restore
    monkeypatch.setattr(L2Cache, "restore",
                        lambda self, saved: (restored.append(1), restore(self, saved)))

    def work(dev):
        rng = np.random.default_rng(5)
        a = dev.tensor(rng.standard_normal((1, 1280)).astype(np.float32))
        b = dev.tensor(rng.standard_normal((1280, 4)).astype(np.float32))
        for i in range(7):
            if i == 4 and replay.replay_enabled():
                spoiled = [m for t in dev.backend.traces._traces.values() for m in t.memos
                           if len(m.phases) == 2]
                assert spoiled
                for memo in spoiled:
                    memo.phases[1].key = b"not this state"
            y = dev.run("MatMul", a, b)
            got = y.numpy().copy()
            y.free()
            yield got

    timings = same_with_replay_off(monkeypatch, work)
    assert timings[3] == "memo" and timings[4] == "timed"
    assert restored


MB = 1 << 20
STEP = 64 * 1024


def _stream(cache: L2Cache, seg) -> tuple[list, np.ndarray, int]:
    """A phase of one core reading all of `seg` in 64 KB moves: each move's answers, and the
    phase's eviction checks and how many starting entries they evicted."""
    from ixl.ascend.replay import _Window

    phase = cache.phase(1)
    view = phase.view(0)
    window = _Window(seg, seg.addr, CacheMode.NORMAL)
    answers = []
    for i, off in enumerate(range(0, seg.nbytes, STEP)):
        answers.append(view.access(window, off, 1, STEP, STEP, ready=float(i)))
        view.timed(float(i + 1), 0.0)
    return answers, np.array(phase.points, np.int64), phase.evicted


def _state(batches: int, dirty: bool = False, resident: int = 0):
    """A 1 MB L2 holding 768 KB of a filler entered in `batches` entries (written, when
    `dirty`), and the first `resident` bytes of the segment a phase then streams."""
    filler, streamed = (Segment(a, MB, np.zeros(MB, np.uint8)) for a in (0, 1 << 30))
    cache = L2Cache(MB, 128, 0.15)
    lines = 768 * 1024 // 128
    cut = np.linspace(0, lines, batches + 1).astype(int)
    cache.enter([(filler, slice(int(lo), int(hi)), WRITE if dirty else READ)
                 for lo, hi in zip(cut[:-1], cut[1:])])
    if resident:
        cache.enter([(streamed, slice(0, resident // 128), READ)])
    return cache, streamed


def test_the_fingerprint_holds_what_a_phase_meets_not_where_evicted_entries_begin():
    """A phase that evicts everything L2 held meets the same answers whether those lines
    were one entry of the LRU order or three: one fingerprint (the memo of one is exact for
    the other); dirty lines among them, or a line of the phase already resident, change the
    answers and the fingerprint."""
    base, seg = _state(1)
    answers, points, evicted = _stream(base, seg)
    regions = [(seg, slice(0, MB // 128))]

    def print_of(**state) -> bytes:
        cache, streamed = _state(**state)
        return cache.fingerprint(points, evicted, [(streamed, regions[0][1])])

    def answers_of(**state) -> list:
        return _stream(*_state(**state))[0]

    key = print_of(batches=1)
    assert print_of(batches=3) == key
    assert answers_of(batches=3) == answers
    assert print_of(batches=1, dirty=True) != key
    assert answers_of(batches=1, dirty=True) != answers
    assert print_of(batches=1, resident=STEP) != key
    assert answers_of(batches=1, resident=STEP) != answers


def scatter_and_gather_at(positions):
    """ScatterND writes an update row at each position in turn (the KV cache's write), then
    Gather reads rows back at it: both read their indices back into the kernel's Python."""
    def work(dev):
        rng = np.random.default_rng(7)
        data = dev.tensor(rng.standard_normal((64, 192)).astype(np.float32))
        update = dev.tensor(rng.standard_normal((1, 192)).astype(np.float32))
        for pos in positions:
            idx = dev.tensor(np.array([[pos]], np.int64))
            y = dev.run("ScatterND", data, idx, update)
            got = y.numpy().copy()
            want = data.numpy().copy()
            want[pos] = update.numpy()[0]
            np.testing.assert_array_equal(got, want)
            y.free()
            yield got
            rows = dev.tensor(np.array([pos, 63 - pos], np.int64))
            z = dev.run("Gather", data, rows)
            got = z.numpy().copy()
            np.testing.assert_array_equal(got, data.numpy()[[pos, 63 - pos]])
            for t in (idx, rows, z):
                t.free()
            yield got
    return work


def test_a_launch_that_reads_its_indices_back_replays_while_they_hold(monkeypatch):
    """The values a traced launch read back (its indices) guard its trace: the same indices
    replay it (timed, then from a memo); other indices run its Python again and trace it
    anew ("retraced"), and so do the first ones when they come back; every launch as with
    replay off."""
    positions = [3, 3, 3, 3, 5, 5, 5, 3, 3]
    same_with_replay_off(monkeypatch, scatter_and_gather_at(positions))
    monkeypatch.setenv("IXL_REPLAY", "1")
    dev = untraced_device()
    how = []
    for _ in scatter_and_gather_at(positions)(dev):
        how.append(dev.last_profile.launch.replay)
    dev.close()
    scatter, gather = how[0::2], how[1::2]
    for kernel in (scatter, gather):
        assert kernel == ["none", "traced", "replayed", "replayed", "retraced", "replayed",
                          "replayed", "retraced", "replayed"]
