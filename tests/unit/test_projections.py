"""Sibling projections merged into one MatMul (onnx.projections) and the Split after it
answered with views where its parts are contiguous (nixl.views)."""

import numpy as np
import pytest

from ixl.nixl import Graph
from ixl.onnx.projections import merge_projections


def projections(rows: int) -> tuple[Graph, dict]:
    """x (1, rows, 32) times three weights (Q, K and V of different widths), and one more
    MatMul of x by a weight another node also reads (left alone)."""
    rng = np.random.default_rng(7)
    g = Graph(inputs=["x"], outputs=["q", "k", "v", "s", "u"])
    g.constants = {name: rng.standard_normal((32, n)).astype(np.float32)
                   for name, n in (("wq", 48), ("wk", 16), ("wv", 16), ("ws", 16))}
    g.add("MatMul", "x", "wq", outputs=("q0",), name="q_proj")
    g.add("Relu", "q0", outputs=("q",))
    g.add("MatMul", "x", "wk", outputs=("k",), name="k_proj")
    g.add("MatMul", "x", "wv", outputs=("v",), name="v_proj")
    g.add("MatMul", "x", "ws", outputs=("s",))
    g.add("Relu", "ws", outputs=("u",))
    return g, {"x": rng.standard_normal((1, rows, 32)).astype(np.float32)}


def test_matmuls_reading_one_activation_become_one_matmul_and_a_split():
    graph, _ = projections(1)
    merged, merges = merge_projections(graph)
    assert [(m.nodes, m.sources) for m in merges] == [
        (("q_proj", "k_proj", "v_proj"), ("wq", "wk", "wv"))]
    assert [n.op for n in merged.nodes] == ["MatMul", "Split", "Relu", "MatMul", "Relu"]
    np.testing.assert_array_equal(
        merged.constants[merges[0].weight],
        np.concatenate([graph.constants[n] for n in ("wq", "wk", "wv")], axis=1))
    assert "wq" not in merged.constants and "ws" in merged.constants


@pytest.mark.parametrize("rows, split_path", [(1, "view"), (3, "native")])
def test_the_merged_graph_gives_the_same_results(dev, rows, split_path):
    """One row: the Split's parts are contiguous ranges of the product, views at offsets (no
    launch; a fused graph run); three rows: the Split kernel runs. Either way the outputs are
    those of the three MatMuls, and every tensor is freed with its last view."""
    graph, feeds = projections(rows)
    before = {n: t.numpy() for n, t in dev.run_graph(graph, feeds).items()}
    assert dev.last_graph.launches == 6
    outputs = dev.run_graph(merge_projections(graph)[0], feeds, fuse=True)
    split = next(r for r in dev.last_graph.runs if r.op == "Split")
    assert split.path == split_path
    # the merged MatMul, the Relu after Q, the other MatMul and Relu (and the Split kernel)
    assert dev.last_graph.launches == 4 + (split_path == "native")
    for name, t in outputs.items():
        np.testing.assert_allclose(t.numpy(), before[name], rtol=1e-6, atol=1e-6)
        t.free()
    assert dev.allocator.stats.live_bytes == 0


def test_a_split_is_views_only_in_a_graph_run_with_fusion_and_contiguous_parts(dev):
    """Parts along axis 0 of (2, 12) are contiguous: views in a fused graph run; along axis 1
    they are not: the Split kernel. Run as an op (dev.run, `ixl run Split`), or with fusion
    off, a Split always runs its kernel."""
    x = np.arange(24, dtype=np.float32).reshape(2, 12)
    for axis, fuse, path in ((0, True, "view"), (1, True, "native"), (0, False, "native")):
        g = Graph(inputs=["x"], outputs=["a", "b"])
        g.constants = {"sizes": np.array([1, 1] if axis == 0 else [4, 8])}
        g.add("Split", "x", "sizes", outputs=("a", "b"), axis=axis)
        out = dev.run_graph(g, {"x": x}, fuse=fuse)
        assert dev.last_graph.runs[0].path == path
        for name, want in zip("ab", np.split(x, [1] if axis == 0 else [4], axis=axis)):
            np.testing.assert_array_equal(out[name].numpy(), want)
            out[name].free()
    parts = dev.run("Split", dev.tensor(x), dev.tensor(np.array([1, 1])), axis=0)
    assert dev.last_profile.path == "native"
    for part in parts:
        part.free()


def transpose_then_matmul(perm) -> Graph:
    g = Graph(inputs=["a", "c"], outputs=["y"])
    g.add("Transpose", "c", outputs=("ct",), perm=list(perm))
    g.add("MatMul", "a", "ct", outputs=("y",))
    return g


# (A's shape, the stored tensor's shape, perm): attention's K^T and V out of a cache laid out
# (positions, heads, head dim), a transposed 2-D weight (A batched: the batch folds into M),
# and sizes off the fractal grid, one row, a tail of K and of N
TRANSPOSED = [((1, 3, 3, 64), (16, 3, 64), (1, 2, 0)), ((1, 3, 3, 16), (16, 3, 64), (1, 0, 2)),
              ((1, 3, 5, 64), (37, 3, 64), (1, 2, 0)), ((1, 3, 5, 37), (37, 3, 64), (1, 0, 2)),
              ((2, 5, 33), (70, 33), (1, 0)), ((1, 20), (300, 20), (1, 0)),
              ((4, 9, 17), (4, 17, 23), (0, 1, 2)), ((2, 7, 19), (2, 30, 19), (0, 2, 1))]


@pytest.mark.parametrize("dtype", ["float32", "float16"])
@pytest.mark.parametrize("a_shape, c_shape, perm", TRANSPOSED)
def test_a_transposed_b_is_read_in_place_with_the_same_bits(a_shape, c_shape, perm, dtype):
    """With fusion on, a Transpose that only a MatMul reads (as B) is a view and the Cube reads
    B with its strides: the product has the bits of the Transpose launched and the MatMul on
    its contiguous result, in one launch instead of two."""
    from ixl.nixl import device

    rng = np.random.default_rng(len(a_shape) * 31 + c_shape[0])
    a = rng.standard_normal(a_shape).astype(np.float32)
    c = rng.standard_normal(c_shape).astype(np.float32)
    results = {}
    for fuse in (False, True):
        with device() as dev:
            out = dev.run_graph(transpose_then_matmul(perm),
                                {"a": dev.tensor(a, dtype), "c": dev.tensor(c, dtype)}, fuse=fuse)
            results[fuse] = out["y"].numpy()
            paths = [(r.op, r.path) for r in dev.last_graph.runs]
            out["y"].free()
        assert paths == ([("Transpose", "view"), ("MatMul", "native")] if fuse else
                         [("Transpose", "native"), ("MatMul", "native")])
    np.testing.assert_array_equal(results[True], results[False])
    want = np.matmul(a, np.transpose(c, perm))
    np.testing.assert_allclose(results[True].astype(np.float32), want,
                               rtol=1e-2 if dtype == "float16" else 1e-5, atol=5e-2)


def test_a_transpose_read_by_anything_but_a_matmul_b_launches(dev):
    g = Graph(inputs=["a", "c"], outputs=["y", "z"])
    g.add("Transpose", "c", outputs=("ct",), perm=[1, 0])
    g.add("MatMul", "a", "ct", outputs=("y",))
    g.add("Relu", "ct", outputs=("z",))
    out = dev.run_graph(g, {"a": np.ones((2, 3), np.float32),
                            "c": np.ones((4, 3), np.float32)}, fuse=True)
    assert dev.last_graph.runs[0].path == "native"
    for t in out.values():
        t.free()
