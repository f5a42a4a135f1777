"""The device: `ixl.device("910B1")` gives a GM allocator, a stream of runs and the registry."""

from __future__ import annotations

import dataclasses
import os
import warnings

import numpy as np

from ..ascend import ChipSpec
from ..hixl import ArgSpec, get_op, to_numpy
from ..hixl.dtypes import name_of
from .allocator import GMAllocator
from .backend import Backend, create_backend
from .errors import DeviceClosed, KernelDeclined, KernelStartFailed
from .graph import Graph, GraphRecord, run_graph
from .launch import run_native
from .views import VIEW_OPS
from .record import RunRecord
from .registry import REGISTRY, Registry
from .shim import run_shim
from .tensor import DeviceTensor
from .tensor_desc import TensorDesc


def _env_flag(name: str) -> bool:
    return os.environ.get(name, "").lower() in ("1", "true", "yes", "on")


def _spec(schema, name: str, t: DeviceTensor) -> ArgSpec:
    """A host input (a shape, axes, k) is read back: the host sizes the outputs from it, as a
    dynamic-shape op's host tiling does."""
    if schema.declared(name) in schema.host_inputs:
        return schema.spec_of(name, t.numpy())
    return ArgSpec(t.shape, t.dtype)


class Device:
    def __init__(self, chip: str = "910B1", *, debug: bool | None = None,
                 timing_only: bool = False, record: bool = False,
                 registry: Registry = REGISTRY):
        self.backend: Backend = create_backend(chip)
        self.chip: ChipSpec = self.backend.chip
        self.debug = _env_flag("IXL_DEBUG") if debug is None else debug
        self.timing_only = timing_only
        self.record = record                  # keep every pipe slice (traces, plots)
        self.registry = registry
        self.allocator = GMAllocator(self.backend.gm, self.chip.hbm_bytes,
                                     self.chip.gm_alloc_align, self.chip.name)
        self.last_profile: RunRecord | None = None
        self.last_graph: GraphRecord | None = None
        self.stream: list[RunRecord] = []
        self.closed = False

    # ---- memory ----
    def empty(self, shape, dtype: str, name: str = "tensor",
              desc: TensorDesc | None = None) -> DeviceTensor:
        self._check_open()
        desc = desc or TensorDesc.nd(shape, dtype)
        addr = self.allocator.alloc(desc.nbytes, name)
        return DeviceTensor(self, desc, addr, name)

    def tensor(self, array, dtype: str | None = None, name: str = "tensor") -> DeviceTensor:
        """Copy a host array in (cast to `dtype` if given)."""
        array = np.asarray(array)
        dtype = dtype or name_of(array.dtype)
        t = self.empty(array.shape, dtype, name)
        self.write(t, array)
        return t

    def write(self, t: DeviceTensor, array: np.ndarray) -> None:
        data = np.asarray(array).astype(to_numpy(t.dtype), copy=False)
        if data.shape != t.shape:
            raise ValueError(f"write of shape {data.shape} into {t.name} of shape {t.shape}")
        if t.desc.is_padded:
            padded = np.zeros(t.desc.storage_shape, data.dtype)
            padded[tuple(slice(0, d) for d in t.shape)] = data
            data = padded
        self.backend.gm.bytes(t.addr, t.desc.nbytes)[:] = np.ascontiguousarray(data).reshape(-1).view(np.uint8)

    def read(self, addr: int, nbytes: int) -> np.ndarray:
        return self.backend.gm.bytes(addr, nbytes).copy()

    def release(self, t: DeviceTensor) -> None:
        if not self.closed:
            self.allocator.free(t.addr)

    # ---- running ops ----
    def run(self, op: str, *inputs: DeviceTensor, config: dict | None = None, **attrs):
        """Run an op by name: the native kernel when it takes the case, else the shim."""
        self._check_open()
        schema = get_op(op)
        for t in inputs:
            if t is not None and not isinstance(t, DeviceTensor):
                raise TypeError(f"{op}: inputs are device tensors (dev.tensor(array)) or None "
                                f"for an omitted optional input, got {type(t).__name__}")
            if t is not None and not t.alive:
                raise KernelStartFailed(f"kernel start failed: input {t.name} was freed")
        specs = [None if t is None else _spec(schema, name, t)
                 for name, t in zip(schema.input_names(len(inputs)), inputs)]
        bound = schema.check(specs, attrs)
        out_specs = schema.infer_fn(schema, specs, bound)
        if op in VIEW_OPS and not inputs[0].desc.is_padded:
            return self._view(op, inputs, out_specs[0], bound)
        entry = self.registry.native(op)
        in_descs = [None if t is None else t.desc if s.value is None
                    else dataclasses.replace(t.desc, value=s.value)
                    for t, s in zip(inputs, specs)]
        reason = "no native kernel" if entry is None else entry.why_not(in_descs, bound)
        out_descs = (entry.desc_fn(in_descs, bound) if entry is not None and reason is None
                     and entry.desc_fn else [TensorDesc.nd(s.shape, s.dtype) for s in out_specs])
        outputs = []
        try:
            for desc, name in zip(out_descs, schema.output_names(len(out_descs))):
                outputs.append(self.empty(desc.shape, desc.dtype, f"{op}.{name}", desc))
            record = None
            if reason is None:
                try:
                    record = run_native(self, entry, list(inputs), outputs, bound, config,
                                        in_descs)
                except KernelDeclined as declined:
                    reason = str(declined)
            if record is None:
                record = run_shim(self, schema, list(inputs), outputs, bound, reason)
        except BaseException:
            for t in outputs:
                t.free()
            raise
        self.last_profile = record
        self.stream.append(record)
        return outputs[0] if len(outputs) == 1 else tuple(outputs)

    def _view(self, op: str, inputs, spec: ArgSpec, attrs: dict) -> DeviceTensor:
        """A contiguous tensor re-described: same storage, no data moved, no launch."""
        base = inputs[0]
        self.allocator.share(base.addr)
        out = DeviceTensor(self, TensorDesc.nd(spec.shape, spec.dtype), base.addr,
                           f"{op}({base.name})")
        record = RunRecord(op, self.chip.name, "view", [t and t.shape for t in inputs],
                           base.dtype, reason="a view: the same bytes under a new shape",
                           attrs=attrs)
        self.last_profile = record
        self.stream.append(record)
        return out

    def run_graph(self, graph: Graph, feeds: dict, fuse: bool = False) -> dict:
        """Run a graph node by node (or, with `fuse`, chains of elementwise nodes as fused
        kernels); `feeds` maps graph inputs to device tensors or arrays. The launches are kept
        in `last_graph` (a GraphRecord)."""
        self._check_open()
        outputs, self.last_graph = run_graph(self, graph, feeds, fuse)
        return outputs

    # ---- lifecycle ----
    def _check_open(self) -> None:
        if self.closed:
            raise DeviceClosed(f"device {self.chip.name} is closed")

    def close(self) -> list[str]:
        """Close the device; returns (and warns about) the allocations still live."""
        if self.closed:
            return []
        leaks = self.allocator.leak_report()
        if leaks:
            warnings.warn(f"{self.chip.name}: {len(leaks)} allocation(s) still live at close: "
                          + "; ".join(leaks), ResourceWarning, stacklevel=2)
        self.allocator.empty_cache()
        self.closed = True
        return leaks

    def __enter__(self) -> Device:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Device({self.chip.name}, debug={self.debug})"


def device(chip: str = "910B1", **kwargs) -> Device:
    return Device(chip, **kwargs)
