"""Graph passes that an offline model compiler (Ascend's ATC) applies before a model runs.

`specialize` fixes the input shapes (ATC's --input_shape, or one gear of --dynamic_dims) and
folds on the host every node whose result no longer depends on input data: the shape
arithmetic a dynamic-shape export leaves behind (Shape, Gather, Unsqueeze, Concat, ...), ONNX
Constant nodes, casts of constants, an If whose condition becomes known (replaced by its
branch); inputs fixed in value (an attention mask) fold what depends on them. Without it each
of those runs through the shim and pays host round trips at every inference. An If decided at
run time whose branches are tiny becomes both branches and a select (`if_select`).

`fold_constants` folds every node whose inputs are constants without fixing input shapes;
`fold_batch_norm` folds an inference BatchNormalization into the Conv before it; `optimize` runs
them with `patterns.fuse_patterns` (exporters' decompositions of fused ops put back together).

`cast_floats` runs a float32 graph in float16 or bfloat16 (ATC's --precision_mode=force_fp16):
float32 constants (initializers and constant attributes) and casts to float32 take the narrow
type; constants outside its range saturate to its largest finite value, so a -3.4e38
attention-mask bias stays a very large finite negative number instead of becoming -inf (and
0 * -inf = NaN). Float graph inputs are then fed in the narrow type.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, replace

import ml_dtypes
import numpy as np

from ..hixl import ArgSpec, BadInput, get_op, to_numpy
from ..hixl.dtypes import name_of
from ..nixl import Graph
from ..nixl.graph import Node
from .graphs import inline, prune_constants
from .if_select import if_to_select
from .patterns import fuse_patterns


def _probe(spec: ArgSpec) -> np.ndarray:
    """An array of the spec's shape without its data, for ops that read only the shape."""
    return np.broadcast_to(np.zeros((), to_numpy(spec.dtype)), spec.shape)


SHAPE_ONLY = frozenset({"Shape", "Size"})


@dataclass
class Known:
    """What the host knows after a walk over a graph."""

    specs: dict[str, ArgSpec]           # shape and dtype of every value reached
    values: dict[str, np.ndarray]       # contents: constants, fixed inputs, folded nodes
    kept: list[Node]                    # the nodes left to run on the device


def propagate(graph: Graph, specs: dict[str, ArgSpec] | None = None,
              values: dict[str, np.ndarray] | None = None, evaluate: bool = False,
              keep_outputs: bool = True) -> Known:
    """Walk `graph` in order. A node whose inputs are all known values (or that reads only its
    input's shape) is computed on the host with its golden; an If whose condition is known is
    replaced by its branch; every other node is checked and its output specs inferred, where
    its input specs are known. With `evaluate`, every node is computed (all inputs given);
    otherwise nodes producing graph outputs stay nodes, unless not `keep_outputs`."""
    values = {**graph.constants, **(values or {})}
    specs = {**(specs or {}), **{n: ArgSpec(np.shape(v), name_of(np.asarray(v).dtype))
                                 for n, v in values.items()}}
    kept: list[Node] = []
    pending = deque(graph.nodes)
    while pending:
        node = pending.popleft()
        schema = get_op(node.op)
        names = schema.input_names(len(node.inputs))
        if node.op == "If" and node.inputs[0] in values:
            pending.extendleft(reversed(_chosen_branch(node, values, specs)))
            continue
        readable = all(not n or n in values or (node.op in SHAPE_ONLY and n in specs)
                       for n in node.inputs)
        if readable and (evaluate or not keep_outputs
                         or not set(node.outputs) & set(graph.outputs)):
            arrays = [None if not n else values[n] if n in values else _probe(specs[n])
                      for n in node.inputs]
            for name, array in zip(node.outputs, schema.reference(*arrays, **node.attrs)):
                values[name] = array
                specs[name] = ArgSpec(array.shape, name_of(array.dtype))
            continue
        if all(not n or n in specs for n in node.inputs):
            arg_specs = [None if not n else schema.spec_of(k, values[n]) if n in values
                         else specs[n] for n, k in zip(node.inputs, names)]
            for name, spec in zip(node.outputs, schema.infer(arg_specs, node.attrs)):
                specs[name] = ArgSpec(spec.shape, spec.dtype)
        kept.append(node)
    return Known(specs, values, kept)


def _chosen_branch(node: Node, values: dict, specs: dict) -> list[Node]:
    """The nodes of the branch an If with a known condition takes, under fresh names, its
    constants added to `values` and `specs`."""
    taken = "then_branch" if bool(np.asarray(values[node.inputs[0]]).reshape(-1)[0]) \
        else "else_branch"
    body = node.attrs[taken].graph
    target = Graph()
    inline(target, body, dict(zip(body.inputs, node.inputs[1:])), list(node.outputs),
           f"{node.name}/{taken}/")
    for name, value in target.constants.items():
        values[name] = value
        specs[name] = ArgSpec(np.shape(value), name_of(np.asarray(value).dtype))
    return target.nodes


def _pruned(graph: Graph, known: Known, inputs: list[str]) -> Graph:
    """The graph of the kept nodes over the constants they still read."""
    read = {n for node in known.kept for n in node.inputs} | set(graph.outputs)
    return Graph(inputs=inputs, outputs=list(graph.outputs), nodes=known.kept,
                 constants={n: known.values[n] for n in known.values
                            if n in read and n not in inputs})


def specialize(graph: Graph, inputs: dict[str, ArgSpec],
               fixed: dict[str, np.ndarray] | None = None, keep_outputs: bool = True) -> Graph:
    """`graph` with its inputs fixed to `inputs` (shape and dtype per graph input) and every
    node computable on the host folded into a constant (with not `keep_outputs`, graph
    outputs too); no-op Casts and Identity chains then vanish, and a runtime If with tiny
    branches becomes a select. Inputs in `fixed` are fixed in
    value too (an attention mask known in advance): they leave the graph's inputs and what
    depends only on them and on constants folds. Shapes are checked as they propagate, so
    inputs that do not fit fail here rather than midway through a run."""
    return specialized(graph, inputs, fixed, keep_outputs)[0]


def specialized(graph: Graph, inputs: dict[str, ArgSpec],
                fixed: dict[str, np.ndarray] | None = None, keep_outputs: bool = True
                ) -> tuple[Graph, Known]:
    """`specialize`, and what the walk knew (the nodes it folded are those not kept)."""
    fixed = fixed or {}
    missing = [n for n in graph.inputs if n not in inputs and n not in fixed]
    if missing:
        raise BadInput(f"specialize: no shape given for graph input(s) {', '.join(missing)}")
    known = propagate(graph, inputs, fixed, keep_outputs=keep_outputs)
    pruned = _pruned(graph, known, [n for n in graph.inputs if n not in fixed])
    return if_to_select(drop_noops(pruned, known.specs), known.specs), known


def drop_noops(graph: Graph, specs: dict[str, ArgSpec]) -> Graph:
    """Identity nodes and Casts to the dtype they read vanish: their readers read their input
    instead. One that produces a graph output stays (the output must be produced)."""
    rename: dict[str, str] = {}
    nodes = []
    for node in graph.nodes:
        node = replace(node, inputs=tuple(rename.get(n, n) for n in node.inputs))
        source = node.inputs[0] if node.inputs else ""
        noop = node.op == "Identity" or (node.op == "Cast" and source in specs
                                         and specs[source].dtype == node.attrs.get("to"))
        if noop and source and node.outputs[0] not in graph.outputs:
            rename[node.outputs[0]] = source
            continue
        nodes.append(node)
    return prune_constants(Graph(list(graph.inputs), list(graph.outputs), nodes,
                                 dict(graph.constants)))


def host_only_inputs(graph: Graph) -> set[str]:
    """Graph inputs read only as host inputs (shapes, axes, k, starts: what the host reads to
    size outputs) and not themselves graph outputs: the host may take their values as known
    at each call, so the arithmetic on them folds."""
    uses: dict[str, bool] = {n: True for n in graph.inputs if n not in graph.outputs}
    read = set()
    for node in graph.nodes:
        schema = get_op(node.op)
        for name, declared in zip(node.inputs, schema.input_names(len(node.inputs))):
            if name in uses:
                read.add(name)
                uses[name] &= schema.declared(declared) in schema.host_inputs
    return {n for n, host in uses.items() if host and n in read}


def fold_constants(graph: Graph) -> Graph:
    """Every node whose inputs are constants (transitively) computed once on the host: weight
    transposes, casts and reshapes of initializers, Constant nodes, shape arithmetic over
    constants. Input shapes need not be known."""
    return _pruned(graph, propagate(graph), list(graph.inputs))


def fold_batch_norm(graph: Graph) -> Graph:
    """A BatchNormalization right after a Conv (its only reader) folds into the Conv's weights
    and bias when both hold constants: w' = w * s, b' = (b - mean) * s + bias, where
    s = scale / sqrt(var + epsilon) per output channel."""
    producer = {o: n for n in graph.nodes for o in n.outputs}
    uses: dict[str, int] = {}
    for node in graph.nodes:
        for name in node.inputs:
            uses[name] = uses.get(name, 0) + 1
    constants = dict(graph.constants)
    nodes = list(graph.nodes)
    for bn in [n for n in graph.nodes if n.op == "BatchNormalization"]:
        conv = producer.get(bn.inputs[0])
        params = bn.inputs[1:]
        if conv is None or conv.op != "Conv" or uses.get(bn.inputs[0]) != 1 or \
                bn.inputs[0] in graph.outputs or conv.inputs[1] not in constants or \
                not all(p in constants for p in params) or \
                (len(conv.inputs) > 2 and conv.inputs[2] and conv.inputs[2] not in constants):
            continue
        w = np.asarray(constants[conv.inputs[1]])
        scale, bias, mean, var = (np.asarray(constants[p], np.float64) for p in params)
        factor = scale / np.sqrt(var + bn.attrs.get("epsilon", 1e-5))
        b = (np.asarray(constants[conv.inputs[2]], np.float64) if len(conv.inputs) > 2
             and conv.inputs[2] else np.zeros(w.shape[0]))
        w_name, b_name = f"{bn.name}/folded_w", f"{bn.name}/folded_b"
        constants[w_name] = (w * factor.reshape((-1,) + (1,) * (w.ndim - 1))).astype(w.dtype)
        constants[b_name] = ((b - mean) * factor + bias).astype(w.dtype)
        folded = replace(conv, inputs=(conv.inputs[0], w_name, b_name), outputs=bn.outputs[:1])
        nodes[nodes.index(conv)] = folded
        nodes.remove(bn)
    return prune_constants(Graph(list(graph.inputs), list(graph.outputs), nodes, constants))


def optimize(graph: Graph, inputs: dict[str, ArgSpec] | None = None,
             fixed: dict[str, np.ndarray] | None = None) -> Graph:
    """Every pass, in order: specialise to the input shapes (or, without them, fold the
    constant subgraphs), fold BatchNormalization into Conv, put exporters' decompositions of
    LayerNormalization, RMSNormalization and Gelu back together."""
    graph = specialize(graph, inputs, fixed) if inputs is not None else fold_constants(graph)
    return fuse_patterns(fold_batch_norm(graph))


def _narrow(value, dtype: str):
    """A float32 array in `dtype`, saturated to its finite range; anything else unchanged."""
    if not (isinstance(value, np.ndarray) and value.dtype == np.float32):
        return value
    big = float(ml_dtypes.finfo(to_numpy(dtype)).max)
    return np.clip(value, -big, big).astype(to_numpy(dtype))


def cast_floats(graph: Graph, dtype: str) -> Graph:
    """`graph` computing in `dtype` where it computed in float32 (the ops accumulate in float32
    inside, as their kernels and goldens do)."""
    def attrs(node: Node) -> dict:
        out = {k: _narrow(v, dtype) for k, v in node.attrs.items()}
        if node.op == "Cast" and out.get("to") == "float32":
            out["to"] = dtype
        return out
    return Graph(inputs=list(graph.inputs), outputs=list(graph.outputs),
                 nodes=[replace(n, attrs=attrs(n)) for n in graph.nodes],
                 constants={n: _narrow(v, dtype) for n, v in graph.constants.items()})
