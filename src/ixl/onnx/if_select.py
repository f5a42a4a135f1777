"""If-conversion: a runtime If with tiny branches becomes both branches and a Where per output.

A runtime If costs one synchronous copy of its condition to the host (the host link's latency,
10 us on the 910B1) before its branch can launch. When both branches are a few tier-S nodes
on small tensors, each of their launches is bound by its launch overhead (about 3.5 us), so
running both on the device and selecting costs less than that copy and stays on the native
path; XLA's conditional-to-select rewrite makes the same trade. Tier-S ops cannot fault on
any data, so running the branch the condition does not take is harmless.
"""

from __future__ import annotations

import numpy as np

from ..hixl import ArgSpec, get_op, to_numpy
from ..nixl import Graph
from ..nixl.control import BRANCHES, runs_as_graphs
from ..nixl.graph import Node
from .graphs import inline

# [U] a policy, not a chip fact: at most this many launches in all (both branches' nodes and
# one Where per output), each on at most this many bytes, so that every one is bound by its
# launch overhead and together they cost about one host copy of the condition.
MAX_LAUNCHES = 3
MAX_OUTPUT_BYTES = 64 * 1024


def _selectable(node: Node, specs: dict[str, ArgSpec]) -> bool:
    if not runs_as_graphs(node):
        return False
    bodies = [node.attrs[b].graph for b in BRANCHES]
    ops = [n.op for body in bodies for n in body.nodes]
    if not all(op == "Identity" or get_op(op).tier == "S" for op in ops):
        return False
    if len(ops) + len(node.outputs) > MAX_LAUNCHES:
        return False
    cond, outputs = specs.get(node.inputs[0]), [specs.get(o) for o in node.outputs]
    if cond is None or any(s is None for s in outputs):
        return False
    return all(len(cond.shape) <= len(s.shape)          # selecting must not change a shape
               and int(np.prod(s.shape)) * to_numpy(s.dtype).itemsize <= MAX_OUTPUT_BYTES
               for s in outputs if s is not None)


def if_to_select(graph: Graph, specs: dict[str, ArgSpec]) -> Graph:
    """`graph` with each If that qualifies (see the module) replaced by both its branches,
    inlined under `<If>/then/` and `<If>/else/`, and a Where per output."""
    chosen = [_selectable(node, specs) for node in graph.nodes]
    if not any(chosen):
        return graph
    out = Graph(list(graph.inputs), list(graph.outputs), [], dict(graph.constants),
                graph.donated)
    for node, select in zip(graph.nodes, chosen):
        if not select:
            out.nodes.append(node)
            continue
        taken = []
        for branch, part in zip(BRANCHES, ("then", "else")):
            body = node.attrs[branch].graph
            names = [f"{node.name}/{part}/{o}" for o in node.outputs]
            inline(out, body, dict(zip(body.inputs, node.inputs[1:])), names,
                   f"{node.name}/{part}/")
            taken.append(names)
        for k, name in enumerate(node.outputs):
            out.nodes.append(Node("Where", (node.inputs[0], taken[0][k], taken[1][k]),
                                  (name,), {}, f"{node.name}/select{k}"))
    return out
