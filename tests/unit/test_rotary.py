"""The rotary embedding fused (onnx.rotary): an exporter's query and key rotations, Mul, Gather,
Mul and Add each, become one ApplyRotaryPosEmb with the same float32 bits, and only where the
constants and shapes say it is that rotation."""

import numpy as np
import pytest

from ixl.hixl import ArgSpec
from ixl.nixl import Graph
from ixl.onnx.passes import specialized
from ixl.onnx.rotary import fuse_rotary

TOKENS, Q_HEADS, K_HEADS, DIM = 3, 4, 2, 16


def exported(perm=None, sign=None, read_query_early: bool = False) -> Graph:
    """q (tokens, 4, 16) and k (tokens, 2, 16) rotated as an exporter writes it: x * cos +
    Gather(x, perm, axis=-1) * (sin * sign), cos and sin (tokens, 1, 16) made from the
    positions."""
    half = DIM // 2
    g = Graph(inputs=["q", "k", "angles"], outputs=["qr", "kr", "early"])
    g.constants = {
        "perm": np.concatenate([np.arange(half, DIM), np.arange(half)]) if perm is None
        else perm,
        "sign": np.concatenate([-np.ones(half), np.ones(half)]).astype(np.float32)
        if sign is None else sign,
        "one": np.array([1], np.int64)}
    g.add("Cos", "angles", outputs=("c0",))
    g.add("Sin", "angles", outputs=("s0",))
    g.add("Unsqueeze", "c0", "one", outputs=("cos",))
    g.add("Unsqueeze", "s0", "one", outputs=("sin",))
    g.add("Mul", "sin", "sign", outputs=("signed",), name="sign")
    for x in ("q", "k"):
        g.add("Mul", x, "cos", outputs=(f"{x}c",))
        g.add("Gather", x, "perm", outputs=(f"{x}g",), axis=-1)
        g.add("Mul", f"{x}g", "signed", outputs=(f"{x}s",))
        g.add("Add", f"{x}c", f"{x}s", outputs=(f"{x}r",), name=f"{x}_rotary")
        if x == "q":
            g.add("Relu", "qr" if read_query_early else "q", outputs=("early",))
    return g


def feeds() -> dict:
    rng = np.random.default_rng(3)
    return {"q": rng.standard_normal((TOKENS, Q_HEADS, DIM)).astype(np.float32),
            "k": rng.standard_normal((TOKENS, K_HEADS, DIM)).astype(np.float32),
            "angles": rng.uniform(0, 6, (TOKENS, DIM)).astype(np.float32)}


def fused(graph: Graph) -> tuple[Graph, int]:
    specs = {n: ArgSpec(v.shape, "float32") for n, v in feeds().items()}
    folded, known = specialized(graph, specs)
    return fuse_rotary(folded, known.specs)


def test_a_query_and_key_rotation_pair_becomes_one_op_with_the_same_bits(dev):
    graph = exported()
    rewritten, pairs = fused(graph)
    assert pairs == 1
    assert [n.op for n in rewritten.nodes] == ["Cos", "Sin", "Unsqueeze", "Unsqueeze", "Relu",
                                               "ApplyRotaryPosEmb"]
    assert "perm" not in rewritten.constants and "sign" not in rewritten.constants
    before = {n: t.numpy() for n, t in dev.run_graph(graph, feeds(), fuse=True).items()}
    after = dev.run_graph(rewritten, feeds(), fuse=True)
    rotary = next(r for r in dev.last_graph.runs if r.op == "ApplyRotaryPosEmb")
    assert rotary.path == "native"
    for name, t in after.items():
        np.testing.assert_array_equal(t.numpy(), before[name])
        t.free()
    assert dev.allocator.stats.live_bytes == 0


@pytest.mark.parametrize("change", ["perm", "sign", "early reader"])
def test_anything_else_is_left_alone(change):
    """A Gather that does not swap the halves, a sign that does not negate the first half, or
    a reader of the query's rotation before the key's is computed: no fusion."""
    half = DIM // 2
    graph = exported(
        perm=np.arange(DIM)[::-1].copy() if change == "perm" else None,
        sign=np.concatenate([np.ones(half), -np.ones(half)]).astype(np.float32)
        if change == "sign" else None,
        read_query_early=change == "early reader")
    rewritten, pairs = fused(graph)
    assert pairs == 0
    assert sum(n.op == "Gather" for n in rewritten.nodes) == 2
