"""What a model would run as, before running anything: each ONNX op type, how many nodes use
it, and the path its ixl ops take (native kernel, view, shim) or why ixl cannot run it."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field

import onnx

from ..nixl import REGISTRY, Graph
from ..nixl.control import BRANCHES, runs_as_graphs
from ..nixl.graph import Node
from ..nixl.views import VIEW_OPS
from .convert import default_opset, initializer_array, value_info
from .translate import translate_node


def op_path(op: str) -> str:
    """Where an ixl op runs when its kernel takes the case (float16, bfloat16, float32). An If
    from ONNX reads its condition on the host and runs its branch's ops (counted with it) on
    the device, or, with tiny branches, runs both and selects on the device."""
    if op in VIEW_OPS:
        return "view"
    if op == "If":
        return "host"
    return "native" if REGISTRY.native(op) is not None else "shim"


def _ops(nodes: list[Node]) -> Iterator[str]:
    """The ixl ops of these nodes, those of an If's branches included."""
    for node in nodes:
        yield node.op
        if runs_as_graphs(node):
            for branch in BRANCHES:
                yield from _ops(node.attrs[branch].graph.nodes)


@dataclass
class OpTypeRow:
    op_type: str
    count: int = 0
    ixl_ops: Counter = field(default_factory=Counter)
    problems: list[str] = field(default_factory=list)

    @property
    def status(self) -> str:
        if self.problems:
            return "unsupported"
        paths = {op_path(op) for op in self.ixl_ops}
        if paths <= {"native", "view"}:
            return "native" if "native" in paths else "view"
        if paths - {"native", "view"} == {"host"}:
            return "native + host"
        return "shim" if paths == {"shim"} else "native + shim"

    @property
    def detail(self) -> str:
        if self.problems:
            return self.problems[0]
        if set(self.ixl_ops) == {self.op_type}:
            return ""
        return ", ".join(f"{op} ({op_path(op)}) x{n}" for op, n in self.ixl_ops.most_common())


@dataclass
class Inspection:
    opset: int
    nodes: int
    rows: list[OpTypeRow]


def inspect_model(model: onnx.ModelProto) -> Inspection:
    """Translate node by node (a node that cannot be translated is noted, the rest go on)."""
    g = model.graph
    opset = default_opset(model)
    info = value_info(model)
    scratch = Graph(constants={t.name: initializer_array(t) for t in g.initializer})
    rows: dict[str, OpTypeRow] = {}
    for node in g.node:
        row = rows.setdefault(node.op_type, OpTypeRow(node.op_type))
        row.count += 1
        before = len(scratch.nodes)
        try:
            translate_node(node, opset, scratch, info)
        except ValueError as e:       # UnsupportedOnnx, or a semantic error of the node
            row.problems.append(str(e))
            continue
        row.ixl_ops.update(_ops(scratch.nodes[before:]))
    return Inspection(opset, len(g.node), sorted(rows.values(), key=lambda r: r.op_type))
