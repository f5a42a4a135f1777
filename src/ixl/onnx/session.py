"""`InferenceSession`: onnxruntime's session API over IxlBackend, so that code written for
onnxruntime runs on the simulated chip with one changed import:

    from ixl.onnx import InferenceSession        # was: from onnxruntime import InferenceSession
    session = InferenceSession("model.onnx")
    outputs = session.run(None, {"input": x})

The calls and types are onnxruntime's: `get_inputs()` / `get_outputs()` give NodeArgs (name,
shape with symbolic dims as their names, type as "tensor(float)"), `get_modelmeta()` the model's
metadata, `run(output_names, input_feed)` a list of arrays; a wrong input name, rank, dim or
dtype and a wrong output name raise InvalidArgument with onnxruntime's message, missing inputs
a ValueError. The session optimises as onnxruntime does by default (ORT_ENABLE_ALL): each
input shape gets the model specialised to it, constants folded, exporters' decompositions fused
and elementwise chains fused into their kernels; an onnxruntime SessionOptions whose
graph_optimization_level is ORT_DISABLE_ALL runs the graph as converted. What onnxruntime has
no call for is ixl's own: `last_modeled_us` and `last_profile` (the last run's GraphRecord).

Providers: the session always runs on ixl's simulated chip. "IxlExecutionProvider" takes the
options chip (default 910B1) and debug; any other provider named (onnxruntime's CPU one, as
code written for it names) is accepted, and stands for that.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import onnx

from ..hixl import BadInput
from ..hixl.dtypes import name_of
from ..hixl.errors import DtypeError
from ..nixl import GraphRecord
from .backend import IxlBackend, IxlBackendRep, RunConvertedRep, load_model
from .convert import ValueSpec

PROVIDER = "IxlExecutionProvider"
OPTIMISED = 64                      # input shapes whose optimised graphs a session keeps
ORT_DISABLE_ALL = 0                 # onnxruntime's GraphOptimizationLevel that turns passes off
ORT_TYPES = {"float32": "float", "float64": "double", "float16": "float16",
             "bfloat16": "bfloat16", "int32": "int32", "int64": "int64", "bool": "bool"}


class InvalidArgument(BadInput):
    """What onnxruntime raises as INVALID_ARGUMENT, with its message."""

    def __init__(self, message: str) -> None:
        super().__init__(f"[ONNXRuntimeError] : 2 : INVALID_ARGUMENT : {message}")


class MissingInputs(BadInput, ValueError):
    """Inputs the model needs that the feed lacks (onnxruntime raises a ValueError)."""


@dataclass(frozen=True)
class NodeArg:
    name: str
    shape: list            # ints, the names of symbolic dims, None for unknown ones
    type: str              # "tensor(float)", as onnxruntime spells element types


@dataclass(frozen=True)
class ModelMetadata:
    producer_name: str
    graph_name: str
    graph_description: str
    domain: str
    description: str
    version: int
    custom_metadata_map: dict = field(default_factory=dict)


def _node_arg(spec: ValueSpec) -> NodeArg:
    shape = [None if d == "?" else d for d in spec.shape]
    return NodeArg(spec.name, shape, f"tensor({ORT_TYPES.get(spec.dtype, spec.dtype)})")


def _chip_options(providers: Any, provider_options: Any) -> dict:
    """The IxlExecutionProvider's options (chip, debug) among onnxruntime's provider forms:
    names, (name, options) pairs, or names with a parallel list of options."""
    if providers is None:
        return {}
    if isinstance(providers, (str, bytes)) or not isinstance(providers, (list, tuple)):
        raise BadInput(f"providers must be a list of provider names or (name, options) pairs, "
                       f"got {type(providers).__name__}")
    given = list(provider_options or [{}] * len(providers))
    if len(given) != len(providers):
        raise BadInput(f"provider_options has {len(given)} entries for {len(providers)} "
                       f"providers: give one per provider")
    for provider, options in zip(providers, given):
        if isinstance(provider, (list, tuple)):
            provider, options = provider
        if provider == PROVIDER:
            unknown = set(options) - {"chip", "debug"}
            if unknown:
                raise BadInput(f"{PROVIDER} options: {', '.join(sorted(unknown))} unknown "
                               f"(it takes chip and debug)")
            return dict(options)
    return {}


def _model(path_or_bytes: Any) -> onnx.ModelProto:
    if isinstance(path_or_bytes, (bytes, bytearray)):
        try:
            return onnx.load_from_string(bytes(path_or_bytes))
        except Exception as e:  # noqa: BLE001  (protobuf raises several types for bad bytes)
            raise BadInput(f"the bytes are not an ONNX model ({type(e).__name__}: {e})") \
                from None
    if isinstance(path_or_bytes, (str, Path)):
        return load_model(path_or_bytes)
    raise BadInput(f"path_or_bytes is the path of an .onnx file or a serialized model, got "
                   f"{type(path_or_bytes).__name__}")


class InferenceSession:
    """An ONNX model on ixl's simulated chip, behind onnxruntime's session calls. A session
    may be run from several threads."""

    def __init__(self, path_or_bytes: str | Path | bytes, sess_options: Any = None,
                 providers: Any = None, provider_options: Any = None, **kwargs: Any) -> None:
        options = _chip_options(providers, provider_options)
        self._model = _model(path_or_bytes)
        self._rep = IxlBackend.prepare(self._model, chip=options.get("chip", "910B1"),
                                       debug=options.get("debug"))
        level = getattr(sess_options, "graph_optimization_level", None)
        self._optimise = level is None or int(level) != ORT_DISABLE_ALL
        self._inputs = [_node_arg(s) for s in self._rep.converted.inputs]
        self._outputs = [_node_arg(s) for s in self._rep.converted.outputs]
        self._optimised: dict[tuple, IxlBackendRep] = {}
        self._lock = threading.Lock()
        self._local = threading.local()

    # ---- onnxruntime's calls ----
    def get_inputs(self) -> list[NodeArg]:
        return list(self._inputs)

    def get_outputs(self) -> list[NodeArg]:
        return list(self._outputs)

    def get_providers(self) -> list[str]:
        return [PROVIDER]

    def get_modelmeta(self) -> ModelMetadata:
        m = self._model
        return ModelMetadata(m.producer_name, m.graph.name, m.graph.doc_string, m.domain,
                             m.doc_string, m.model_version,
                             {p.key: p.value for p in m.metadata_props})

    def run(self, output_names: list[str] | None, input_feed: dict[str, Any],
            run_options: Any = None) -> list[np.ndarray]:
        """The outputs named (all, for None), in that order, for the inputs fed by name."""
        feeds = self._checked(input_feed)
        names = [o.name for o in self._outputs]
        wanted = names if not output_names else list(output_names)
        for name in wanted:
            if name not in names:
                raise InvalidArgument(f"Invalid output name:{name}")
        rep = self._rep_for(feeds)
        values = rep.run(feeds, fuse=self._optimise)
        self._local.record = rep.last_graph
        return [values[names.index(name)] for name in wanted]

    # ---- ixl's own ----
    @property
    def last_profile(self) -> GraphRecord | None:
        """The GraphRecord of this thread's last run: every op's path and modeled time."""
        return getattr(self._local, "record", None)

    @property
    def last_modeled_us(self) -> float | None:
        """The modeled time of this thread's last run on the chip, microseconds."""
        record = self.last_profile
        return None if record is None else sum(r.time_us for r in record.runs)

    # ---- checks, as onnxruntime makes them ----
    def _checked(self, input_feed: dict[str, Any]) -> dict[str, np.ndarray]:
        if not isinstance(input_feed, dict):
            raise BadInput(f"input_feed is a dict of input name -> array, got "
                           f"{type(input_feed).__name__}")
        declared = {i.name: i for i in self._inputs}
        missing = [n for n in declared if n not in input_feed]
        if missing:
            raise MissingInputs(f"Required inputs ({missing}) are missing from input feed "
                                f"({list(input_feed)}).")
        for name in input_feed:
            if name not in declared:
                raise InvalidArgument(f"Invalid input name: {name}")
        feeds = {}
        for name, arg in declared.items():
            array = np.asarray(input_feed[name])
            given = f"tensor({ORT_TYPES.get(_dtype(array), array.dtype.name)})"
            if given != arg.type:
                raise InvalidArgument(f"Unexpected input data type. Actual: ({given}) , "
                                      f"expected: ({arg.type})")
            if array.ndim != len(arg.shape):
                raise InvalidArgument(f"Invalid rank for input: {name} Got: {array.ndim} "
                                      f"Expected: {len(arg.shape)} Please fix either the "
                                      f"inputs/outputs or the model.")
            wrong = [(k, got, want) for k, (got, want) in enumerate(zip(array.shape, arg.shape))
                     if isinstance(want, int) and got != want]
            if wrong:
                lines = "".join(f"\n index: {k} Got: {got} Expected: {want}"
                                for k, got, want in wrong)
                raise InvalidArgument(f"Got invalid dimensions for input: {name} for the "
                                      f"following indices{lines}\n Please fix either the "
                                      f"inputs/outputs or the model.")
            feeds[name] = array
        return feeds

    def _rep_for(self, feeds: dict[str, np.ndarray]) -> IxlBackendRep | RunConvertedRep:
        """The model for these input shapes: optimised once per shape, or as converted."""
        if not self._optimise:
            return self._rep
        key = tuple((n, a.shape) for n, a in feeds.items())
        with self._lock:
            rep = self._optimised.get(key)
        if rep is None:
            rep = self._rep.optimised(feeds)
            with self._lock:
                if len(self._optimised) >= OPTIMISED:
                    self._optimised.pop(next(iter(self._optimised)))
                self._optimised[key] = rep
        return rep


def _dtype(array: np.ndarray) -> str:
    try:
        return name_of(array.dtype)
    except DtypeError:              # a dtype ixl has no name for: reported as numpy's
        return array.dtype.name
