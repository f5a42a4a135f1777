"""A small graph API: op nodes over named tensors, run node by node on a device.

Graph inputs are fed at run time; constants (initializers) are copied in once per run;
intermediates are freed as soon as their last consumer has run.

A graph may list inputs as `donated`: the caller gives their memory to the run (XLA's donated
buffers, GE's ref inputs). A ScatterND whose data is a donated input read by no later node
then writes into that input's memory and its output is the input itself: only the updated
slices move, which is how a KV cache allocated once is written in place step after step. The
native kernel does it when it takes the case (launched with no output, its data input
declared in place); the host writes the slices when it declines.

With fusion on, a Transpose whose every reader is a MatMul taking it as B (attention's K^T and
V out of a cache laid out by position) is a view (TensorDesc.transposed): the Cube reads B with
the permuted strides, as an ND2NZ copy's source pitch allows, and no Transpose launches; and a
Split whose parts lie contiguous in its input is views at offsets (Device.split_as_views).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from ..hixl import ArgSpec, BadInput, ShapeMismatch, get_op
from ..hixl.errors import index_out_of_range
from . import log
from .control import choose_branch, runs_as_graphs
from .errors import KernelDeclined
from .fusion import find_chain, run_chain
from .launch import run_native
from .record import RunRecord
from .tensor import DeviceTensor
from .tensor_desc import TensorDesc

if TYPE_CHECKING:
    from collections.abc import Iterable

    from .device import Device


@dataclass(frozen=True)
class Node:
    op: str
    inputs: tuple[str, ...]          # "" marks an omitted optional input
    outputs: tuple[str, ...]
    attrs: dict = field(default_factory=dict)
    name: str = ""


@dataclass
class Graph:
    inputs: list[str] = field(default_factory=list)
    outputs: list[str] = field(default_factory=list)
    nodes: list[Node] = field(default_factory=list)
    constants: dict[str, np.ndarray] = field(default_factory=dict)
    donated: frozenset[str] = frozenset()     # inputs whose memory the run may overwrite

    def add(self, op: str, *inputs: str, outputs: tuple[str, ...] | None = None,
            name: str = "", **attrs: Any) -> str | tuple[str, ...]:
        """Append a node; returns its output name(s) (generated unless given)."""
        schema = get_op(op)
        if outputs is None:
            n = len(self.nodes)
            outputs = tuple(f"{op.lower()}{n}.{o}" for o in schema.outputs)
        self.nodes.append(Node(op, tuple(inputs), tuple(outputs), dict(attrs),
                               name or f"{op}_{len(self.nodes)}"))
        return outputs[0] if len(outputs) == 1 else outputs

    def validate(self) -> None:
        """Every node input must be a graph input, a constant or an earlier node's output."""
        known = set(self.inputs) | set(self.constants) | {""}
        for node in self.nodes:
            missing = [i for i in node.inputs if i not in known]
            if missing:
                raise ShapeMismatch(f"graph node {node.name} ({node.op}) reads "
                                    f"{', '.join(missing)}, which nothing produces before it")
            known.update(node.outputs)
        absent = [o for o in self.outputs if o not in known]
        if absent:
            raise ShapeMismatch(f"graph outputs {', '.join(absent)} are produced by no node")
        stray = sorted(self.donated - set(self.inputs))
        if stray:
            raise BadInput(f"donated {', '.join(stray)}: only graph inputs can be donated "
                           f"(inputs: {', '.join(self.inputs) or 'none'})")


@dataclass
class GraphRecord:
    """Every launch (or shim run) of one graph run, in order."""

    runs: list[RunRecord]

    @property
    def time_us(self) -> float:
        return sum(r.time_us for r in self.runs)

    @property
    def launch_us(self) -> float:
        return sum(r.launch.launch_us for r in self.runs if r.launch is not None)

    @property
    def launches(self) -> int:
        return sum(1 for r in self.runs if r.launch is not None)


def in_place(graph: Graph, index: int, last_use: dict[str, int]) -> bool:
    """Whether node `index` is a ScatterND that may write into its data input: a donated graph
    input that no later node reads and the graph does not return."""
    node = graph.nodes[index]
    if node.op != "ScatterND" or node.attrs.get("reduction", "none") != "none":
        return False
    data = node.inputs[0]
    return (data in graph.donated and last_use.get(data) == index
            and data not in graph.outputs and data not in node.inputs[1:])


def transposed_for_matmul(graph: Graph, index: int, readers: dict[str, list[tuple[str, int]]],
                          env: dict) -> tuple[int, ...] | None:
    """The perm of node `index` when it is a Transpose of an unpadded ND tensor whose output
    only MatMuls read, as B, and one of whose last two dims stays contiguous (a row pitch or
    a transposed B); else None."""
    node = graph.nodes[index]
    if node.op != "Transpose" or node.outputs[0] in graph.outputs or node.inputs[0] not in env:
        return None
    uses = readers.get(node.outputs[0], [])
    if not uses or any(use != ("MatMul", 1) for use in uses):
        return None
    x = env[node.inputs[0]].desc
    perm = tuple(node.attrs.get("perm") or range(len(x.shape))[::-1])
    if len(perm) < 2 or x.is_padded or sorted(perm) != list(range(len(x.shape))):
        return None
    view = TensorDesc.transposed(x, perm)
    return perm if 1 in view.strides[-2:] else None


def scatter_in_place(device: Device, node: Node, data: DeviceTensor, indices: DeviceTensor,
                     updates: DeviceTensor) -> RunRecord:
    """ScatterND into `data`'s own memory: the native kernel launched with no output and its
    data input declared in place, so only the update rows move GM -> UB -> GM; when it declines,
    the host route. The rest of `data` is not touched either way."""
    schema = get_op("ScatterND")
    tensors = (data, indices, updates)
    for role, t in zip(schema.inputs, tensors):
        device._own(t, f"ScatterND input {role}")
    schema.infer([ArgSpec(t.shape, t.dtype) for t in tensors], node.attrs)
    if data.desc.is_padded:
        raise BadInput(f"ScatterND in place: {data.name} has a padded layout")
    entry = device.registry.native("ScatterND")
    descs: list[TensorDesc | None] = [t.desc for t in tensors]
    reason = "no native kernel" if entry is None else entry.why_not(descs, node.attrs)
    if entry is not None and reason is None:
        try:
            return run_native(device, dataclasses.replace(entry, inplace=(0,)), list(tensors),
                              [], dict(node.attrs), None, descs)
        except KernelDeclined as declined:
            reason = str(declined)
    assert reason is not None           # the kernel took the case, or said why not
    return scatter_on_host(device, node, data, indices, updates, reason)


def scatter_on_host(device: Device, node: Node, data: DeviceTensor, indices: DeviceTensor,
                    updates: DeviceTensor, declined: str) -> RunRecord:
    """The host's route into `data`: it reads the indices and the updates and writes each run
    of consecutive slices into place (those copies are its modeled time)."""
    tensors = (data, indices, updates)
    reason = f"{declined}; in place into the donated data input, only the updates move"
    log.shim("ScatterND", reason)
    backend = device.backend
    host_us = backend.host_copy_us(indices.desc.nbytes) + backend.host_copy_us(updates.desc.nbytes)
    k = indices.shape[-1]
    dims = np.array(data.shape[:k], np.int64)
    slice_bytes = int(np.prod(data.shape[k:], dtype=np.int64)) * data.desc.itemsize
    idx = indices.numpy().reshape(int(np.prod(indices.shape[:-1], dtype=np.int64)), k)
    bad = (idx < -dims) | (idx >= dims)
    if bad.any():
        row, dim = np.argwhere(bad)[0]
        raise index_out_of_range("ScatterND", int(idx[row, dim]), int(dims[dim]), f"dim {dim}")
    cells = np.ravel_multi_index(tuple((idx % np.maximum(dims, 1)).T), tuple(dims)) if k \
        else np.zeros(len(idx), np.int64)
    rows = updates.numpy().reshape(len(cells), -1).view(np.uint8)
    start = 0
    for end in range(1, len(cells) + 1):            # runs of consecutive cells, in order
        if end < len(cells) and cells[end] == cells[end - 1] + 1:
            continue
        nbytes = (end - start) * slice_bytes
        host_us += backend.host_copy_us(nbytes)
        if not device.timing_only:
            backend.write(data.addr + int(cells[start]) * slice_bytes, rows[start:end].reshape(-1))
        start = end
    return RunRecord("ScatterND", device.chip.name, "shim", [t.shape for t in tensors],
                     data.dtype, reason=reason, attrs=dict(node.attrs), host_us=host_us)


def run_if(device: Device, node: Node, args: list[DeviceTensor], fuse: bool
           ) -> tuple[list[DeviceTensor], list[RunRecord]]:
    """An If whose branches are graphs: the condition read back, the chosen branch run as a
    graph on the device. Its records are named under the If's node; an output that is one of
    the If's inputs (or repeats another output) becomes a view, so each output owns its
    reference."""
    branch, record = choose_branch(device, node, args)
    device.last_profile = record
    device.stream.append(record)
    outputs, sub = run_graph(device, branch.graph, dict(zip(branch.graph.inputs, args[1:])),
                             fuse)
    records = [record]
    for run in sub.runs:
        run.nodes = [f"{node.name}/{name}" for name in run.nodes]
        records.append(run)
    results: list[DeviceTensor] = []
    for name in branch.graph.outputs:
        t = outputs[name]
        if any(t is other for other in [*args, *results]):
            t = device.run("Identity", t)
            device.last_profile.nodes = [f"{node.name}/{name}"]
            records.append(device.last_profile)
        results.append(t)
    return results, records


def run_graph(device: Device, graph: Graph, feeds: dict, fuse: bool = False
              ) -> tuple[dict, GraphRecord]:
    """Run `graph` node by node, or, with `fuse`, each chain of fusable elementwise nodes as
    one fused kernel."""
    graph.validate()
    missing = [n for n in graph.inputs if n not in feeds]
    if missing:
        raise ShapeMismatch(f"graph inputs {', '.join(missing)} were not fed")
    unknown = [n for n in feeds if n not in graph.inputs and n not in graph.constants]
    if unknown:
        raise BadInput(f"graph feeds {', '.join(map(repr, unknown))} are not inputs of the "
                       f"graph (its inputs: {', '.join(graph.inputs) or 'none'})")
    for name, value in feeds.items():
        if isinstance(value, DeviceTensor):
            device._own(value, f"graph feed {name}")
    last_use: dict[str, int] = {}
    consumers: dict[str, int] = {}
    readers: dict[str, list[tuple[str, int]]] = {}
    for i, node in enumerate(graph.nodes):
        for k, name in enumerate(node.inputs):
            last_use[name] = i
            readers.setdefault(name, []).append((node.op, k))
        for name in set(node.inputs):
            consumers[name] = consumers.get(name, 0) + 1
    env: dict = {}
    # tensors this run allocated (freed when dead), in the order they were made: every walk
    # over names below goes in the graph's order, so tensors are freed, and memory reused, in
    # the same order in every process (a set's order follows the string hash's seed, and with
    # it the addresses of later tensors, hence their L2 lines and modeled times)
    owned: dict[str, None] = {}
    records: list[RunRecord] = []

    def release_dead(read: Iterable[str], upto: int) -> None:
        for name in read:
            if name and last_use.get(name, -1) <= upto and name not in graph.outputs \
                    and name in owned:
                env.pop(name).free()
                del owned[name]

    try:
        for name, value in {**graph.constants, **feeds}.items():
            if isinstance(value, DeviceTensor):
                env[name] = value
            else:
                env[name] = device.tensor(np.asarray(value), name=name)
                owned[name] = None
        i = 0
        while i < len(graph.nodes):
            if in_place(graph, i, last_use):
                node = graph.nodes[i]
                record = scatter_in_place(device, node, *(env[n] for n in node.inputs))
                record.nodes = [node.name]
                device.last_profile = record
                device.stream.append(record)
                records.append(record)
                env[node.outputs[0]] = env[node.inputs[0]]     # the donated tensor itself
                if node.inputs[0] in owned:                    # fed from the host
                    del owned[node.inputs[0]]
                    owned[node.outputs[0]] = None
                release_dead(dict.fromkeys(node.inputs), i)
                i += 1
                continue
            if runs_as_graphs(graph.nodes[i]):
                node = graph.nodes[i]
                branch_outputs, runs = run_if(device, node, [env[n] for n in node.inputs],
                                              fuse)
                records.extend(runs)
                for name, t in zip(node.outputs, branch_outputs):
                    env[name] = t
                    owned[name] = None
                release_dead(dict.fromkeys(node.inputs), i)
                i += 1
                continue
            perm = transposed_for_matmul(graph, i, readers, env) if fuse else None
            if perm is not None:
                node = graph.nodes[i]
                env[node.outputs[0]] = device.transposed(env[node.inputs[0]], perm)
                owned[node.outputs[0]] = None
                assert device.last_profile is not None         # the view's record
                device.last_profile.nodes = [node.name]
                records.append(device.last_profile)
                release_dead(dict.fromkeys(node.inputs), i)
                i += 1
                continue
            chain = find_chain(device, graph, i, env, consumers) if fuse else None
            if chain is not None:
                out, record = run_chain(device, chain, env)
                record.nodes = [n.name for n in chain.nodes]
                device.last_profile = record
                device.stream.append(record)
                records.append(record)
                env[chain.nodes[-1].outputs[0]] = out
                owned[chain.nodes[-1].outputs[0]] = None
                i += len(chain.nodes)
                release_dead(dict.fromkeys(chain.inputs), i - 1)
                continue
            node = graph.nodes[i]
            args = [env[n] if n else None for n in node.inputs]
            result = device.split_as_views(*args, **node.attrs) if fuse and node.op == "Split" \
                else device.run(node.op, *args, **node.attrs)
            results = result if isinstance(result, tuple) else (result,)
            last = device.last_profile
            assert last is not None                 # the run just made it
            last.nodes = [node.name]
            records.append(last)
            for k, t in enumerate(results):
                name = node.outputs[k] if k < len(node.outputs) else ""
                if name:
                    env[name] = t
                    owned[name] = None
                else:               # an optional output nobody asked for
                    t.free()
            release_dead(dict.fromkeys(node.inputs), i)
            i += 1
    except BaseException:
        for name in owned:
            if name in env:
                env[name].free()
        raise
    outputs = {name: env[name] for name in graph.outputs}
    for name in owned:
        if name not in graph.outputs and name in env:
            env[name].free()
    return outputs, GraphRecord(records)
