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
