"""`IxlBackend`: ONNX's backend interface over ixl. A model becomes an ixl graph that runs node
by node on a simulated Ascend chip: native kernels where ported, the shim elsewhere."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx.backend.base import Backend, BackendRep, namedtupledict

from ..hixl import BadInput
from ..hixl.dtypes import name_of
from ..nixl import device
from .convert import Converted, convert


class IxlBackendRep(BackendRep):
    """A converted model, ready to run on `chip`; each run uses a fresh device, so a leak shows
    at its close, and keeps the run's GraphRecord in `last_graph`."""

    def __init__(self, converted: Converted, chip: str = "910B1", debug: bool | None = None):
        self.converted = converted
        self.graph = converted.graph
        self.chip = chip
        self.debug = debug
        self.last_graph = None

    def feeds(self, inputs: Any) -> dict[str, np.ndarray]:
        """Inputs by position (a list or one array) or by name (a dict), checked against the
        model's declared dtypes."""
        specs = self.converted.inputs
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
            check_shape(spec, array.shape)
            feeds[spec.name] = array
        return feeds

    def run(self, inputs: Any, fuse: bool = False, timing_only: bool = False,
            dev=None, **kwargs: Any) -> tuple[np.ndarray, ...]:
        """Run on a fresh device (or on `dev`, left open): with `fuse`, chains of elementwise
        nodes as fused kernels; with `timing_only`, only the modeled time (no data math,
        outputs meaningless). Inputs are checked before anything is allocated."""
        feeds = self.feeds(inputs)
        if dev is not None:
            return self._run_on(dev, feeds, fuse)
        with device(self.chip, debug=self.debug, timing_only=timing_only) as fresh:
            return self._run_on(fresh, feeds, fuse)

    def _run_on(self, dev, feeds: dict, fuse: bool) -> tuple[np.ndarray, ...]:
        outputs = dev.run_graph(self.graph, feeds, fuse=fuse)
        self.last_graph = dev.last_graph
        try:
            values = [outputs[name].numpy() for name in self.graph.outputs]
        finally:
            for t in outputs.values():
                t.free()
        return namedtupledict("Outputs", self.graph.outputs)(*values)


def check_shape(spec, shape: tuple) -> None:
    """A given input must match the model's declared static dims (symbolic ones take any)."""
    declared = spec.shape
    fits = len(declared) == len(shape) and all(
        not isinstance(d, int) or d == g for d, g in zip(declared, shape))
    if not fits:
        raise BadInput(f"input {spec.name} has shape {list(shape)}, the model declares "
                         f"{list(declared)} (named dims take any size, numbered ones must "
                         f"match)")


def load_model(source) -> onnx.ModelProto:
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
    def prepare(cls, model, device: str = "CPU", chip: str = "910B1",
                debug: bool | None = None, **kwargs: Any) -> IxlBackendRep:
        """`model` is an onnx.ModelProto or the path of an .onnx file."""
        model = load_model(model)
        try:
            super().prepare(model, device, **kwargs)      # onnx.checker
        except onnx.checker.ValidationError as e:
            raise BadInput(f"the model is not valid ONNX: {e}") from None
        return IxlBackendRep(convert(model), chip, debug)

    @classmethod
    def supports_device(cls, device: str) -> bool:
        return device == "CPU"
