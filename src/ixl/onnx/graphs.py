"""Graph surgery the ONNX layer shares: the free names of a subgraph, inlining one graph into
another under fresh names, pruning what a rewrite left unread."""

from __future__ import annotations

from ..nixl import Graph
from ..nixl.graph import Node


def free_names(graph: Graph) -> list[str]:
    """Names a graph's nodes read that it neither receives, holds nor produces: values of an
    enclosing scope, in order of first use."""
    known = set(graph.inputs) | set(graph.constants) | {""}
    free: list[str] = []
    for node in graph.nodes:
        free.extend(n for n in node.inputs if n not in known and n not in free)
        known.update(node.outputs)
    free.extend(n for n in graph.outputs if n not in known and n not in free)
    return free


def inline(target: Graph, body: Graph, bindings: dict[str, str], outputs: list[str],
           prefix: str) -> None:
    """Append `body`'s nodes to `target`: its inputs read the bound names, its own values get
    `prefix`, its outputs land in `outputs` ('' drops one)."""
    names = dict(bindings)
    for name, value in body.constants.items():
        names[name] = prefix + name
        target.constants[prefix + name] = value
    produced = {o for node in body.nodes for o in node.outputs if o}
    renamed_outputs = {}
    for inner, outer in zip(body.outputs, outputs):
        if outer and inner in produced and inner not in renamed_outputs:
            renamed_outputs[inner] = outer
    rename = lambda n: n and names.get(n, renamed_outputs.get(n, prefix + n  # noqa: E731
                                                              if n in produced else n))
    for node in body.nodes:
        target.nodes.append(Node(node.op, tuple(rename(n) for n in node.inputs),
                                 tuple(rename(n) for n in node.outputs), dict(node.attrs),
                                 prefix + node.name))
    for inner, outer in zip(body.outputs, outputs):
        if outer and renamed_outputs.get(inner) != outer:
            target.nodes.append(Node("Identity", (rename(inner),), (outer,), {},
                                     f"{prefix}{inner}->{outer}"))


def prune_constants(graph: Graph) -> Graph:
    """`graph` without the constants no node reads any more."""
    read = {n for node in graph.nodes for n in node.inputs} | set(graph.outputs)
    return Graph(list(graph.inputs), list(graph.outputs), list(graph.nodes),
                 {n: v for n, v in graph.constants.items() if n in read}, graph.donated)


def prune_dead(graph: Graph) -> Graph:
    """`graph` without the nodes whose results nothing reads (a rewrite's leftovers)."""
    read = set(graph.outputs)
    kept: list[Node] = []
    for node in reversed(graph.nodes):
        if read.intersection(node.outputs):
            kept.append(node)
            read.update(node.inputs)
    return Graph(list(graph.inputs), list(graph.outputs), kept[::-1], dict(graph.constants),
                 graph.donated)
