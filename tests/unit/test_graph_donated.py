"""Donated graph inputs: a ScatterND into one writes in place (a KV cache updated step by step
without a new tensor), and only when that is safe."""

import dataclasses

import numpy as np
import pytest

from ixl.ascend.costs import cost_table
from ixl.hixl import BadInput, ShapeMismatch, get_op
from ixl.nixl import Graph


def scatter_graph(donated=("cache",), read_after=False) -> Graph:
    g = Graph(inputs=["cache", "rows", "slots"], outputs=["updated"],
              donated=frozenset(donated))
    g.add("ScatterND", "cache", "slots", "rows", outputs=("updated",))
    if read_after:                   # a later reader of the old cache forbids writing in place
        g.add("Relu", "cache", outputs=("old",))
        g.outputs.append("old")
    return g


def feeds(dev, capacity=8):
    rng = np.random.default_rng(0)
    cache = rng.standard_normal((capacity, 3, 4)).astype(np.float32)
    rows = rng.standard_normal((2, 3, 4)).astype(np.float32)
    slots = np.array([[5], [6]], np.int64)
    return cache, rows, slots, dev.tensor(cache, name="cache")


def test_a_scatter_into_a_donated_input_writes_in_place(dev):
    cache, rows, slots, tensor = feeds(dev)
    out = dev.run_graph(scatter_graph(), {"cache": tensor, "rows": rows, "slots": slots})
    assert out["updated"] is tensor                          # no new tensor
    expected = get_op("ScatterND").reference(cache, slots, rows)[0]
    np.testing.assert_array_equal(tensor.numpy(), expected)
    (run,) = dev.last_graph.runs
    costs = cost_table(dev.chip.arch)
    # the host reads the slots and the rows and writes one run of 2 consecutive rows
    assert run.path == "shim" and "in place" in run.reason
    assert run.time_us == pytest.approx(costs.host_copy_us(slots.nbytes)
                                        + 2 * costs.host_copy_us(rows.nbytes))
    tensor.free()
    assert dev.allocator.stats.live_bytes == 0


def test_scattered_rows_are_written_run_by_run_and_negative_indices_count_from_the_end(dev):
    cache, rows, _, tensor = feeds(dev)
    slots = np.array([[-1], [2]], np.int64)
    dev.run_graph(scatter_graph(), {"cache": tensor, "rows": rows, "slots": slots})
    np.testing.assert_array_equal(tensor.numpy(),
                                  get_op("ScatterND").reference(cache, slots, rows)[0])
    costs = cost_table(dev.chip.arch)
    assert dev.last_graph.time_us == pytest.approx(
        costs.host_copy_us(slots.nbytes) + costs.host_copy_us(rows.nbytes)
        + 2 * costs.host_copy_us(rows.nbytes // 2))
    tensor.free()


@pytest.mark.parametrize("donated, read_after", [((), False), (("cache",), True)])
def test_without_donation_or_with_a_later_reader_the_scatter_makes_a_new_tensor(
        dev, donated, read_after):
    cache, rows, slots, tensor = feeds(dev)
    out = dev.run_graph(scatter_graph(donated, read_after),
                        {"cache": tensor, "rows": rows, "slots": slots})
    assert out["updated"] is not tensor
    np.testing.assert_array_equal(tensor.numpy(), cache)         # the input is untouched
    np.testing.assert_array_equal(out["updated"].numpy(),
                                  get_op("ScatterND").reference(cache, slots, rows)[0])
    assert "in place" not in (dev.last_graph.runs[0].reason or "")
    for t in {id(t): t for t in (tensor, *out.values())}.values():
        t.free()
    assert dev.allocator.stats.live_bytes == 0


def test_a_donated_host_array_becomes_the_output_without_a_leak(dev):
    cache, rows, slots, tensor = feeds(dev)
    tensor.free()
    out = dev.run_graph(scatter_graph(), {"cache": cache, "rows": rows, "slots": slots})
    np.testing.assert_array_equal(out["updated"].numpy(),
                                  get_op("ScatterND").reference(cache, slots, rows)[0])
    assert dev.allocator.stats.live_bytes == dev.allocator.round(cache.nbytes)
    out["updated"].free()
    assert dev.allocator.stats.live_bytes == 0


def test_an_index_out_of_range_is_refused_and_nothing_is_written(dev):
    cache, rows, _, tensor = feeds(dev)
    slots = np.array([[3], [8]], np.int64)
    with pytest.raises(ShapeMismatch, match="index 8 is out of range for dim 0 of size 8"):
        dev.run_graph(scatter_graph(), {"cache": tensor, "rows": rows, "slots": slots})
    np.testing.assert_array_equal(tensor.numpy(), cache)
    tensor.free()


def test_only_graph_inputs_can_be_donated(dev):
    g = dataclasses.replace(scatter_graph(), donated=frozenset({"updated"}))
    with pytest.raises(BadInput, match="donated updated: only graph inputs can be donated"):
        g.validate()


def test_timing_only_models_the_same_copies_without_touching_data():
    import ixl
    with ixl.device("910B1", timing_only=True) as dev:
        cache, rows, slots, tensor = feeds(dev)
        dev.run_graph(scatter_graph(), {"cache": tensor, "rows": rows, "slots": slots})
        costs = cost_table(dev.chip.arch)
        assert dev.last_graph.time_us == pytest.approx(
            costs.host_copy_us(slots.nbytes) + 2 * costs.host_copy_us(rows.nbytes))
        tensor.free()
