"""ScatterND natively (reduction "none"), in debug mode against its golden, bit for bit: every
sample case (the combining reductions on the shim, with the kernel's reason), boundary shapes
(a row of one element, rows longer than UB, more indices than the index window, empty updates,
repeated and negative indices, every dtype), cores owning disjoint cells, and an index out of
range refused with the golden's error. The in-place form is in tests/unit/test_graph_donated.py.
"""

import ml_dtypes
import numpy as np
import pytest

import ixl
from ixl.ascend.timeline import Pipe
from ixl.hixl import ShapeMismatch, get_op
from ixl.verify.cases import iter_samples, run_case, sample_specs
from tests.helpers import run_arrays

CASES = [pytest.param(s, c, d, id=f"{c.note}-{d}") for s, c, d in iter_samples(["ScatterND"])]


@pytest.fixture(scope="module")
def dev():
    d = ixl.device("910B1", debug=True)
    yield d
    assert d.close() == []


def scatter(dev, data, indices, updates, **attrs):
    """The output (checked: native, and equal to the golden bit for bit) and its record."""
    (got,), record = run_arrays(dev, "ScatterND", [data, indices, updates], **attrs)
    assert record.path == "native", record.reason
    want = get_op("ScatterND").reference(data, indices, updates, **attrs)[0]
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)
    return got, record


def distinct(rng, dims, count):
    """`count` distinct index tuples into `dims`, some negative."""
    cells = rng.permutation(int(np.prod(dims)))[:count]
    idx = np.stack(np.unravel_index(cells, dims), -1)
    flip = rng.random(idx.shape) < 0.3
    return np.where(flip, idx - np.array(dims), idx).astype(np.int64)


@pytest.mark.parametrize("schema, case, dtype", CASES)
def test_every_sample_case(dev, schema, case, dtype):
    res = run_case(dev, schema, sample_specs(dev, schema, case, dtype), case.attrs,
                   note=case.note)
    assert res.ok, "; ".join(c.summary() for c in res.comparisons)
    reduction = case.attrs.get("reduction", "none")
    if reduction == "none":
        assert res.path == "native" and res.kernel == "scatternd_kernel", res.reason
    else:
        assert res.path == "shim" and f"reduction {reduction!r} combines" in res.reason


@pytest.mark.parametrize("dtype", [np.float32, np.float16, ml_dtypes.bfloat16, np.int64,
                                   np.int32, np.int8, np.bool_])
def test_every_dtype_and_rows_off_the_block(dev, dtype):
    rng = np.random.default_rng(0)
    data = rng.integers(0, 2, (9, 13)).astype(dtype)           # 13 elements: off any block
    updates = rng.integers(0, 2, (4, 13)).astype(dtype)
    scatter(dev, data, distinct(rng, (9,), 4), updates)


@pytest.mark.parametrize("shape, k, count", [
    ((1,), 1, 1),                    # one element
    ((6, 7), 2, 5),                  # single elements: rows of one element
    ((4, 5, 6), 2, 7),               # rows of a 3-D tensor
    ((3, 4, 5, 2), 3, 11),           # rows of two elements
    ((2, 70000), 1, 1),              # a row longer than UB: cut into chunks
    ((4096, 1), 1, 3000),            # more index tuples than the index window holds
    ((5, 6), 1, 0),                  # no updates: a copy of data
])
def test_boundary_shapes(dev, shape, k, count):
    rng = np.random.default_rng(1)
    data = rng.standard_normal(shape).astype(np.float32)
    indices = distinct(rng, shape[:k], count).reshape(count, k)
    updates = rng.standard_normal((count,) + shape[k:]).astype(np.float32)
    scatter(dev, data, indices, updates)


def test_an_empty_tensor_and_batched_indices(dev):
    rng = np.random.default_rng(2)
    scatter(dev, np.zeros((5, 0), np.float32), np.array([[1], [3]]), np.zeros((2, 0), np.float32))
    data = rng.standard_normal((8, 6)).astype(np.float16)
    indices = distinct(rng, (8, 6), 6).reshape(2, 3, 2)
    scatter(dev, data, indices, rng.standard_normal((2, 3)).astype(np.float16))


def test_a_repeated_index_keeps_the_last_update(dev):
    data = np.zeros((6, 8), np.float32)
    indices = np.array([[1], [4], [1], [-5]], np.int64)      # row 1 three times
    updates = np.arange(32, dtype=np.float32).reshape(4, 8)
    got, _ = scatter(dev, data, indices, updates)
    np.testing.assert_array_equal(got[1], updates[3])


def test_each_core_owns_its_cells_and_copies_only_them(dev):
    """Out of place every core copies its cells of data; the update rows go to the cores that
    own their cells, so the cores' work follows the indices."""
    rng = np.random.default_rng(3)
    data = rng.standard_normal((96, 64)).astype(np.float32)
    updates = rng.standard_normal((4, 64)).astype(np.float32)
    _, record = scatter(dev, data, np.array([[0], [1], [2], [95]]), updates)
    assert record.block_dim == 48 and record.tiling.per_core == 2
    written = {core.blocks[0]: core.pipes[Pipe.MTE3].nbytes for core in record.launch.cores}
    row = 64 * 4
    # its 2 rows of data, then its updates: 0 and 1 on core 0, 2 on core 1, 95 on core 47
    assert (written[0], written[1], written[47]) == (4 * row, 3 * row, 3 * row)
    assert all(written[b] == 2 * row for b in range(2, 47))


def test_an_index_out_of_range_is_the_golden_s_error(dev):
    data = dev.tensor(np.zeros((6, 7), np.float32))
    indices = dev.tensor(np.array([[2, 3], [1, 7]], np.int64))
    updates = dev.tensor(np.ones(2, np.float32))
    with pytest.raises(ShapeMismatch, match=r"ScatterND: index 7 is out of range for dim 1 of "
                                            r"size 7 \(allowed: -7..6\)"):
        dev.run("ScatterND", data, indices, updates)
    for t in (data, indices, updates):
        t.free()
    assert dev.allocator.stats.live_bytes == 0


def test_onnx_node_cases_run_natively_where_the_kernel_takes_them(monkeypatch):
    """ONNX's own ScatterND cases through IxlBackend in debug mode: reduction 'none' is a native
    launch, the combining reductions are the shim's, saying why."""
    from ixl.nixl.device import Device
    from ixl.onnx.node_cases import node_cases, run_cases
    runs = []
    original = Device.run_graph

    def run_graph(dev, graph, feeds, fuse=False):
        outputs = original(dev, graph, feeds, fuse)
        runs.extend(r for r in dev.last_graph.runs if r.op == "ScatterND")
        return outputs
    monkeypatch.setattr(Device, "run_graph", run_graph)
    names = sorted(name for name, op in node_cases().items() if op == "ScatterND")
    assert run_cases(names=names) == {name: True for name in names}
    paths = {(r.attrs.get("reduction", "none"), r.path, r.kernel) for r in runs}
    assert paths == {("none", "native", "scatternd_kernel"), ("add", "shim", None),
                     ("mul", "shim", None), ("max", "shim", None), ("min", "shim", None)}
