"""Autoregressive decoding of a causal language-model graph, its KV cache in device memory.

The graph (as tools/export_smollm2 exports one) takes the new tokens, input_ids
(1, "sequence"), their positions, position_ids (1, "sequence"), and per layer a key and a value
cache with a "capacity" axis, one row per position; it gives the logits of the last position
and each cache with this call's rows written (ScatterND), in the order of the cache inputs.
Attention reads every row of the cache, the rows after a token's own position masked. Prefill
and decode are the same graph: prefill feeds the prompt at positions 0.., each decode step one
token at the next position.

A run opens one device, copies the weights in once and allocates each cache once, for the
run's whole length, zeroed (a masked row still enters the products, so it must be finite).
The caches are donated to every step's graph: the runtime writes the new rows into them in
place (nixl.graph), and the loop checks that each updated cache is the very tensor it fed. The
loop never copies a cache to the host; only the logits row comes back, for the host to choose
the next token (the ops inside a step do what their path does: a shim op copies its operands
to the host and back, and says so in its record).

Each step runs the graph specialised for its shape (ATC's one gear per input shape): one gear
for the prompt, one for every decode step of the run. The shape arithmetic and the graph's
constant parts fold on the host; the positions are data, so the rotary tables, the mask and
the cache rows to write are computed on the device from them. Gears are cached, a bounded
number of them.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable

import numpy as np

from ..hixl import ArgSpec, to_numpy
from ..nixl import Graph, GraphRecord, device
from ..onnx import Converted
from ..onnx.passes import cast_floats, optimize, specialized
from .ladder import check_rungs, climb, climb_gear

SEQUENCE, CAPACITY = "sequence", "capacity"      # the symbolic dims the export names
GEARS = 64                                        # specialised graphs kept


class CacheNotInPlace(RuntimeError):
    """The runtime returned a new tensor for a cache it was given to update in place."""


class CachedDecoder:
    """A converted causal-LM graph with its weights, run step by step on `chip` in `dtype`;
    `weights` names the constants that stay on the device for a whole run. The graph is
    optimised once (constants folded, exporters' normalisations fused) and the decode ladder's
    `rungs` applied (ladder.py) before its floats are narrowed to `dtype`; the rungs that
    need shapes apply to each gear."""

    def __init__(self, converted: Converted, weights: frozenset[str], chip: str = "910B1",
                 dtype: str = "float32", optimise: bool = True,
                 rungs: Iterable[str] = ()) -> None:
        ids, positions, *cache = converted.inputs
        if ids.shape != (1, SEQUENCE) or positions.shape != (1, SEQUENCE) or not cache \
                or len(cache) != len(converted.outputs) - 1 \
                or any(CAPACITY not in c.shape for c in cache):
            raise ValueError(f"not a causal LM graph with a cache: inputs "
                             f"{', '.join(map(str, converted.inputs[:3]))}, ...; expected "
                             f"input_ids and position_ids (1, {SEQUENCE}), then cache tensors "
                             f"with a {CAPACITY} axis, one updated cache output for each")
        self.rungs = check_rungs(rungs)
        graph = optimize(converted.graph) if optimise else converted.graph
        graph, self.weights = climb(graph, weights, self.rungs)
        self.graph = graph if dtype == "float32" else cast_floats(graph, dtype)
        self.inputs = converted.inputs
        self.chip, self.dtype = chip, dtype
        self.cache = list(zip(self.graph.inputs[2:], self.graph.outputs[1:]))
        self._lock = threading.Lock()
        self._gears: dict[tuple[int, int], Graph] = {}

    def cache_shape(self, name: str, capacity: int) -> tuple[int, ...]:
        spec = next(s for s in self.inputs if s.name == name)
        return tuple(capacity if d == CAPACITY else d for d in spec.shape)

    def cache_bytes(self, capacity: int) -> int:
        """Device memory of every cache at `capacity` positions."""
        itemsize = np.dtype(to_numpy(self.dtype)).itemsize
        return sum(int(np.prod(self.cache_shape(name, capacity))) * itemsize
                   for name, _ in self.cache)

    def gear(self, length: int, capacity: int) -> Graph:
        """The graph for `length` new tokens over caches of `capacity` rows, host-computable
        nodes folded, the weights turned into graph inputs (fed from the device, never copied
        in per step) and the caches donated (updated in place)."""
        key = (length, capacity)
        with self._lock:
            if key in self._gears:
                return self._gears[key]
        ids, positions = self.graph.inputs[:2]
        specs = {ids: ArgSpec((1, length), "int64"), positions: ArgSpec((1, length), "int64")}
        specs.update({name: ArgSpec(self.cache_shape(name, capacity), self.dtype)
                      for name, _ in self.cache})
        folded, known = specialized(self.graph, specs)
        folded = climb_gear(folded, known.specs, self.rungs)
        weights = [n for n in folded.constants if n in self.weights]
        graph = Graph(inputs=folded.inputs + weights, outputs=folded.outputs,
                      nodes=folded.nodes,
                      constants={n: v for n, v in folded.constants.items() if n not in weights},
                      donated=frozenset(name for name, _ in self.cache))
        with self._lock:
            if len(self._gears) >= GEARS:
                self._gears.pop(next(iter(self._gears)))
            self._gears[key] = graph
        return graph

    def run(self, prompt_ids: list[int], next_token: Callable[[np.ndarray], int | None],
            capacity: int, fuse: bool = True) -> list[GraphRecord]:
        """Prefill `prompt_ids`, then feed each token `next_token(logits_row)` returns until
        it returns None; the caches hold `capacity` positions (the prompt and every token fed
        back). One GraphRecord per graph run (the first is prefill)."""
        if not prompt_ids:
            raise ValueError("the prompt has no tokens: give at least one")
        if capacity < len(prompt_ids):
            raise ValueError(f"a cache of {capacity} positions cannot hold the prompt's "
                             f"{len(prompt_ids)} tokens")
        records: list[GraphRecord] = []
        with device(self.chip) as dev:
            resident, cache = {}, {}
            try:
                resident = {n: dev.tensor(self.graph.constants[n], name=n) for n in self.weights}
                for name, _ in self.cache:
                    cache[name] = dev.tensor(np.zeros(self.cache_shape(name, capacity),
                                                      np.float32), self.dtype, name)
                ids, start = list(prompt_ids), 0
                while True:
                    if start + len(ids) > capacity:
                        raise ValueError(f"position {start + len(ids) - 1} is past the cache's "
                                         f"{capacity} positions")
                    graph = self.gear(len(ids), capacity)
                    feeds = {graph.inputs[0]: np.array([ids], np.int64),
                             graph.inputs[1]: np.arange(start, start + len(ids))[None],
                             **cache, **{n: resident[n] for n in graph.inputs if n in resident}}
                    outputs = dev.run_graph(graph, feeds, fuse=fuse)
                    assert dev.last_graph is not None       # run_graph keeps its record
                    records.append(dev.last_graph)
                    logits = outputs[graph.outputs[0]]
                    try:
                        row = logits.numpy().reshape(-1, logits.shape[-1])[-1]
                    finally:
                        logits.free()
                    self._check_in_place(cache, outputs)
                    start += len(ids)
                    token = next_token(row)
                    if token is None:
                        return records
                    ids = [token]
            finally:
                for t in (*resident.values(), *cache.values()):
                    t.free()

    def _check_in_place(self, cache: dict, outputs: dict) -> None:
        moved = [name for name, updated in self.cache if outputs[updated] is not cache[name]]
        if moved:
            for name in moved:
                outputs[dict(self.cache)[name]].free()
            raise CacheNotInPlace(f"the runtime wrote {len(moved)} updated cache(s) "
                                  f"({moved[0]}, ...) to new memory instead of in place: the "
                                  f"graph must update each donated cache with a ScatterND "
                                  f"that is its only reader")
