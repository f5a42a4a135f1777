"""ONNX control flow: If and Loop, whose bodies are subgraphs.

An If whose condition is a constant (or, converting for one run, known from its inputs)
becomes its branch's nodes, translated in place; otherwise it is an
ixl If node whose branches are prepared as ixl graphs (`Subgraph`): the runtime reads the
condition back and runs the chosen branch on the device, as a graph of its own. A
condition that only becomes known once input shapes are fixed is folded by passes.specialize.

A Loop is unrolled: its body's nodes repeated, each iteration's loop-carried values feeding
the next, its scan outputs stacked. Its trip count, and the condition where the body computes
one, must be known as it is converted (from constants, or, converting for one run, from the
input shapes and small inputs: backend.RunConvertedRep); a loop whose end depends on other data
is refused.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import onnx

from ..hixl import ArgSpec, to_numpy
from ..hixl.dtypes import name_of
from ..nixl import Graph
from ..nixl.control import GraphBranch
from .errors import UnsupportedOnnx
from .graphs import free_names, inline
from .passes import propagate

if TYPE_CHECKING:
    from .translate import NodeContext


class Subgraph(GraphBranch):
    """An ONNX subgraph as an ixl graph whose inputs are bound by position; `dtypes` are the
    dtypes ONNX declares for them (the host evaluation casts the If's widened golden inputs
    back to them)."""

    def __init__(self, graph: Graph, dtypes: dict[str, str]) -> None:
        self.graph = graph
        self.dtypes = dtypes

    def infer(self, specs: list[ArgSpec]) -> list[ArgSpec]:
        known = propagate(self.graph, dict(zip(self.graph.inputs, specs)))
        return [known.specs[name] for name in self.graph.outputs]

    def evaluate(self, arrays: list[np.ndarray]) -> list[np.ndarray]:
        feeds = {}
        for name, array in zip(self.graph.inputs, arrays):
            wanted = self.dtypes.get(name)
            if wanted is None and array.dtype == np.float64:
                wanted = "float32"
            feeds[name] = array if wanted is None else array.astype(to_numpy(wanted))
        known = propagate(self.graph, {n: ArgSpec(a.shape, name_of(a.dtype))
                                       for n, a in feeds.items()}, feeds, evaluate=True)
        return [known.values[name] for name in self.graph.outputs]

    def __repr__(self) -> str:
        return (f"Subgraph({len(self.graph.nodes)} nodes, inputs {self.graph.inputs}, "
                f"outputs {self.graph.outputs})")


# Iterations unrolled for a loop that only its condition ends ([U]: a bound on the graph's
# size, not a chip limit; a recurrent layer's steps are far fewer).
MAX_UNROLLED = 4096


def _dtypes(ctx: NodeContext, names: list[str]) -> dict[str, str]:
    return {n: ctx.info[n][0] for n in names if ctx.info.get(n, (None,))[0] is not None}


def if_(ctx: NodeContext) -> None:
    then_body, else_body = ctx.attrs.pop("then_branch"), ctx.attrs.pop("else_branch")
    ctx.check_consumed()
    cond = ctx.inputs[0]
    known = ctx.known_value(cond)
    if known is not None:
        ctx.translate_here(then_body if bool(known.reshape(-1)[0]) else else_body)
        return
    branches = [ctx.convert_body(b, []) for b in (then_body, else_body)]
    values: list[str] = []
    for b in branches:
        values.extend(n for n in free_names(b) if n not in values)
    for b in branches:
        b.inputs = list(values)
    dtypes = _dtypes(ctx, values)
    ctx.emit("If", [cond, *values], ctx.outputs, then_branch=Subgraph(branches[0], dtypes),
             else_branch=Subgraph(branches[1], dtypes))


def _passes_condition_through(body: onnx.GraphProto) -> bool:
    """Whether the body's condition output is its condition input (through Identity nodes) or a
    constant true."""
    name, cond_in = body.output[0].name, body.input[1].name
    producers = {o: n for n in body.node for o in n.output}
    while name in producers and producers[name].op_type == "Identity":
        name = producers[name].input[0]
    if name == cond_in:
        return True
    node = producers.get(name)
    if node is not None and node.op_type == "Constant":
        value = onnx.numpy_helper.to_array(node.attribute[0].t)
        return bool(np.all(value))
    return False


def loop(ctx: NodeContext) -> None:
    body_proto = ctx.attrs.pop("body")
    ctx.check_consumed()
    trip, cond, *initial = ctx.inputs
    count = ctx.known_value(trip) if trip else None
    if trip and count is None:
        raise ctx.needs(f"ixl unrolls a loop by its trip count {trip}")
    cond_value = ctx.known_value(cond) if cond else None
    if cond and cond_value is None:
        raise ctx.needs(f"ixl unrolls a loop whose condition {cond} starts true")
    if cond_value is not None and not bool(cond_value.reshape(-1)[0]):
        raise UnsupportedOnnx(f"{ctx.label}: the loop condition {cond} is false before the "
                              f"first iteration; ixl unrolls loops that run at least once")
    computed = bool(cond) and not _passes_condition_through(body_proto)
    if not trip and not computed:
        raise UnsupportedOnnx(f"{ctx.label}: neither a trip count nor a condition the body "
                              f"computes ends this loop")
    formal = [v.name for v in body_proto.input]
    body = ctx.convert_body(body_proto, formal)
    carried_count = len(initial)
    scan_count = len(body.outputs) - 1 - carried_count
    carried = list(initial)
    scans: list[list[str]] = [[] for _ in range(scan_count)]
    true = ctx.const(np.array(True), "cond")
    limit = MAX_UNROLLED if count is None else int(count.reshape(-1)[0])
    for i in range(limit):
        prefix = ctx.fresh(f"it{i}") + "/"
        bindings = {formal[0]: ctx.const(np.array(i, np.int64), "iter"), formal[1]: true,
                    **dict(zip(formal[2:], carried))}
        outs = [f"{prefix}cond" if computed else "",
                *[f"{prefix}carried{k}" for k in range(carried_count)],
                *[f"{prefix}scan{k}" for k in range(scan_count)]]
        inline(ctx.graph, body, bindings, outs, prefix)
        carried = outs[1:1 + carried_count]
        for k in range(scan_count):
            scans[k].append(outs[1 + carried_count + k])
        if computed:
            go_on = ctx.known_value(outs[0])
            if go_on is None:
                raise ctx.needs(f"ixl unrolls a loop whose body's condition "
                                f"{body_proto.output[0].name} is known at each iteration")
            if not bool(go_on.reshape(-1)[0]):
                break
    else:
        if count is None:
            raise UnsupportedOnnx(f"{ctx.label}: the condition did not end the loop within "
                                  f"{MAX_UNROLLED} iterations, the most ixl unrolls")
    final = ctx.outputs
    for name, value in zip(final[:carried_count], carried):
        if name:
            ctx.emit("Identity", [value], [name])
    axis = ctx.const(np.array([0], np.int64), "axis")
    for name, parts in zip(final[carried_count:], scans):
        if not name:
            continue
        if not parts:
            raise UnsupportedOnnx(f"{ctx.label}: a scan output of zero iterations has no shape")
        stacked = []
        for part in parts:
            stacked.append(ctx.fresh("step"))
            ctx.emit("Unsqueeze", [part, axis], [stacked[-1]])
        ctx.emit("Concat", stacked, [name], axis=0)
