"""The rotary embedding fused: a layer's query and key rotations, as an exporter leaves them
(six launches a layer), become one ApplyRotaryPosEmb (CANN's fused op for the pair).

An exporter writes x * cos + rotate_half(x) * sin as

    Add(Mul(x, cos), Mul(Gather(x, perm, axis=-1), Mul(sin, sign)))

with `perm` the constant that swaps the halves of the head dim and `sign` the constant
(-1, ..., -1, 1, ..., 1) that negates the first half: rotate_half(x) = (-x2, x1) =
Gather(x, perm) * sign. The rewrite finds that shape with the constants as said, for a query and
a key that share cos and sin (x (*tokens, heads, head_dim), cos and sin (*tokens, 1,
head_dim)), and puts one ApplyRotaryPosEmb in their place; the Mul by `sign`, read by nothing
else any more, goes too. It needs the shapes, so it runs on a graph specialised to its inputs.

It keeps the graph's meaning exactly: the fused op computes x1 * cos1 - x2 * sin1 and
x2 * cos2 + x1 * sin2, and x2 * (-sin1) is -(x2 * sin1) exactly, so in float32 every output
has the same bits; float16 and bfloat16 round once instead of after each step.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..hixl import ArgSpec
from ..nixl import Graph
from ..nixl.graph import Node
from .graphs import prune_constants, prune_dead
from .patterns import View


@dataclass(frozen=True)
class Rotation:
    """One rotate_half embedding found: its input, its tables and the nodes it spans."""

    x: str
    cos: str
    sin: str                        # the table before its sign
    out: str
    nodes: tuple[int, ...]          # the Mul, Gather, Mul and Add, by index


def _constant(graph: Graph, name: str) -> np.ndarray | None:
    value = graph.constants.get(name)
    return None if value is None else np.asarray(value)


def _swaps_halves(perm: np.ndarray | None, dim: int) -> bool:
    half = dim // 2
    return perm is not None and dim % 2 == 0 and perm.shape == (dim,) and np.array_equal(
        perm, np.concatenate([np.arange(half, dim), np.arange(half)]))


def _negates_first_half(sign: np.ndarray | None, dim: int) -> bool:
    if sign is None or sign.ndim == 0 or sign.shape[-1] != dim or sign.size != dim:
        return False
    half = dim // 2
    row = sign.reshape(dim).astype(np.float64)
    return bool(np.all(row[:half] == -1) and np.all(row[half:] == 1))


class _Finder(View):
    """The rotations of a specialised graph: its producers and readers, and every value's
    shape."""

    def __init__(self, graph: Graph, specs: dict[str, ArgSpec]) -> None:
        super().__init__(graph)
        self.specs = specs
        self.index = {id(node): i for i, node in enumerate(graph.nodes)}

    def indexed(self, name: str, op: str) -> tuple[int, Node] | None:
        """The node of type `op` that makes `name`, read only once, and its index."""
        node = self.made_by(name, op)
        return None if node is None else (self.index[id(node)], node)

    def rotation(self, i: int) -> Rotation | None:
        """The rotation whose Add is node i, or None."""
        add = self.graph.nodes[i]
        if add.op != "Add" or len(add.inputs) != 2:
            return None
        for plain, rotated in (add.inputs, add.inputs[::-1]):
            found = self._match(i, plain, rotated)
            if found is not None:
                return found
        return None

    def _match(self, i: int, plain: str, rotated: str) -> Rotation | None:
        first, second = self.indexed(plain, "Mul"), self.indexed(rotated, "Mul")
        if first is None or second is None:
            return None
        for x, cos in (first[1].inputs, first[1].inputs[::-1]):
            for gathered, signed in (second[1].inputs, second[1].inputs[::-1]):
                gather = self.indexed(gathered, "Gather")
                if gather is None or gather[1].inputs[0] != x:
                    continue
                spec = self.specs.get(x)
                if spec is None or len(spec.shape) < 2:
                    continue
                dim = spec.shape[-1]
                if gather[1].attrs.get("axis", 0) not in (-1, len(spec.shape) - 1) \
                        or not _swaps_halves(_constant(self.graph, gather[1].inputs[1]), dim):
                    continue
                sin, total = self._unsigned(signed, dim), self.graph.nodes[i].outputs[0]
                if sin is not None and self._fits(x, cos, sin, total):
                    return Rotation(x, cos, sin, total, (first[0], gather[0], second[0], i))
        return None

    def _unsigned(self, signed: str, dim: int) -> str | None:
        """The table `signed` is the product of, by the first-half negation."""
        node = self.made_by(signed, "Mul", private=False)      # every rotation reads it
        if node is None or len(node.inputs) != 2:
            return None
        for table, sign in (node.inputs, node.inputs[::-1]):
            if table not in self.graph.constants \
                    and _negates_first_half(_constant(self.graph, sign), dim):
                return table
        return None

    def _fits(self, x: str, cos: str, sin: str, total: str) -> bool:
        """x (*tokens, heads, dim), cos and sin (*tokens, 1, dim), one dtype, the sum x's
        shape: ApplyRotaryPosEmb's contract."""
        sx, sc, ss = (self.specs.get(n) for n in (x, cos, sin))
        out = self.specs.get(total)
        if sx is None or sc is None or ss is None or out is None:
            return False
        table = sx.shape[:-2] + (1, sx.shape[-1])
        return sc.shape == ss.shape == table and out.shape == sx.shape \
            and sx.dtype == sc.dtype == ss.dtype == out.dtype


def fuse_rotary(graph: Graph, specs: dict[str, ArgSpec]) -> tuple[Graph, int]:
    """`graph` (specialised: `specs` has its values' shapes) with each query and key rotation
    pair that shares cos and sin as one ApplyRotaryPosEmb, and how many pairs were fused. The
    fused node takes the place of the pair's later Add; a pair is fused only when nothing
    reads the earlier rotation before that."""
    finder = _Finder(graph, specs)
    found = [r for r in (finder.rotation(i) for i in range(len(graph.nodes))) if r is not None]
    replaced: dict[int, list[Node]] = {}
    waiting: dict[tuple[str, str], Rotation] = {}
    pairs = 0
    for rot in found:
        key = (rot.cos, rot.sin)
        earlier = waiting.pop(key, None)
        if earlier is None:
            waiting[key] = rot
            continue
        at = rot.nodes[-1]
        if any(earlier.out in node.inputs for node in graph.nodes[earlier.nodes[-1] + 1:at]):
            waiting[key] = rot
            continue
        for i in earlier.nodes + rot.nodes:
            replaced[i] = []
        replaced[at] = [Node("ApplyRotaryPosEmb", (earlier.x, rot.x, rot.cos, rot.sin),
                             (earlier.out, rot.out), {},
                             f"{graph.nodes[earlier.nodes[-1]].name}/rotary")]
        pairs += 1
    nodes = [new for i, node in enumerate(graph.nodes) for new in replaced.get(i, [node])]
    fused = Graph(list(graph.inputs), list(graph.outputs), nodes, dict(graph.constants),
                  graph.donated)
    return prune_constants(prune_dead(fused)), pairs
