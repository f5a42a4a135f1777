"""`IxlBackend`: ONNX's backend interface over ixl. A model becomes an ixl graph that runs node
by node on a simulated Ascend chip: native kernels where ported, the shim elsewhere.

A model is prepared once and runs any input shape (named dims within their declared ranges,
if given). At each call the host specialises the graph to the inputs' shapes, and to the
values of inputs read only as shapes, axes or counts, as an offline compiler does for one
input shape: what depends on constants, shapes and those values (the shape arithmetic a
dynamic-shape export leaves: Shape, Size, Constant, ConstantOfShape, Range and the integer ops
over their results; weight transforms) is evaluated there, never launched, and shows in the
run's record as host work taking no device time. Specialisations are cached by those shapes
and values, as the kernels' host tilings are (nixl.tiling_cache). Optional shape buckets pad
named dims up to a multiple (zeros, for models that mask padding, as an attention mask does)
and crop the outputs' dims of the same names.

Some models cannot be converted before they run: an LSTM or GRU whose sequence axis is a
named dim has no length to unroll, a Loop whose trip count comes from the input shapes (as
tf2onnx writes recurrent layers) or from an input's value has no count. Such a model
(errors.NeedsShapes) is converted at its first run with the inputs' concrete shapes, and where
those are not enough with the values of its small inputs too, once per distinct set
(`RunConvertedRep`), each conversion then specialised as any model is.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx.backend.base import Backend, BackendRep, namedtupledict

from ..hixl import ArgSpec, BadInput
from ..hixl.dtypes import name_of
from ..nixl import Device, GraphRecord, RunRecord, device, log
from ..nixl.graph import Graph
from .convert import Converted, Declared, ValueSpec, convert, declared_only
from .errors import NeedsShapes
from .passes import host_only_inputs, optimize, specialized
from .structure import check_weights, without_weights

SPECIALISATIONS = 64        # per prepared model ([U]: a bound on memory)


class IxlBackendRep(BackendRep):
    """A converted model, ready to run on `chip`; each run uses a fresh device, so a leak shows
    at its close, and keeps the run's GraphRecord in `last_graph`. `dim_ranges` bounds named
    dims ({"sequence": (1, 512)}); `buckets` pads named dims up to a multiple."""

    def __init__(self, converted: Converted, chip: str = "910B1", debug: bool | None = None,
                 dim_ranges: dict | None = None, buckets: dict | None = None) -> None:
        self.converted = converted
        self.graph = converted.graph
        self.chip = chip
        self.debug = debug
        self.dim_ranges = dict(dim_ranges or {})
        self.buckets = check_buckets(buckets or {})
        self.last_graph: GraphRecord | None = None
        self.host_only = host_only_inputs(self.graph)
        self._calls: dict = {}          # specialisations by input shapes and host values
        self._lock = threading.Lock()

    def feeds(self, inputs: Any) -> dict[str, np.ndarray]:
        """Inputs by position (a list or one array) or by name (a dict), checked against the
        model's declared dtypes."""
        return checked_feeds(self.converted.inputs, inputs, self.dim_ranges)

    def run(self, inputs: Any, fuse: bool = False, timing_only: bool = False,
            dev: Device | None = None, **kwargs: Any) -> tuple[np.ndarray, ...]:
        """Run on a fresh device (or on `dev`, left open): with `fuse`, chains of elementwise
        nodes as fused kernels; with `timing_only`, only the modeled time (no data math,
        outputs meaningless). Inputs are checked before anything is allocated."""
        feeds = self.feeds(inputs)
        feeds, sizes = pad_to_buckets(self.converted, feeds, self.buckets)
        if dev is not None:
            values = self._run_on(dev, feeds, fuse)
        else:
            with device(self.chip, debug=self.debug, timing_only=timing_only) as fresh:
                values = self._run_on(fresh, feeds, fuse)
        values = crop_to_sizes(self.converted, values, sizes)
        return namedtupledict("Outputs", self.graph.outputs)(*values)

    def _run_on(self, dev, feeds: dict, fuse: bool) -> list[np.ndarray]:
        graph, host_nodes = self.specialise(feeds)
        outputs = dev.run_graph(graph, {n: a for n, a in feeds.items() if n in graph.inputs},
                                fuse=fuse)
        host = [RunRecord(node.op, dev.chip.name, "host", shapes, dtype, nodes=[node.name],
                          reason="shape arithmetic, evaluated on the host: no launch",
                          attrs=node.attrs) for node, shapes, dtype in host_nodes]
        dev.stream.extend(host)
        self.last_graph = GraphRecord(host + dev.last_graph.runs)
        try:
            return [outputs[name].numpy() for name in self.graph.outputs]
        finally:
            for t in outputs.values():
                t.free()

    def optimised(self, feeds: dict, fixed: frozenset[str] = frozenset()) -> IxlBackendRep:
        """This model as an offline compiler leaves it for these inputs: specialised to their
        shapes (padded to the buckets) and to the values of the `fixed` ones, constants folded
        and exporters' decompositions fused (passes.optimize); the fixed inputs are no
        longer inputs."""
        padded, _ = pad_to_buckets(self.converted, feeds, self.buckets)
        shapes = {s.name: ArgSpec(padded[s.name].shape, s.dtype) for s in self.converted.inputs
                  if s.name not in fixed}
        graph = optimize(self.graph, shapes, {n: feeds[n] for n in fixed})
        inputs = [s for s in self.converted.inputs if s.name not in fixed]
        converted = Converted(graph, inputs, self.converted.outputs, self.converted.opset)
        return IxlBackendRep(converted, self.chip, self.debug, self.dim_ranges, self.buckets)

    def specialise(self, feeds: dict) -> tuple[Graph, list[tuple]]:
        """The graph for these inputs: their shapes fixed, the values of inputs read only as
        shapes known, what the host can compute folded. Returns it and the folded nodes
        (node, input shapes, dtype), cached by the shapes and values."""
        fixed = {n: a for n, a in feeds.items() if n in self.host_only}
        specs = {n: ArgSpec(a.shape, name_of(a.dtype)) for n, a in feeds.items()
                 if n not in fixed}
        key = (tuple(sorted((n, s.shape, s.dtype) for n, s in specs.items())),
               tuple(sorted((n, a.dtype.str, a.shape, a.tobytes()) for n, a in fixed.items())))
        with self._lock:
            hit = self._calls.get(key)
        if log.enabled():
            log.note(f"shape specialisation {'hit' if hit else 'miss'}: "
                     f"{dict((n, s.shape) for n, s in specs.items())}")
        if hit is not None:
            return hit
        graph, known = specialized(self.graph, specs, fixed, keep_outputs=False)
        kept = {id(node) for node in known.kept}
        host_nodes = [(node, [known.specs[n].shape for n in node.inputs if n in known.specs],
                       _dtype(node, known)) for node in self.graph.nodes if id(node) not in kept]
        with self._lock:
            if len(self._calls) >= SPECIALISATIONS:
                self._calls.pop(next(iter(self._calls)))
            self._calls[key] = (graph, host_nodes)
        return graph, host_nodes


# Inputs whose values a conversion may read (a Loop's trip count, its condition, the bounds a
# Range's trip count comes from): inputs of at most this many elements ([U]: counts, flags and
# bounds are scalars; the bound keeps data, whose values would make one conversion per call,
# out of the key).
SMALL_INPUT = 16


class RunConvertedRep(BackendRep):
    """A model converted at its first run (module docstring): the model as declared, and one
    IxlBackendRep per set of input shapes (with the small inputs' values where the
    shapes were not enough), made when a run first needs it."""

    def __init__(self, model: onnx.ModelProto, declared: Declared, chip: str = "910B1",
                 debug: bool | None = None, dim_ranges: dict | None = None,
                 buckets: dict | None = None) -> None:
        self.model = model
        self.converted = declared           # inputs and outputs as declared; no graph yet
        self.chip, self.debug = chip, debug
        self.dim_ranges = dict(dim_ranges or {})
        self.buckets = check_buckets(buckets or {})
        self.last_graph: GraphRecord | None = None
        self._reps: dict = {}               # by shapes, then (shapes, values) where needed
        self._lock = threading.Lock()

    def feeds(self, inputs: Any) -> dict[str, np.ndarray]:
        return checked_feeds(self.converted.inputs, inputs, self.dim_ranges)

    def run(self, inputs: Any, **kwargs: Any) -> tuple[np.ndarray, ...]:
        """IxlBackendRep.run on the conversion for these inputs."""
        feeds = self.feeds(inputs)
        rep = self.for_run(feeds)
        try:
            return rep.run(feeds, **kwargs)
        finally:
            self.last_graph = rep.last_graph

    def optimised(self, feeds: dict, fixed: frozenset[str] = frozenset()) -> IxlBackendRep:
        return self.for_run(feeds).optimised(feeds, fixed)

    def for_run(self, feeds: dict[str, np.ndarray]) -> IxlBackendRep:
        """The model converted for inputs like `feeds` (cached)."""
        specs = {n: ArgSpec(a.shape, name_of(a.dtype)) for n, a in feeds.items()}
        key: tuple = tuple((n, s.shape, s.dtype) for n, s in specs.items())
        with self._lock:
            rep = self._reps.get(key)
            if rep is None:
                rep = self._converted(key, specs, None)
            if rep is _NEEDS_VALUES:
                values = {n: a for n, a in feeds.items() if a.size <= SMALL_INPUT}
                key = (key, tuple((n, a.tobytes()) for n, a in values.items()))
                rep = self._reps.get(key) or self._converted(key, specs, values)
            assert isinstance(rep, IxlBackendRep)
            return rep

    def _converted(self, key: tuple, specs: dict, values: dict | None):
        """Convert for `specs` (and `values`), keep it under `key`; a conversion that the
        shapes alone do not allow is kept as needing values."""
        if log.enabled():
            log.note(f"converting the model for input shapes "
                     f"{dict((n, s.shape) for n, s in specs.items())}"
                     + (f" and values of {', '.join(values)}" if values else ""))
        try:
            made = IxlBackendRep(convert(self.model, specs, values), self.chip, self.debug,
                                 self.dim_ranges, self.buckets)
        except NeedsShapes:
            if values is not None:
                raise
            made = _NEEDS_VALUES
        if len(self._reps) >= SPECIALISATIONS:
            self._reps.pop(next(iter(self._reps)))
        self._reps[key] = made
        return made


_NEEDS_VALUES: Any = object()      # a set of shapes whose conversion needs input values too


def _may_help(spec: ValueSpec) -> bool:
    """A run gives what a conversion may need of this input: a dim the model leaves open, or
    the value of a small input."""
    static = all(isinstance(d, int) for d in spec.shape)
    return not static or int(np.prod(spec.shape)) <= SMALL_INPUT


def checked_feeds(specs: list[ValueSpec], inputs: Any, dim_ranges: dict
                  ) -> dict[str, np.ndarray]:
    """Inputs by position (a list or one array) or by name (a dict), checked against the
    declared `specs` (dtypes, dims, `dim_ranges`)."""
    if isinstance(inputs, dict):
        missing = [s.name for s in specs if s.name not in inputs]
        if missing:
            raise BadInput(f"model inputs not given: {', '.join(missing)}")
        arrays = [inputs[s.name] for s in specs]
    else:
        arrays = [inputs] if isinstance(inputs, np.ndarray) else list(inputs)
        if len(arrays) != len(specs):
            raise BadInput(f"the model takes {len(specs)} input(s) "
                           f"({', '.join(map(str, specs))}), got {len(arrays)}")
    feeds = {}
    for spec, array in zip(specs, arrays):
        array = np.asarray(array)
        if name_of(array.dtype) != spec.dtype:
            raise BadInput(f"input {spec.name} is {array.dtype}, the model declares "
                           f"{spec.dtype}")
        check_shape(spec, array.shape, dim_ranges)
        feeds[spec.name] = array
    return feeds


def _dtype(node, known) -> str | None:
    first = next((n for n in (*node.inputs, *node.outputs) if n in known.specs), None)
    return None if first is None else known.specs[first].dtype


def check_buckets(buckets: dict) -> dict:
    """Named dim -> multiple ("*" for every named dim), each a positive integer."""
    for name, size in buckets.items():
        if isinstance(size, bool) or not isinstance(size, int) or size < 1:
            raise BadInput(f"bucket {name}={size!r}: a bucket is a positive integer")
    return dict(buckets)


def pad_to_buckets(converted: Converted, feeds: dict, buckets: dict) -> tuple[dict, dict]:
    """Each named input dim with a bucket padded with zeros up to a multiple of it; returns
    the feeds and the real size of each padded dim name."""
    if not buckets:
        return feeds, {}
    sizes, padded = {}, {}
    for spec in converted.inputs:
        array = feeds[spec.name]
        widths = []
        for d, n in zip(spec.shape, array.shape):
            bucket = buckets.get(d, buckets.get("*")) if isinstance(d, str) else None
            if bucket is None:
                widths.append((0, 0))
                continue
            sizes[d] = n
            widths.append((0, -(-n // bucket) * bucket - n))
        padded[spec.name] = np.pad(array, widths) if any(w for _, w in widths) else array
    return padded, sizes


def crop_to_sizes(converted: Converted, values: list, sizes: dict) -> list:
    """Outputs cut back along the named dims that were padded."""
    if not sizes:
        return values
    out = []
    for spec, value in zip(converted.outputs, values):
        cut = tuple(slice(0, sizes[d]) if isinstance(d, str) and d in sizes else slice(None)
                    for d in spec.shape)
        out.append(value[cut] if len(cut) == value.ndim else value)
    return out


def check_shape(spec: ValueSpec, shape: tuple, ranges: dict | None = None) -> None:
    """A given input must match the model's declared static dims; a named dim takes any size,
    within its range when one is given ({name: (lowest, highest)})."""
    declared = spec.shape
    fits = len(declared) == len(shape) and all(
        not isinstance(d, int) or d == g for d, g in zip(declared, shape))
    if not fits:
        raise BadInput(f"input {spec.name} has shape {list(shape)}, the model declares "
                         f"{list(declared)} (named dims take any size, numbered ones must "
                         f"match)")
    for d, g in zip(declared, shape):
        low, high = (ranges or {}).get(d, (0, None)) if isinstance(d, str) else (0, None)
        if g < low or (high is not None and g > high):
            raise BadInput(f"input {spec.name}: dim {d} is {g}, outside its declared range "
                           f"[{low}, {high}]")


def load_model(source: str | Path | onnx.ModelProto) -> onnx.ModelProto:
    """A model from a path (str or Path) or as is, with a clear error for a bad file."""
    if isinstance(source, onnx.ModelProto):
        return source
    if not isinstance(source, (str, Path)):
        raise BadInput(f"a model is an onnx.ModelProto or the path of an .onnx file, got "
                        f"{type(source).__name__}")
    if not Path(source).is_file():
        raise BadInput(f"no such model file: {source}")
    try:
        return onnx.load(str(source))
    except Exception as e:  # noqa: BLE001  (protobuf raises several types for a bad file)
        raise BadInput(f"{source} is not a readable ONNX model ({type(e).__name__}: "
                         f"{e})") from None


class IxlBackend(Backend):
    """ONNX backend over ixl. ONNX names host devices ("CPU", "CUDA"); ixl always runs on a
    simulated Ascend chip, chosen with `chip=` (default 910B1), so it answers for "CPU" only."""

    @classmethod
    def prepare(cls, model: str | Path | onnx.ModelProto, device: str = "CPU", chip: str = "910B1",
                debug: bool | None = None, dim_ranges: dict | None = None,
                buckets: dict | None = None, **kwargs: Any
                ) -> IxlBackendRep | RunConvertedRep:
        """`model` is an onnx.ModelProto or the path of an .onnx file."""
        model = load_model(model)
        try:
            super().prepare(without_weights(model), device, **kwargs)      # onnx.checker
            check_weights(model)
        except onnx.checker.ValidationError as e:
            raise BadInput(f"the model is not valid ONNX: {e}") from None
        try:
            return IxlBackendRep(convert(model), chip, debug, dim_ranges, buckets)
        except NeedsShapes:
            declared = declared_only(model)
            if not any(_may_help(s) for s in declared.inputs):
                raise                           # no run can give what it needs
            return RunConvertedRep(model, declared, chip, debug, dim_ranges, buckets)

    @classmethod
    def supports_device(cls, device: str) -> bool:
        return device == "CPU"
