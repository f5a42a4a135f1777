"""Donated graph inputs: a ScatterND into one writes in place (a KV cache updated step by step
without a new tensor), and only when that is safe: natively when the kernel takes the case
(only the update rows written), through the host when it declines."""

import dataclasses

import numpy as np
import pytest

import ixl
from ixl.ascend.costs import cost_table
from ixl.ascend.observe import Observer, Space
from ixl.ascend.timeline import Pipe
from ixl.hixl import BadInput, ShapeMismatch, get_op
from ixl.nixl import Graph
from ixl.nixl.registry import Registry


def scatter_graph(donated=("cache",), read_after=False, reduction="none") -> Graph:
    g = Graph(inputs=["cache", "rows", "slots"], outputs=["updated"],
              donated=frozenset(donated))
    g.add("ScatterND", "cache", "slots", "rows", outputs=("updated",), reduction=reduction)
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


@pytest.fixture
def host_dev():
    """A device without the kernel library: ScatterND in place takes the host's route."""
    d = ixl.device("910B1", debug=True, registry=Registry(load_library=False))
    yield d
    d.close()


class GmWrites(Observer):
    """The GM byte ranges every launch writes."""

    def __init__(self):
        self.spans: list[tuple[int, int]] = []

    def instruction(self, ins) -> None:
        self.spans += [w.span() for w in ins.writes if w.space is Space.GM and not w.empty]


def test_the_native_kernel_writes_only_the_update_rows_into_the_donated_tensor(dev):
    cache, rows, _, tensor = feeds(dev, capacity=64)
    slots = np.array([[40], [3], [-1]], np.int64)            # on different cores, one negative
    rows = np.random.default_rng(1).standard_normal((3, 3, 4)).astype(np.float32)
    writes = GmWrites()
    dev.backend.attach(writes)
    try:
        out = dev.run_graph(scatter_graph(), {"cache": tensor, "rows": rows, "slots": slots})
    finally:
        dev.backend.detach(writes)
    assert out["updated"] is tensor                          # no new tensor
    (run,) = dev.last_graph.runs
    assert run.path == "native" and run.kernel == "scatternd_kernel", run.reason
    assert run.block_dim == 3                                # no more cores than update rows
    expected = get_op("ScatterND").reference(cache, slots, rows)[0]
    np.testing.assert_array_equal(tensor.numpy(), expected)
    row = 3 * 4 * 4                                          # bytes per cache row
    allowed = [(tensor.addr + r * row, tensor.addr + (r + 1) * row) for r in (40, 3, 63)]
    in_cache = [s for s in writes.spans if tensor.addr <= s[0] < tensor.addr + cache.nbytes]
    assert len(in_cache) == 3                                # one copy per row, nothing else
    assert all(any(lo <= a and b <= hi for lo, hi in allowed) for a, b in in_cache)
    assert {s for s in writes.spans} == set(in_cache)        # no other GM written at all
    tensor.free()
    assert dev.allocator.stats.live_bytes == 0


def test_a_repeated_index_keeps_the_last_update_in_place(dev):
    cache, rows, _, tensor = feeds(dev)
    slots = np.array([[2], [2]], np.int64)
    dev.run_graph(scatter_graph(), {"cache": tensor, "rows": rows, "slots": slots})
    assert dev.last_graph.runs[0].path == "native"
    want = cache.copy()
    want[2] = rows[1]
    np.testing.assert_array_equal(tensor.numpy(), want)
    tensor.free()


def test_the_prefill_s_consecutive_rows_move_in_one_copy_each_way(dev):
    cache, rows, slots, tensor = feeds(dev)
    dev.run_graph(scatter_graph(), {"cache": tensor, "rows": rows, "slots": slots})
    (run,) = dev.last_graph.runs
    assert run.path == "native" and run.block_dim == 2     # cells 0-3 and 4-7: both rows on 4-7
    mte3 = {core.blocks[0]: core.pipes.get(Pipe.MTE3) for core in run.launch.cores}
    assert mte3[0] is None and (mte3[1].count, mte3[1].nbytes) == (1, rows.nbytes)
    np.testing.assert_array_equal(tensor.numpy(),
                                  get_op("ScatterND").reference(cache, slots, rows)[0])
    tensor.free()


def test_where_the_kernel_declines_the_host_route_says_why(dev):
    cache, _, _, tensor = feeds(dev)
    whole = np.full((1, 8, 3, 4), 7, np.float32)         # an empty index tuple: the whole tensor
    dev.run_graph(scatter_graph(), {"cache": tensor, "rows": whole,
                                    "slots": np.zeros((1, 0), np.int64)})
    (run,) = dev.last_graph.runs
    assert run.path == "shim"
    assert run.reason == ("indices with an empty last dim: every update replaces the whole "
                          "tensor; in place into the donated data input, only the updates move")
    np.testing.assert_array_equal(tensor.numpy(), whole[0])
    tensor.free()


def test_a_combining_reduction_is_not_in_place(dev):
    cache, rows, slots, tensor = feeds(dev)
    out = dev.run_graph(scatter_graph(reduction="add"),
                        {"cache": tensor, "rows": rows, "slots": slots})
    assert out["updated"] is not tensor
    (run,) = dev.last_graph.runs
    assert run.path == "shim" and "reduction 'add'" in run.reason
    np.testing.assert_array_equal(out["updated"].numpy(), get_op("ScatterND").reference(
        cache, slots, rows, reduction="add")[0])
    out["updated"].free()
    tensor.free()


def test_on_the_host_route_a_scatter_into_a_donated_input_writes_in_place(host_dev):
    dev = host_dev
    cache, rows, slots, tensor = feeds(dev)
    out = dev.run_graph(scatter_graph(), {"cache": tensor, "rows": rows, "slots": slots})
    assert out["updated"] is tensor                          # no new tensor
    expected = get_op("ScatterND").reference(cache, slots, rows)[0]
    np.testing.assert_array_equal(tensor.numpy(), expected)
    (run,) = dev.last_graph.runs
    costs = cost_table(dev.chip.arch)
    # the host reads the slots and the rows and writes one run of 2 consecutive rows
    assert run.path == "shim" and run.reason.startswith("no native kernel; in place")
    assert run.time_us == pytest.approx(costs.host_copy_us(slots.nbytes)
                                        + 2 * costs.host_copy_us(rows.nbytes))
    tensor.free()
    assert dev.allocator.stats.live_bytes == 0


def test_scattered_rows_are_written_run_by_run_and_negative_indices_count_from_the_end(
        host_dev):
    dev = host_dev
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


@pytest.mark.parametrize("route", ["native", "host"])
def test_an_index_out_of_range_is_refused_and_nothing_is_written(dev, host_dev, route):
    dev = dev if route == "native" else host_dev
    cache, rows, _, tensor = feeds(dev)
    slots = np.array([[3], [8]], np.int64)
    with pytest.raises(ShapeMismatch, match=r"ScatterND: index 8 is out of range for dim 0 of "
                                            r"size 8 \(allowed: -8..7\)"):
        dev.run_graph(scatter_graph(), {"cache": tensor, "rows": rows, "slots": slots})
    np.testing.assert_array_equal(tensor.numpy(), cache)
    tensor.free()
    assert dev.allocator.stats.live_bytes == 0


def test_only_graph_inputs_can_be_donated(dev):
    g = dataclasses.replace(scatter_graph(), donated=frozenset({"updated"}))
    with pytest.raises(BadInput, match="donated updated: only graph inputs can be donated"):
        g.validate()


def test_timing_only_models_the_same_host_copies_without_touching_data():
    with ixl.device("910B1", timing_only=True,
                    registry=Registry(load_library=False)) as dev:
        cache, rows, slots, tensor = feeds(dev)
        dev.run_graph(scatter_graph(), {"cache": tensor, "rows": rows, "slots": slots})
        costs = cost_table(dev.chip.arch)
        assert dev.last_graph.time_us == pytest.approx(
            costs.host_copy_us(slots.nbytes) + 2 * costs.host_copy_us(rows.nbytes))
        tensor.free()
