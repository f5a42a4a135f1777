import numpy as np
import pytest

from ixl.hixl import ShapeMismatch
from ixl.nixl import Graph


def test_graph_runs_node_by_node_and_frees_intermediates(dev):
    g = Graph(inputs=["x", "y"], outputs=["out"])
    s = g.add("Add", "x", "y")
    g.add("Relu", s, outputs=("out",))
    x = np.linspace(-2, 2, 1000, dtype=np.float32)
    out = dev.run_graph(g, {"x": x, "y": np.full(1000, 0.5, np.float32)})["out"]
    np.testing.assert_array_equal(out.numpy(), np.maximum(x + 0.5, 0))
    assert dev.last_graph.launches == 2 and dev.last_graph.time_us > dev.last_graph.launch_us > 0
    assert [r.op for r in dev.last_graph.runs] == ["Add", "Relu"]
    out.free()
    assert dev.allocator.stats.live_bytes == 0


def test_graph_reading_an_undefined_tensor_is_refused(dev):
    g = Graph(inputs=["x"], outputs=["y"])
    g.add("Relu", "nope", outputs=("y",))
    with pytest.raises(ShapeMismatch, match="reads nope, which nothing produces"):
        dev.run_graph(g, {"x": np.zeros(4, np.float32)})


def test_tensors_that_die_together_are_freed_in_the_graph_order(dev, monkeypatch):
    """Freed memory is reused by the next tensors, whose addresses decide their L2 lines and
    so modeled times: tensors dying at one node go in the order the node reads them, never in
    a set's order, which follows the string hash's seed and so changes from process to
    process."""
    from ixl.nixl.tensor import DeviceTensor

    made, freed = [], []
    run, free = dev.run, DeviceTensor.free
    monkeypatch.setattr(dev, "run", lambda *a, **k: (lambda t: (made.append(t), t)[1])(
        run(*a, **k)))
    monkeypatch.setattr(DeviceTensor, "free", lambda t: (freed.append(t), free(t)))
    g = Graph(inputs=["x"], outputs=["out"])
    names = [g.add("Relu", "x", outputs=(f"t{k}",)) for k in range(6)]
    total = names[0]
    for k, name in enumerate(names[1:], 1):
        total = g.add("Add", total, name, outputs=("out",) if k == 5 else (f"s{k}",))
    out = dev.run_graph(g, {"x": np.ones(64, np.float32)})["out"]
    np.testing.assert_array_equal(out.numpy(), np.full(64, 6, np.float32))
    label = {id(t): n for t, n in zip(made, [*names, "s1", "s2", "s3", "s4", "out"])}
    order = [label[id(t)] for t in freed if id(t) in label]
    assert order == ["t0", "t1", "s1", "t2", "s2", "t3", "s3", "t4", "s4", "t5"]
