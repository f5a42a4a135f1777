"""Sibling projections merged: MatMuls that multiply one activation by different constant
weights (a decoder layer's Q, K and V; its gate and up) become one MatMul by the weights
concatenated along N, once, when the graph is prepared, and a Split of its result.

A decode step is bound by launches (a projection of one row costs its launch overhead more
than its arithmetic), so three launches that read the same A become one that reads A once and
spreads the concatenated columns over the Cube cores. Where the activation has one row (a
decode step), each part of the Split is a contiguous range of the result and the runtime
answers the Split with views (nixl.views): no launch, no copy. With more rows (a prefill) the
Split is one launch of the Split kernel, still one fewer than before for three projections.

The merge keeps the graph's meaning exactly: every output is the same product, its columns
computed from the same rows of A and the same columns of the weights.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..nixl import Graph
from ..nixl.graph import Node
from .graphs import prune_constants


@dataclass(frozen=True)
class Merged:
    """One merge: the MatMul nodes it replaced and the concatenated weight's name."""

    nodes: tuple[str, ...]
    weight: str
    sources: tuple[str, ...]            # the weights it concatenates, in order


def _weight(graph: Graph, node: Node, uses: dict[str, int]) -> np.ndarray | None:
    """The node's B when it is a 2-D constant that nothing else reads."""
    if node.op != "MatMul" or len(node.inputs) != 2 or node.inputs[0] in graph.constants:
        return None
    b = graph.constants.get(node.inputs[1])
    if b is None or np.ndim(b) != 2 or uses.get(node.inputs[1]) != 1:
        return None
    return np.asarray(b)


def merge_projections(graph: Graph) -> tuple[Graph, list[Merged]]:
    """`graph` with every group of two or more MatMuls that read the same A and each a
    constant 2-D weight of the same K and dtype merged (at the first one's place), and what
    was merged."""
    uses: dict[str, int] = {}
    for node in graph.nodes:
        for name in node.inputs:
            uses[name] = uses.get(name, 0) + 1
    groups: dict[tuple, list[int]] = {}
    for i, node in enumerate(graph.nodes):
        b = _weight(graph, node, uses)
        if b is not None:
            groups.setdefault((node.inputs[0], b.shape[0], b.dtype.str), []).append(i)
    constants = dict(graph.constants)
    replaced: dict[int, list[Node]] = {}
    merges: list[Merged] = []
    for members in groups.values():
        if len(members) < 2:
            continue
        nodes = [graph.nodes[i] for i in members]
        first = nodes[0]
        weight, result, sizes = (f"{first.name}/merged_{s}" for s in ("weight", "y", "split"))
        parts = [np.asarray(graph.constants[n.inputs[1]]) for n in nodes]
        constants[weight] = np.concatenate(parts, axis=1)
        constants[sizes] = np.array([p.shape[1] for p in parts], np.int64)
        replaced[members[0]] = [
            Node("MatMul", (first.inputs[0], weight), (result,), {}, f"{first.name}/merged"),
            Node("Split", (result, sizes), tuple(n.outputs[0] for n in nodes), {"axis": -1},
                 f"{first.name}/merged_split")]
        for i in members[1:]:
            replaced[i] = []
        merges.append(Merged(tuple(n.name for n in nodes), weight,
                             tuple(n.inputs[1] for n in nodes)))
    nodes = [new for i, node in enumerate(graph.nodes) for new in replaced.get(i, [node])]
    return prune_constants(Graph(list(graph.inputs), list(graph.outputs), nodes, constants,
                                 graph.donated)), merges
