"""The observer interface: what a core reports, to whom, and what it costs when nobody listens."""

from collections import Counter

import numpy as np
import pytest

import ixl
from ixl.ascend import observe
from ixl.ascend.observe import Observer, Space, SyncKind
from ixl.profile import ChromeTrace


class Tally(Observer):
    """Counts instructions per pipe and checks that every operand lies in its space."""

    def __init__(self):
        self.per_pipe = Counter()
        self.syncs = Counter()
        self.launches = 0
        self.phases = 0

    def launch_begin(self, launch):
        self.ub_bytes = launch.chip.ub_bytes

    def instruction(self, ins):
        self.per_pipe[ins.pipe] += 1
        assert ins.issued <= ins.start <= ins.end
        for a in (*ins.reads, *ins.writes):
            lo, hi = a.span()
            assert 0 <= lo < hi
            if a.space is Space.UB:
                assert hi <= self.ub_bytes
            else:
                assert a.tensor is not None and a.space is Space.GM

    def sync(self, ev):
        self.syncs[ev.kind] += 1

    def phase_end(self, phase):
        self.phases += 1

    def launch_end(self, record):
        self.launches += 1
        counted = Counter()
        for core in record.cores:
            for pipe, stats in core.pipes.items():
                if pipe is not ixl.ascend.timeline.Pipe.S:
                    counted[pipe] += stats.count
        self.timed = counted


CASES = [("Add", [(3000,), (3000,)]), ("Where", [(700,), (700,), (700,)]),
         ("Softmax", [(37, 300)]), ("LayerNormalization", [(8, 1000), (1000,), (1000,)]),
         ("ReduceSum", [(2, 70000)])]


@pytest.mark.parametrize("op, shapes", CASES, ids=[c[0] for c in CASES])
def test_an_attached_observer_hears_every_timed_instruction(op, shapes):
    dev = ixl.device("910B1")
    tally = Tally()
    dev.backend.attach(tally)
    rng = np.random.default_rng(0)
    args = [dev.tensor(rng.standard_normal(s).astype(np.float16) if i or op != "Where"
                       else rng.standard_normal(s) > 0) for i, s in enumerate(shapes)]
    dev.run(op, *args)
    assert dev.last_profile.path == "native"
    tally_s = tally.per_pipe.pop(ixl.ascend.timeline.Pipe.S, 0)   # get_value on the scalar unit
    assert tally.launches == 1 and tally.per_pipe == tally.timed
    assert tally.syncs[SyncKind.SET] and tally.syncs[SyncKind.WAIT]
    assert tally_s >= 0 and tally.phases >= 1
    dev.backend.detach(tally)
    dev.run(op, *args)
    assert tally.launches == 1


def test_release_mode_builds_no_operand_descriptions(monkeypatch):
    def refuse(*a, **k):
        raise AssertionError("an Access was built with no observer attached")

    monkeypatch.setattr(observe.Access, "__init__", refuse)
    dev = ixl.device("910B1", debug=False)
    a = dev.tensor(np.ones((37, 300), np.float16))
    dev.run("Softmax", a)
    dev.run("Add", a, a)
    assert dev.last_profile.path == "native"


def test_chrome_trace_observer_lays_launches_end_to_end():
    dev = ixl.device("910B1")
    trace = ChromeTrace()
    dev.backend.attach(trace)
    a = dev.tensor(np.ones(5000, np.float16))
    dev.run("Add", a, a)
    first_us = dev.last_profile.time_us
    dev.run("Relu", a)
    events = trace.trace()["traceEvents"]
    names = {e["args"]["name"] for e in events if e.get("name") == "process_name"}
    assert any(n.startswith("launch 0 ") for n in names)
    assert any(n.startswith("launch 1 ") for n in names)
    second = [e["ts"] for e in events if e["ph"] == "X" and e["pid"] >= 1000]
    assert second and min(second) >= first_us


def test_the_observer_example_in_the_architecture_doc_runs_as_documented():
    from ixl.ascend.observe import Observer, Space

    class GmTraffic(Observer):
        """Bytes moved per GM tensor."""
        def __init__(self):
            self.moved = Counter()

        def instruction(self, ins):
            for a in ins.reads + ins.writes:
                if a.space is Space.GM:
                    self.moved[a.tensor.name] += ins.nbytes

    dev = ixl.device("910B1")
    traffic = GmTraffic()
    dev.backend.attach(traffic)
    x = dev.tensor(np.ones(1024, np.float16))
    dev.run("Add", x, x)
    assert traffic.moved == Counter({'a': 2048, 'b': 2048, 'y': 2048})
