"""The fusion pass (R10): a chain of elementwise nodes becomes one kernel built from their
compute bodies, so intermediates stay in UB: one round trip to GM and one launch instead of
one per node.

A chain grows from a node whose native kernel takes its case, through each next node that
reads the previous node's only consumer-visible output, as long as every step produces the
chain's output shape and dtype (inputs from outside the chain may broadcast). The kernel
library says what each op is to a chain (`Registry.fusion.role`): "map", an elementwise body,
or "anchor", an op that reduces along an axis (Softmax, LayerNormalization) whose kernel runs
the maps before it on its input x (producers, e.g. a residual Add) and the maps after it on
its output (consumers). A chain passes through at most one anchor, only as its x and only when
nothing but its first output is used. The library builds the fused kernel, cached by
signature; when its kernel declines a chain (a producer input that broadcasts, say), the chain
stops before the step that made it decline and the reason goes to the debug log.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..hixl import ArgSpec, get_op
from . import log, tiling_cache
from .errors import KernelDeclined
from .launch import run_native
from .tensor_desc import TensorDesc

if TYPE_CHECKING:
    from .device import Device
    from .graph import Graph, Node
    from .record import RunRecord
    from .tensor import DeviceTensor


@dataclass
class Chain:
    nodes: list[Node]
    inputs: list[str]                  # tensors read from outside the chain, in order
    args: list[tuple[int | None, ...]]  # per node: value ids (inputs first, then node
                                        # results; None: an omitted optional input)
    out: ArgSpec
    attrs: list[dict]                  # per node: its attributes, defaults filled in

    @property
    def name(self) -> str:
        return "+".join(n.op for n in self.nodes)

    @property
    def steps(self) -> list[tuple]:
        """(op, value ids, attributes) per node: what the fusion provider builds from."""
        return [(n.op, a, dict(attrs)) for n, a, attrs in zip(self.nodes, self.args, self.attrs)]

    def descs(self, env: dict) -> list[TensorDesc]:
        return [env[n].desc for n in self.inputs]


def _role(device, node: Node) -> str | None:
    """What `node` can be in a chain: only nodes whose first output is the only one used."""
    fusion = device.registry.fusion
    if fusion is None or device.registry.native(node.op) is None \
            or not node.outputs[0] or any(node.outputs[1:]):
        return None
    return fusion.role(node.op)


def _takes(device, node: Node, attrs: dict, env: dict, produced: dict) -> bool:
    """The op's own native kernel would take this node (dtype, scalar operands, layout)."""
    descs = [None if not n else TensorDesc.nd(produced[n].shape, produced[n].dtype)
             if n in produced else env[n].desc for n in node.inputs]
    return device.registry.native(node.op).why_not(descs, attrs) is None


def _bind(node: Node, env: dict, produced: dict) -> tuple[ArgSpec, dict] | None:
    """The node's first output and its attributes with defaults, or None when it is no valid
    call."""
    schema = get_op(node.op)
    specs = [None if n == "" else produced.get(n) or ArgSpec(env[n].shape, env[n].dtype)
             for n in node.inputs]
    try:
        bound = schema.check(specs, node.attrs)
        outs = schema.infer_fn(schema, specs, bound)
    except ValueError:
        return None
    return outs[0], bound


def _assemble(nodes: list, refs: list, attrs: list, out: ArgSpec) -> Chain:
    """Number the chain's values: outside inputs first (omitted optional inputs: None), then
    the node results."""
    inputs = list(dict.fromkeys(name for step in refs for kind, name in step
                                if kind == "in" and name))
    ids = {name: i for i, name in enumerate(inputs)}
    args = [tuple(len(inputs) + v if kind == "res" else ids.get(v) for kind, v in step)
            for step in refs]
    return Chain(list(nodes), inputs, args, out, list(attrs))


def _declines(device, chain: Chain, env: dict) -> str | None:
    """Why the fused kernel would not take the chain: its own check, then its host tiling
    (which finds what only tiling can, such as a broadcast row longer than a tile)."""
    descs = chain.descs(env)
    out = TensorDesc.nd(chain.out.shape, chain.out.dtype)
    entry = device.registry.fusion.entry(chain.steps, descs, out)
    reason = entry.why_not(descs, {})
    if reason is None:
        try:       # asked again at every run of a graph: the host tiling cache answers
            tiling_cache.plan(entry.tiling, entry.op, descs, [out], {}, device.chip, None)
        except (KernelDeclined, ValueError) as refused:
            reason = str(refused)
    return reason


def find_chain(device: Device, graph: Graph, start: int, env: dict, consumers: dict[str, int]
               ) -> Chain | None:
    """The longest fusable chain from node `start` (None when it is shorter than two)."""
    first = graph.nodes[start]
    role = _role(device, first)
    if role is None or not all(n == "" or n in env for n in first.inputs):
        return None
    bound = _bind(first, env, {})
    if bound is None or not _takes(device, first, bound[1], env, {}):
        return None
    out = bound[0]
    nodes, attrs = [first], [bound[1]]
    refs: list[tuple[tuple[str, str | int], ...]] = [tuple(("in", n) for n in first.inputs)]
    anchored = role == "anchor"
    for node in graph.nodes[start + 1:]:
        prev = nodes[-1].outputs[0]
        role = _role(device, node)
        if role is None or (role == "anchor" and (anchored or node.inputs[0] != prev
                                                   or prev in node.inputs[1:])):
            break
        if not (prev in node.inputs and consumers.get(prev, 0) == 1
                and prev not in graph.outputs
                and all(n in ("", prev) or n in env for n in node.inputs)):
            break
        bound = _bind(node, env, {prev: out})
        if bound is None or bound[0] != out \
                or not _takes(device, node, bound[1], env, {prev: out}):
            break
        step = tuple(("res", len(nodes) - 1) if n == prev else ("in", n) for n in node.inputs)
        grown = _assemble(nodes + [node], refs + [step], attrs + [bound[1]], out)
        reason = _declines(device, grown, env)
        if reason is not None:
            if log.enabled():
                print(f"[ixl] fusion stops before {node.name} ({node.op}): {reason}",
                      file=sys.stderr)
            break
        anchored = anchored or role == "anchor"
        nodes.append(node)
        attrs.append(bound[1])
        refs.append(step)
    if len(nodes) < 2:
        return None
    return _assemble(nodes, refs, attrs, out)


def run_chain(device: Device, chain: Chain, env: dict, config: dict | None = None
              ) -> tuple[DeviceTensor, RunRecord]:
    """Launch the fused kernel of `chain`; returns (output tensor, run record)."""
    inputs = [env[n] for n in chain.inputs]
    out_desc = TensorDesc.nd(chain.out.shape, chain.out.dtype)
    fusion = device.registry.fusion
    assert fusion is not None                   # find_chain found the chain through it
    entry = fusion.entry(chain.steps, [t.desc for t in inputs], out_desc)
    out = device.empty(out_desc.shape, out_desc.dtype, f"{chain.name}.y", out_desc)
    try:
        record = run_native(device, entry, inputs, [out], {}, config)
    except BaseException:
        out.free()
        raise
    record.op = f"Fused[{chain.name}]"
    return out, record
