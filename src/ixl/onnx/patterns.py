"""Exporters' decompositions of fused ops, found and put back together.

torch.onnx and others often write LayerNormalization, RMSNormalization and Gelu as chains of
elementwise ops and reductions. Each chain runs as several launches (or one fused elementwise
kernel), where the op it spells has one native kernel of its own. `fuse_patterns` finds:

- RMSNormalization: v / sqrt(mean(v^2) + eps) (or v * reciprocal(...)), then * scale;
- LayerNormalization: d = x - mean(x), d / sqrt(mean(d^2) + eps), then * scale, + bias;
- Gelu: 0.5 * x * (1 + erf(x / sqrt(2))), in any order of its products;
- Gelu(approximate=tanh): 0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 x^3))).

A match needs every intermediate used only inside the chain, the constants right (to 1e-4)
and the reduced axes to be the trailing ones; anything else stays as it was.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..nixl import Graph
from ..nixl.graph import Node
from .graphs import prune_constants


@dataclass
class Match:
    nodes: list[Node]          # every node the fused op replaces
    fused: Node


class View:
    """Producers, consumers and constants of a graph, for matching."""

    def __init__(self, graph: Graph) -> None:
        self.graph = graph
        self.producer = {o: n for n in graph.nodes for o in n.outputs}
        self.uses: dict[str, int] = {}
        for node in graph.nodes:
            for name in node.inputs:
                self.uses[name] = self.uses.get(name, 0) + 1
        for name in graph.outputs:
            self.uses[name] = self.uses.get(name, 0) + 1
        self.consumers: dict[str, list[Node]] = {}
        for node in graph.nodes:
            for name in set(node.inputs):
                self.consumers.setdefault(name, []).append(node)

    def scalar(self, name: str) -> float | None:
        value = self.graph.constants.get(name)
        if value is None or np.size(value) != 1:
            return None
        return float(np.asarray(value, np.float64).reshape(-1)[0])

    def is_const(self, name: str, target: float) -> bool:
        value = self.scalar(name)
        return value is not None and math.isclose(value, target, rel_tol=1e-4, abs_tol=1e-12)

    def made_by(self, name: str, op: str, private: bool = True) -> Node | None:
        """The node of type `op` producing `name` (used once, when `private`)."""
        node = self.producer.get(name)
        if node is None or node.op != op or (private and self.uses.get(name, 0) != 1):
            return None
        return node

    def only_consumer(self, name: str, op: str) -> Node | None:
        users = self.consumers.get(name, [])
        if len(users) != 1 or users[0].op != op or self.uses.get(name, 0) != 1:
            return None
        return users[0]

    def other(self, node: Node, name: str) -> str:
        """The other input of a binary node."""
        a, b = node.inputs[:2]
        return b if a == name else a


def _trailing_axes(view: View, node: Node) -> int | None:
    """The first reduced axis of a ReduceMean over trailing axes ([-1], [-2, -1], ...), keeping
    dims; None for anything else."""
    if not node.attrs.get("keepdims", 1) or len(node.inputs) < 2:
        return None
    given = view.graph.constants.get(node.inputs[1])
    if given is None:
        return None
    axes = sorted(int(a) for a in np.asarray(given).reshape(-1))
    if not axes or axes[-1] != -1 or axes != list(range(axes[0], 0)):
        return None
    return axes[0]


def _squared(view: View, name: str) -> str | None:
    """v when `name` is Pow(v, 2) or Mul(v, v), used once."""
    node = view.made_by(name, "Pow")
    if node is not None and view.is_const(node.inputs[1], 2.0):
        return node.inputs[0]
    node = view.made_by(name, "Mul")
    if node is not None and node.inputs[0] == node.inputs[1]:
        return node.inputs[0]
    return None


def _normalisation(view: View, sqrt: Node) -> Match | None:
    add = view.made_by(sqrt.inputs[0], "Add")
    if add is None:
        return None
    for var_name, eps_name in (add.inputs[:2], add.inputs[1::-1]):
        eps = view.scalar(eps_name)
        mean = view.made_by(var_name, "ReduceMean")
        if eps is not None and eps > 0 and mean is not None:
            break
    else:
        return None
    axis = _trailing_axes(view, mean)
    v = _squared(view, mean.inputs[0])
    if axis is None or v is None:
        return None
    nodes = [view.producer[mean.inputs[0]], mean, add, sqrt]
    # v / s, or v * (1 / s)
    div = view.only_consumer(sqrt.outputs[0], "Div")
    if div is not None and div.inputs == (v, sqrt.outputs[0]):
        nodes.append(div)
        out = div.outputs[0]
    else:
        recip = view.only_consumer(sqrt.outputs[0], "Reciprocal")
        mul = recip and view.only_consumer(recip.outputs[0], "Mul")
        if recip is None or mul is None or view.other(mul, recip.outputs[0]) != v:
            return None
        nodes += [recip, mul]
        out = mul.outputs[0]
    # layer norm: v = x - ReduceMean(x) over the same axes
    sub = view.producer.get(v)
    center = None
    if sub is not None and sub.op == "Sub" and view.uses.get(v) == 2:
        center = view.made_by(sub.inputs[1], "ReduceMean")
        if center is not None and (center.inputs[0] != sub.inputs[0]
                                   or _trailing_axes(view, center) != axis):
            center = None
    params = []
    for op in ("Mul", "Add") if center is not None else ("Mul",):
        nxt = view.only_consumer(out, op)
        param = nxt and view.other(nxt, out)
        if nxt is None or param not in view.graph.constants or np.ndim(
                view.graph.constants[param]) != 1:
            break
        nodes.append(nxt)
        params.append(param)
        out = nxt.outputs[0]
    inputs: tuple[str, ...]
    if center is not None:
        assert sub is not None                  # the centring Sub was found first
        nodes = [center, sub] + nodes
        x = sub.inputs[0]
        inputs = (x, params[0] if params else "", params[1] if len(params) > 1 else "")
        op = "LayerNormalization"
    else:
        x = v
        inputs = (x, *params[:1])
        op = "RMSNormalization"
    outputs = (out,) if op == "RMSNormalization" else (out, "", "")
    return Match(nodes, Node(op, tuple(inputs), outputs, {"axis": axis, "epsilon": eps},
                             f"{nodes[-1].name}/{op}"))


def _half_product(view: View, inner: str, x: str) -> tuple[list[Node], str] | None:
    """0.5 * x * inner in any association: the nodes and the final output."""
    users = view.consumers.get(inner, [])
    if len(users) != 1 or users[0].op != "Mul" or view.uses.get(inner) != 1:
        return None
    first = users[0]
    partner = view.other(first, inner)
    half = view.made_by(partner, "Mul")
    if half is not None and sorted(half.inputs) == sorted([x, view.other(half, x)]) \
            and view.is_const(view.other(half, x), 0.5):
        return [half, first], first.outputs[0]             # (0.5 x) * inner
    second = view.only_consumer(first.outputs[0], "Mul")
    if second is None:
        return None
    rest = view.other(second, first.outputs[0])
    if partner == x and view.is_const(rest, 0.5):
        return [first, second], second.outputs[0]          # (x * inner) * 0.5
    if view.is_const(partner, 0.5) and rest == x:
        return [first, second], second.outputs[0]          # x * (inner * 0.5)
    return None


def _gelu(view: View, core: Node) -> Match | None:
    """From the Erf or Tanh at the heart of a Gelu."""
    plus = view.only_consumer(core.outputs[0], "Add")
    if plus is None or not view.is_const(view.other(plus, core.outputs[0]), 1.0):
        return None
    scaled = view.made_by(core.inputs[0], "Div" if core.op == "Erf" else "Mul") \
        or (core.op == "Erf" and view.made_by(core.inputs[0], "Mul"))
    if not scaled:
        return None
    if core.op == "Erf":
        a, b = scaled.inputs
        factor = math.sqrt(2) if scaled.op == "Div" else 1 / math.sqrt(2)
        if not (view.is_const(b, factor) or (scaled.op == "Mul" and view.is_const(a, factor))):
            return None
        x = a if view.is_const(b, factor) else b
        head = [scaled]
    else:
        c = math.sqrt(2 / math.pi)
        inner = next((n for n in scaled.inputs if not view.is_const(n, c)), None)
        if inner is None or not any(view.is_const(n, c) for n in scaled.inputs):
            return None
        total = view.made_by(inner, "Add")
        cubic: list[Node] | None = None
        for x, term in ((total.inputs[0], total.inputs[1]), (total.inputs[1], total.inputs[0])) \
                if total else ():
            mul = view.made_by(term, "Mul")
            pow3 = mul and next((view.made_by(n, "Pow") for n in mul.inputs
                                 if view.made_by(n, "Pow")), None)
            if pow3 is not None and mul is not None and total is not None \
                    and pow3.inputs[0] == x and view.is_const(pow3.inputs[1], 3.0) \
                    and view.is_const(view.other(mul, pow3.outputs[0]), 0.044715):
                cubic = [pow3, mul, total]
                break
        if cubic is None:
            return None
        head = cubic + [scaled]
    tail = _half_product(view, plus.outputs[0], x)
    if tail is None:
        return None
    nodes, out = tail
    attrs = {} if core.op == "Erf" else {"approximate": "tanh"}
    return Match(head + [core, plus] + nodes,
                 Node("Gelu", (x,), (out,), attrs, f"{nodes[-1].name}/Gelu"))


def fuse_patterns(graph: Graph) -> Graph:
    """`graph` with every decomposed LayerNormalization, RMSNormalization and Gelu it holds
    replaced by the op (each placed where its last node was)."""
    while True:
        view = View(graph)
        match = None
        for node in graph.nodes:
            if node.op == "Sqrt":
                match = _normalisation(view, node)
            elif node.op in ("Erf", "Tanh"):
                match = _gelu(view, node)
            if match is not None:
                break
        if match is None:
            return prune_constants(graph)
        gone = {id(n) for n in match.nodes}
        last = max(i for i, n in enumerate(graph.nodes) if id(n) in gone)
        nodes = [n for i, n in enumerate(graph.nodes) if id(n) not in gone or i == last]
        nodes[nodes.index(graph.nodes[last])] = match.fused
        graph = Graph(list(graph.inputs), list(graph.outputs), nodes, dict(graph.constants))
