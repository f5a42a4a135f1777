"""Replay (ascend/replay.py): a launch run again from its trace gives the outputs and modeled
times of running the kernel's Python again, launch by launch and pipe by pipe."""

import numpy as np
import pytest

import ixl
from ixl.ascend import replay
from ixl.hixl import get_op
from ixl.verify.cases import numbered_samples, sample_specs


def untraced_device():
    """A device whose traces start empty: a device takes the cores' memories, traces
    included, that an earlier device of the chip gave back (another test's launches of the
    same signature would be replayed here)."""
    dev = ixl.device("910B1")
    dev.backend.traces = dev.backend.memories.traces = replay.TraceCache()
    return dev


def launch_facts(rec) -> tuple:
    """Everything a launch's record says about modeled time, per core and per pipe."""
    launch = rec.launch
    if launch is None:
        return (rec.path, rec.time_us)
    return (rec.path, launch.time_us, launch.launch_us,
            [(c.core_id, c.cycles, c.ub_peak, c.bank_conflicts,
              sorted((s.value, n) for s, n in c.peaks.items()),
              sorted((p.name, s.busy, s.count, s.nbytes, s.flops) for p, s in c.pipes.items()),
              c.compute_busy, c.port_busy, c.l2)
             for c in launch.cores])


def run_five_times(monkeypatch, replay_on: bool, schema, specs, attrs):
    """A case on a fresh device with five inputs of the same signature: with replay on, the
    second launch is traced, the third replayed and timed (a timing memo kept), the fourth and
    fifth replayed (from the memo where L2 is as the third found it), or traced again where
    the values its trace read back (a gather's indices) are not this input's. Returns each
    run's outputs and launch facts, and whether its trace read values back."""
    monkeypatch.setenv("IXL_REPLAY", "1" if replay_on else "0")
    dev = untraced_device()
    runs = []
    for seed in (1, 2, 3, 4, 5):
        arrays = schema.random_inputs(specs, np.random.default_rng(seed), attrs)
        names = schema.input_names(len(arrays))
        inputs = [None if a is None else dev.tensor(a, name=n) for a, n in zip(arrays, names)]
        outs = dev.run(schema.name, *inputs, **attrs)
        outs = outs if isinstance(outs, tuple) else (outs,)
        got = [o.numpy().reshape(o.shape).copy() for o in outs]
        for t in (*inputs, *outs):
            if t is not None:
                t.free()
        runs.append((got, launch_facts(dev.last_profile), dev.last_profile))
    guarded = any(t.guarded for t in dev.backend.traces._traces.values())
    dev.close()
    return runs, guarded


def assert_same_runs(monkeypatch, schema, case, dtype):
    dev = ixl.device("910B1")
    specs = sample_specs(dev, schema, case, dtype)
    dev.close()
    on, guarded = run_five_times(monkeypatch, True, schema, specs, case.attrs)
    off, _ = run_five_times(monkeypatch, False, schema, specs, case.attrs)
    for (got_on, facts_on, rec_on), (got_off, facts_off, _) in zip(on, off):
        for a, b in zip(got_on, got_off):
            assert a.dtype == b.dtype and a.shape == b.shape
            assert a.tobytes() == b.tobytes()
        assert facts_on == facts_off
    if on[0][2].launch is not None:     # the native path: traced, then replayed (or refused)
        how = tuple(r.launch.replay for _, _, r in on)
        if guarded:     # each input's own indices: replayed where they are the traced ones
            assert how[:2] == ("none", "traced")
            assert set(how[2:]) <= {"replayed", "retraced"}
        else:
            assert how in (("none", "traced", "replayed", "replayed", "replayed"),
                           ("none", *["untraceable"] * 4))


def first_cases():
    """Each op's first sample case in its first dtype (the default suite's share)."""
    seen = set()
    for schema, index, case, dtype in numbered_samples():
        if schema.name not in seen:
            seen.add(schema.name)
            yield pytest.param(schema.name, index, dtype, id=f"{schema.name}-{index}-{dtype}")


def all_cases():
    for schema, index, case, dtype in numbered_samples():
        yield pytest.param(schema.name, index, dtype, id=f"{schema.name}-{index}-{dtype}")


@pytest.mark.parametrize("op,index,dtype", list(first_cases()))
def test_replay_is_the_kernel_run_again(monkeypatch, op, index, dtype):
    schema = get_op(op)
    assert_same_runs(monkeypatch, schema, schema.samples[index], dtype)


@pytest.mark.long
@pytest.mark.parametrize("op,index,dtype", list(all_cases()))
def test_replay_is_the_kernel_run_again_every_case(monkeypatch, op, index, dtype):
    schema = get_op(op)
    assert_same_runs(monkeypatch, schema, schema.samples[index], dtype)


def test_a_second_launch_of_one_signature_replays(monkeypatch):
    monkeypatch.setenv("IXL_REPLAY", "1")
    dev = untraced_device()
    states = []
    for seed in (1, 2, 3):
        x = dev.tensor(np.random.default_rng(seed).standard_normal((64, 640)).astype(np.float16))
        y = dev.run("Exp", x)
        np.testing.assert_array_equal(y.numpy(), np.exp(x.numpy().astype(np.float32))
                                      .astype(np.float16))
        states.append(dev.last_profile.launch.replay)
    assert states == ["none", "traced", "replayed"]
    stats = dev.backend.replay_stats
    assert (stats.traced, stats.replayed) == (1, 1)


def test_indices_read_back_guard_the_trace_and_a_computed_value_is_not_replayed(monkeypatch):
    """Gather reads its indices into the kernel's Python right after copying them in: they
    guard its trace (the same rows replay, other rows trace it again). InstanceNormalization
    reads back a mean it computed: what it does next is data no copy brings in, so it is
    never replayed."""
    monkeypatch.setenv("IXL_REPLAY", "1")
    dev = untraced_device()
    table = dev.tensor(np.arange(64 * 32, dtype=np.float32).reshape(64, 32))
    states = []
    for rows in ([3, 5], [3, 5], [3, 5], [60, 1], [60, 1], [0, 0]):
        idx = dev.tensor(np.array(rows, np.int32))
        out = dev.run("Gather", table, idx, axis=0)
        np.testing.assert_array_equal(out.numpy(), table.numpy()[rows])
        states.append(dev.last_profile.launch.replay)
    assert states == ["none", "traced", "replayed", "retraced", "replayed", "retraced"]
    assert dev.backend.replay_stats.retraced == 2
    x = dev.tensor(np.random.default_rng(0).standard_normal((1, 4, 64)).astype(np.float32))
    scale, bias = (dev.tensor(np.full(4, v, np.float32)) for v in (1.0, 0.0))
    for _ in range(3):
        dev.run("InstanceNormalization", x, scale, bias)
        states.append(dev.last_profile.launch.replay)
    assert states[-3:] == ["none", "untraceable", "untraceable"]
    assert dev.backend.replay_stats.reasons == {
        "get_value reads a value back into the kernel after an effect other than a copy from "
        "GM": 1}


def test_debug_mode_and_replay_off_trace_nothing(monkeypatch):
    monkeypatch.setenv("IXL_REPLAY", "1")
    for dev, env in ((ixl.device("910B1", debug=True), "1"), (ixl.device("910B1"), "0")):
        monkeypatch.setenv("IXL_REPLAY", env)
        for _ in range(3):
            x = dev.tensor(np.ones((16, 256), np.float32))
            dev.run("Relu", x)
            assert dev.last_profile.launch.replay == "none"
        assert dev.backend.replay_stats.replayed == 0


def test_a_bad_replay_setting_is_refused(monkeypatch):
    monkeypatch.setenv("IXL_REPLAY", "yes")
    with pytest.raises(ValueError, match="IXL_REPLAY='yes'.*use 1"):
        replay.replay_enabled()
