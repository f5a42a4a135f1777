"""The fusion pass (R10): a chain of elementwise nodes becomes one kernel built from their
compute bodies, so intermediates stay in UB: one round trip to GM and one launch instead of
one per node.

A chain grows from a node whose native kernel takes its case, through each next node that
reads the previous node's only consumer-visible output, as long as every step produces the
chain's output shape and dtype (inputs from outside the chain may broadcast). The kernel
library says which ops can fuse and builds the fused kernel (`Registry.fusion`); fused kernels
are cached by signature.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..hixl import ArgSpec, get_op
from .launch import run_native
from .tensor_desc import TensorDesc

if TYPE_CHECKING:
    from .graph import Node


@dataclass
class Chain:
    nodes: list[Node]
    inputs: list[str]                  # tensors read from outside the chain, in order
    args: list[tuple[int, ...]]        # per node: value ids (inputs first, then node results)
    out: ArgSpec

    @property
    def name(self) -> str:
        return "+".join(n.op for n in self.nodes)


def _fusable(device, node: Node) -> bool:
    fusion = device.registry.fusion
    return (len(node.outputs) == 1 and fusion is not None and fusion.can_fuse(node.op)
            and device.registry.native(node.op) is not None)


def _takes(device, node: Node, env: dict, produced: dict | None = None) -> bool:
    """The op's own native kernel would take this node (dtype, scalar operands, layout)."""
    produced = produced or {}
    descs = [None if not n else TensorDesc.nd(produced[n].shape, produced[n].dtype)
             if n in produced else env[n].desc for n in node.inputs]
    return device.registry.native(node.op).why_not(descs, node.attrs) is None


def find_chain(device, graph, start: int, env: dict, consumers: dict[str, int]) -> Chain | None:
    """The longest fusable chain from node `start` (None when it is shorter than two)."""
    first = graph.nodes[start]
    if not (_fusable(device, first) and all(n == "" or n in env for n in first.inputs)
            and _takes(device, first, env)):
        return None
    out = _infer(first, env, {})
    if out is None:
        return None
    nodes, refs = [first], [tuple(("in", n) for n in first.inputs)]
    for node in graph.nodes[start + 1:]:
        prev = nodes[-1].outputs[0]
        if not (_fusable(device, node) and prev in node.inputs
                and consumers.get(prev, 0) == 1 and prev not in graph.outputs
                and all(n in ("", prev) or n in env for n in node.inputs)
                and _infer(node, env, {prev: out}) == out
                and _takes(device, node, env, {prev: out})):
            break
        refs.append(tuple(("res", len(nodes) - 1) if n == prev else ("in", n)
                          for n in node.inputs))
        nodes.append(node)
    if len(nodes) < 2:
        return None
    inputs = list(dict.fromkeys(name for step in refs for kind, name in step if kind == "in"))
    ids = {name: i for i, name in enumerate(inputs)}
    args = [tuple(ids[v] if kind == "in" else len(inputs) + v for kind, v in step)
            for step in refs]
    return Chain(nodes, inputs, args, out)


def _infer(node: Node, env: dict, produced: dict) -> ArgSpec | None:
    schema = get_op(node.op)
    specs = [None if n == "" else produced.get(n) or ArgSpec(env[n].shape, env[n].dtype)
             for n in node.inputs]
    try:
        bound = schema.check(specs, node.attrs)
        outs = schema.infer_fn(schema, specs, bound)
    except ValueError:
        return None
    return outs[0] if len(outs) == 1 else None


def run_chain(device, chain: Chain, env: dict, config: dict | None = None):
    """Launch the fused kernel of `chain`; returns (output tensor, run record)."""
    inputs = [env[n] for n in chain.inputs]
    out_desc = TensorDesc.nd(chain.out.shape, chain.out.dtype)
    steps = [(node.op, a, dict(node.attrs)) for node, a in zip(chain.nodes, chain.args)]
    entry = device.registry.fusion.entry(steps, [t.desc for t in inputs], out_desc)
    out = device.empty(out_desc.shape, out_desc.dtype, f"{chain.name}.y", out_desc)
    try:
        record = run_native(device, entry, inputs, [out], {}, config)
    except BaseException:
        out.free()
        raise
    record.op = f"Fused[{chain.name}]"
    return out, record
