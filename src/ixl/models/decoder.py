"""Autoregressive decoding of a causal language-model graph, its KV cache in device memory.

The graph (as tools/export_smollm2 exports one) takes the new tokens, input_ids
(1, "sequence"), and per layer the past keys and values (..., "past_sequence", ...); it gives
the logits of the last position and, per layer, the presents (the past with this call's keys
and values appended), in the same order as the past inputs. Prefill and decode are the same
graph: prefill feeds the prompt and an empty past, each decode step one token and the previous
step's presents.

A run opens one device and copies the weights in once. Between steps the cache stays the
device tensors the graph produced: the loop never copies it to the host (the ops inside a step
do what their path does: a shim op copies its operands to the host and back, and says so in
its record). Only the logits row comes back, for the host to choose the next token.

Each step runs the graph specialised for its shape (ATC's one gear per input shape): the
positions, the causal mask and the rotary tables depend on shapes only and fold into
constants on the host. Gears are cached, a bounded number of them.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import numpy as np

from ..hixl import ArgSpec
from ..nixl import Graph, GraphRecord, device
from ..onnx import Converted
from ..onnx.passes import cast_floats, specialize

SEQUENCE, PAST = "sequence", "past_sequence"     # the symbolic dims the export names
GEARS = 64                                        # specialised graphs kept


class CachedDecoder:
    """A converted causal-LM graph with its weights, run step by step on `chip` in `dtype`;
    `weights` names the constants that stay on the device for a whole run."""

    def __init__(self, converted: Converted, weights: frozenset[str], chip: str = "910B1",
                 dtype: str = "float32"):
        ids, *past = converted.inputs
        if ids.shape != (1, SEQUENCE) or not past or len(past) != len(converted.outputs) - 1 \
                or any(PAST not in p.shape for p in past):
            raise ValueError(f"not a causal LM graph with a cache: inputs "
                             f"{', '.join(map(str, converted.inputs[:3]))}, ...; expected "
                             f"input_ids (1, {SEQUENCE}) then past tensors with a {PAST} axis, "
                             f"one present output for each")
        graph = converted.graph
        self.graph = graph if dtype == "float32" else cast_floats(graph, dtype)
        self.inputs = converted.inputs
        self.chip, self.dtype = chip, dtype
        self.weights = frozenset(n for n in weights if n in self.graph.constants)
        self.cache = list(zip(self.graph.inputs[1:], self.graph.outputs[1:]))
        self._lock = threading.Lock()
        self._gears: dict[tuple[int, int], Graph] = {}

    def cache_shape(self, name: str, past: int) -> tuple[int, ...]:
        spec = next(s for s in self.inputs if s.name == name)
        return tuple(past if d == PAST else d for d in spec.shape)

    def gear(self, length: int, past: int) -> Graph:
        """The graph for `length` new tokens after `past` cached ones, host-computable nodes
        folded, the weights turned into graph inputs (fed from the device, never copied in
        per step)."""
        key = (length, past)
        with self._lock:
            if key in self._gears:
                return self._gears[key]
        specs = {self.graph.inputs[0]: ArgSpec((1, length), "int64")}
        specs.update({name: ArgSpec(self.cache_shape(name, past), self.dtype)
                      for name, _ in self.cache})
        folded = specialize(self.graph, specs)
        weights = [n for n in folded.constants if n in self.weights]
        graph = Graph(inputs=folded.inputs + weights, outputs=folded.outputs,
                      nodes=folded.nodes,
                      constants={n: v for n, v in folded.constants.items() if n not in weights})
        with self._lock:
            if len(self._gears) >= GEARS:
                self._gears.pop(next(iter(self._gears)))
            self._gears[key] = graph
        return graph

    def run(self, prompt_ids: list[int], next_token: Callable[[np.ndarray], int | None],
            fuse: bool = True) -> list[GraphRecord]:
        """Prefill `prompt_ids`, then feed each token `next_token(logits_row)` returns until
        it returns None; one GraphRecord per graph run (the first is prefill)."""
        if not prompt_ids:
            raise ValueError("the prompt has no tokens: give at least one")
        records: list[GraphRecord] = []
        with device(self.chip) as dev:
            resident, cache = {}, {}
            try:
                resident = {n: dev.tensor(self.graph.constants[n], name=n) for n in self.weights}
                cache = {name: dev.empty(self.cache_shape(name, 0), self.dtype, name)
                         for name, _ in self.cache}
                ids, past = list(prompt_ids), 0
                while True:
                    graph = self.gear(len(ids), past)
                    feeds = {graph.inputs[0]: np.array([ids], np.int64), **cache,
                             **{n: resident[n] for n in graph.inputs if n in resident}}
                    outputs = dev.run_graph(graph, feeds, fuse=fuse)
                    records.append(dev.last_graph)
                    for t in cache.values():
                        t.free()
                    cache = {name: outputs[present] for name, present in self.cache}
                    logits = outputs[graph.outputs[0]]
                    try:
                        row = logits.numpy().reshape(-1, logits.shape[-1])[-1]
                    finally:
                        logits.free()
                    past += len(ids)
                    token = next_token(row)
                    if token is None:
                        return records
                    ids = [token]
            finally:
                for t in (*resident.values(), *cache.values()):
                    t.free()
