"""Timing reused: a timing-only launch of a signature seen before takes the kept record, which is
the one a fresh simulation gives; launches that read data into the scalar unit, and runs that
compute data, debug or observe, are always simulated."""

import dataclasses

import numpy as np
import pytest

import ixl
from ixl.ascend import lang as asc
from ixl.ascend.observe import Observer
from ixl.nixl import RUNTIME_VERSION, KernelEntry, LaunchPlan
from ixl.nixl.timing_cache import TIMING_CACHE, TimingCache

CASES = [("LayerNormalization", [(256, 1024), (1024,), (1024,)], "float16"),
         ("Softmax", [(300, 700)], "float32"),
         ("Add", [(4096, 33), (33,)], "float16"),
         ("MatMul", [(256, 512), (512, 384)], "float16")]       # the Cube


def _timing(op, shapes, dtype, timing_only=True, debug=False):
    with ixl.device("910B1", timing_only=timing_only, debug=debug) as dev:
        rng = np.random.default_rng(0)
        ins = [dev.empty(s, dtype) if timing_only
               else dev.tensor(rng.standard_normal(s).astype(dtype)) for s in shapes]
        out = dev.run(op, *ins)
        record = dev.last_profile
        for t in (*ins, *(out if isinstance(out, tuple) else (out,))):
            t.free()
    assert record.path == "native", f"{op} did not run natively: {record.reason}"
    return record.launch


def _same(a, b):
    """Two launch records time the same, core by core and pipe by pipe."""
    assert a.time_us == b.time_us and a.launch_us == b.launch_us
    assert [(c.core_id, c.blocks, c.cycles, c.pipes, c.ub_peak, c.peaks) for c in a.cores] == \
        [(c.core_id, c.blocks, c.cycles, c.pipes, c.ub_peak, c.peaks) for c in b.cores]


@pytest.mark.parametrize("op, shapes, dtype", CASES, ids=[c[0] for c in CASES])
def test_a_reused_timing_equals_a_fresh_one_and_the_functional_runs(op, shapes, dtype):
    TIMING_CACHE.clear()
    fresh = _timing(op, shapes, dtype)
    assert (TIMING_CACHE.hits, TIMING_CACHE.misses, len(TIMING_CACHE)) == (0, 1, 1)
    reused = _timing(op, shapes, dtype)
    assert TIMING_CACHE.hits == 1 and reused is not fresh
    _same(reused, fresh)
    _same(reused, _timing(op, shapes, dtype, timing_only=False))    # data computed: simulated
    _same(reused, _timing(op, shapes, dtype, timing_only=False, debug=True))
    assert TIMING_CACHE.hits == 1 and len(TIMING_CACHE) == 1


def test_another_signature_is_simulated():
    TIMING_CACHE.clear()
    _timing("Add", [(4096, 33), (33,)], "float16")
    _timing("Add", [(4096, 34), (34,)], "float16")
    _timing("Add", [(4096, 33), (33,)], "float32")
    assert (TIMING_CACHE.hits, TIMING_CACHE.misses) == (0, 3)


class Counter(Observer):
    def __init__(self):
        self.instructions = 0

    def instruction(self, ins) -> None:
        self.instructions += 1


def test_observed_recorded_and_debug_runs_are_never_reused():
    TIMING_CACHE.clear()
    counter = Counter()
    for kwargs in ({"debug": True}, {"record": True}, {}):
        with ixl.device("910B1", timing_only=True, **kwargs) as dev:
            if not kwargs:
                dev.backend.attach(counter)
            a = dev.empty((64, 64), "float16")
            for _ in range(2):
                dev.run("Relu", a).free()
            a.free()
    assert len(TIMING_CACHE) == 0 and TIMING_CACHE.hits == 0
    assert counter.instructions > 0 and counter.instructions % 2 == 0   # both runs heard


def _counted_kernel(ctx, n_gm):
    """Reads a count from GM into the scalar unit and issues that many vector adds: its timeline
    follows the data."""
    pipe = asc.TPipe()
    buf = asc.TBuf()
    pipe.init_buffer(buf, 2 * ctx.chip.block_bytes)
    count = buf.get(np.int32)
    asc.data_copy_pad(count, n_gm, asc.DataCopyExtParams(1, 4, 0, 0))
    asc.set_flag(asc.HardEvent.MTE2_S, 0)
    asc.wait_flag(asc.HardEvent.MTE2_S, 0)
    work = buf.get(np.uint8)[ctx.chip.block_bytes].reinterpret(np.float16)
    for _ in range(count.get_value(0)):
        asc.adds(work, work, 1.0, 16)


COUNTED = KernelEntry(op="Relu", kernel=_counted_kernel,
                      tiling=lambda ins, outs, attrs, chip, config: LaunchPlan(1, None),
                      dtypes=("int32",), built_for_runtime=RUNTIME_VERSION,
                      arg_names=("n",))


def test_a_kernel_whose_control_flow_reads_data_is_never_reused():
    with ixl.device("910B1", debug=False) as dev:            # it follows the data ...
        times = []
        for n in (1, 50):
            t = dev.tensor(np.array([n], np.int32))
            times.append(dev.launch(COUNTED, [t], [], {}).time_us)
            t.free()
    assert times[0] < times[1]
    TIMING_CACHE.clear()
    with ixl.device("910B1", timing_only=True, debug=False) as dev:
        t = dev.empty((1,), "int32")
        first = dev.launch(COUNTED, [t], [], {}).launch
        second = dev.launch(COUNTED, [t], [], {}).launch
        t.free()
    assert len(TIMING_CACHE) == 0 and TIMING_CACHE.hits == 0   # ... so it is simulated each time
    _same(first, second)


def test_a_tiling_that_cannot_be_hashed_is_simulated():
    @dataclasses.dataclass(frozen=True)
    class ArrayTiling:
        weights: np.ndarray
    entry = dataclasses.replace(COUNTED, kernel=lambda ctx, x: None, dtypes=("float16",),
                                tiling=lambda *a: LaunchPlan(1, ArrayTiling(np.zeros(3))),
                                arg_names=("x",))
    TIMING_CACHE.clear()
    with ixl.device("910B1", timing_only=True, debug=False) as dev:
        t = dev.empty((16,), "float16")
        for _ in range(2):
            dev.launch(entry, [t], [], {})
        t.free()
    assert len(TIMING_CACHE) == 0


def test_the_cache_is_bounded_and_drops_the_least_recently_used():
    cache = TimingCache(capacity=2)
    for key in ("a", "b"):
        cache.put(key, object())
    cache.get("a")
    cache.put("c", object())
    assert len(cache) == 2 and cache.get("b") is None and cache.get("a") is not None
