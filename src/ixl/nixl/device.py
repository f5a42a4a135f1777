"""The device: `ixl.device("910B1")` gives a GM allocator, a stream of runs and the registry.

A device is safe to share between threads: one re-entrant lock serialises its memory, its runs
and its graphs (as one stream of a real device executes in order). Every tensor knows the
device that made it; a tensor of another device, or a freed one, is refused wherever it is
passed.
"""

from __future__ import annotations

import dataclasses
import itertools
import threading
import warnings
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike

from ..ascend import CHIPS, ChipSpec, UnknownChipError
from ..hixl import ArgSpec, BadInput, ShapeMismatch, get_op, to_numpy
from ..hixl.dtypes import name_of
from . import environment
from .allocator import VA_BASE, VA_STRIDE, GMAllocator, check_host
from .backend import Backend, create_backend
from .errors import DeviceClosed, KernelDeclined, KernelStartFailed
from .graph import Graph, GraphRecord, run_graph
from .launch import run_native
from .record import RunRecord
from .registry import REGISTRY, KernelEntry, Registry
from .shim import run_shim
from .tensor import DeviceTensor
from .tensor_desc import Format, TensorDesc
from .views import VIEW_OPS, contiguous_parts

if TYPE_CHECKING:
    from .tuning import TuningConfig

_device_ids = itertools.count(1)


def _shape(shape) -> tuple[int, ...]:
    """A shape as a tuple of non-negative ints (one int is a 1-D shape), or a clear error."""
    if isinstance(shape, (int, np.integer)) and not isinstance(shape, bool):
        shape = (shape,)
    if not isinstance(shape, (tuple, list, np.ndarray)):
        raise BadInput(f"a shape is a tuple of non-negative integers such as (4, 8), got "
                       f"{type(shape).__name__} {shape!r}")
    bad = [d for d in shape if isinstance(d, bool) or not isinstance(d, (int, np.integer))]
    if bad:
        raise BadInput(f"shape {tuple(shape)}: dims are integers, got {type(bad[0]).__name__} "
                       f"{bad[0]!r}")
    if any(d < 0 for d in shape):
        raise ShapeMismatch(f"shape {tuple(int(d) for d in shape)}: negative dim (dims are "
                            f"non-negative)")
    return tuple(int(d) for d in shape)


def _dtype_name(dtype) -> str:
    """A dtype name ixl knows; numpy dtypes are taken by their name."""
    if isinstance(dtype, str):
        to_numpy(dtype)
        return dtype
    if dtype is None:                   # numpy would read None as float64
        raise BadInput("a dtype is a name such as 'float16', got None")
    try:
        return name_of(dtype)
    except TypeError:
        raise BadInput(f"a dtype is a name such as 'float16', got {type(dtype).__name__} "
                       f"{dtype!r}") from None


def _spec(schema, name: str, t: DeviceTensor) -> ArgSpec:
    """A host input (a shape, axes, k) is read back: the host sizes the outputs from it, as a
    dynamic-shape op's host tiling does."""
    if schema.declared(name) in schema.host_inputs:
        return schema.spec_of(name, t.numpy())
    return ArgSpec(t.shape, t.dtype)


class Device:
    def __init__(self, chip: str = "910B1", *, debug: bool | None = None,
                 timing_only: bool = False, record: bool = False,
                 registry: Registry = REGISTRY) -> None:
        if not isinstance(chip, str):
            raise UnknownChipError(f"a chip is named by a string, one of {', '.join(CHIPS)}; "
                                   f"got {type(chip).__name__} {chip!r}")
        environment.check()
        self.backend: Backend = create_backend(chip)
        self.chip: ChipSpec = self.backend.chip
        self.debug = environment.debug_default() if debug is None else debug
        self.timing_only = timing_only
        self.record = record                  # keep every pipe slice (traces, plots)
        self.registry = registry
        self.index = next(_device_ids)
        self.allocator = GMAllocator(self.backend, self.chip.hbm_bytes,
                                     self.chip.gm_alloc_align, self.chip.name,
                                     base=VA_BASE + self.index * VA_STRIDE,
                                     host_check=not timing_only)
        self.last_profile: RunRecord | None = None
        self.last_graph: GraphRecord | None = None
        self.stream: list[RunRecord] = []
        self.closed = False
        self._lock = threading.RLock()

    @property
    def label(self) -> str:
        """The chip and this device's number in the process, e.g. 910B1#2."""
        return f"{self.chip.name}#{self.index}"

    # ---- memory ----
    def empty(self, shape: Sequence[int], dtype: str, name: str = "tensor",
              desc: TensorDesc | None = None) -> DeviceTensor:
        if desc is None:
            desc = TensorDesc.nd(_shape(shape), _dtype_name(dtype))
        with self._lock:
            self._check_open()
            addr = self.allocator.alloc(desc.nbytes, name)
            return DeviceTensor(self, desc, addr, name)

    def tensor(self, array: ArrayLike | DeviceTensor, dtype: str | None = None,
               name: str = "tensor") -> DeviceTensor:
        """Copy a host array in (cast to `dtype` if given)."""
        if isinstance(array, DeviceTensor):
            raise BadInput(f"dev.tensor copies a host array in; {array.name} is a device "
                           f"tensor already (t.numpy() copies one out)")
        try:
            array = np.asarray(array)
        except ValueError as e:             # a ragged list
            raise BadInput(f"dev.tensor: not an array ({e})") from None
        dtype = _dtype_name(dtype) if dtype is not None else name_of(array.dtype)
        t = self.empty(array.shape, dtype, name)
        try:
            self.write(t, array)
        except BaseException:
            t.free()
            raise
        return t

    def write(self, t: DeviceTensor, array: np.ndarray) -> None:
        with self._lock:
            self._own(t, "write target")
            data = np.asarray(array)
            if data.shape != t.shape:
                raise ShapeMismatch(f"write of shape {data.shape} into {t.name} of shape "
                                    f"{t.shape}")
            data = t.desc.to_storage(data.astype(to_numpy(t.dtype), copy=False))
            self.backend.write(t.addr, np.ascontiguousarray(data))

    def read(self, addr: int, nbytes: int) -> np.ndarray:
        with self._lock:
            self._check_open()
            return self.backend.read(addr, nbytes)

    def release(self, t: DeviceTensor) -> None:
        """Free `t` once (from any thread; a second free does nothing)."""
        with self.allocator.lock:
            if not t.alive:
                return
            t.alive = False
            if not self.closed:
                self.allocator.free(t.block)

    def check_fits(self, specs: Sequence[ArgSpec | None], what: str, host_bytes: int = 0) -> None:
        """Refuse a run before anything is made: its device tensors (`specs`) against the free
        device memory, then `host_bytes` of host arrays plus (unless timing-only, which
        touches no data) the simulated GM they take against the host's available memory."""
        device_bytes = sum(self.allocator.round(TensorDesc.nd(s.shape, s.dtype).nbytes)
                           for s in specs if s is not None)
        self.allocator.check_capacity(device_bytes, what)
        if not self.timing_only:
            host_bytes += device_bytes
        if host_bytes:
            check_host(host_bytes, what)

    def _own(self, t, role: str) -> None:
        """`t` must be a live tensor of this device."""
        if not isinstance(t, DeviceTensor):
            raise BadInput(f"{role} must be a device tensor (dev.tensor(array); None omits "
                           f"an optional input), got {type(t).__name__}")
        if t.device is not self:
            raise KernelStartFailed(f"kernel start failed: {role} ({t.name!r}) is a tensor "
                                    f"of device {t.device.label}, not of {self.label} (copy "
                                    f"it over: dev.tensor(t.numpy()))")
        if not t.alive:
            raise KernelStartFailed(f"kernel start failed: {role} ({t.name!r}) was freed")

    # ---- running ops ----
    def run(self, op: str, *inputs: DeviceTensor | None, config: dict | None = None,
            **attrs: Any) -> DeviceTensor | tuple[DeviceTensor, ...]:
        """Run an op by name: the native kernel when it takes the case, else the shim."""
        with self._lock:
            return self._run(op, inputs, config, attrs)

    def split_as_views(self, *inputs: DeviceTensor | None, **attrs: Any
                       ) -> DeviceTensor | tuple[DeviceTensor, ...]:
        """A Split whose parts each lie contiguous in its input (nothing but ones before the
        axis) as views at offsets, no launch (what the graph runtime does with fusion on);
        any other Split runs as `run` runs it."""
        with self._lock:
            return self._run("Split", inputs, None, attrs, views=True)

    def _run(self, op: str, inputs: tuple, config: dict | None, attrs: dict,
             views: bool = False):
        self._check_open()
        schema = get_op(op)
        schema.check_count(len(inputs))
        names = schema.input_names(len(inputs))
        for name, t in zip(names, inputs):
            if t is not None:
                self._own(t, f"{op} input {name}")
        specs = [None if t is None else _spec(schema, name, t) for name, t in zip(names, inputs)]
        bound = schema.check(specs, attrs)
        out_specs = schema.infer_fn(schema, specs, bound)
        if op in VIEW_OPS and not inputs[0].desc.is_padded:
            return self._view(op, inputs, out_specs[0], bound)
        if views and op == "Split" and contiguous_parts(inputs[0].desc, bound["axis"]):
            return self._parts(inputs, out_specs, bound)
        entry = self.registry.native(op)
        in_descs = [None if t is None or s is None else t.desc if s.value is None
                    else dataclasses.replace(t.desc, value=s.value)
                    for t, s in zip(inputs, specs)]
        reason = "no native kernel" if entry is None else entry.why_not(in_descs, bound)
        out_descs = (entry.desc_fn(in_descs, bound) if entry is not None and reason is None
                     and entry.desc_fn else
                     [TensorDesc.in_format(s.shape, s.dtype, bound.get("dst_format", "ND"))
                      for s in out_specs])
        outputs = []
        try:
            for desc, name in zip(out_descs, schema.output_names(len(out_descs))):
                outputs.append(self.empty(desc.shape, desc.dtype, f"{op}.{name}", desc))
            record = None
            if reason is None and entry is not None:     # (no reason: there is an entry)
                try:
                    record = run_native(self, entry, list(inputs), outputs, bound, config,
                                        in_descs)
                except KernelDeclined as declined:
                    reason = str(declined)
            if record is None:
                assert reason is not None       # the native kernel declined or is absent
                record = run_shim(self, schema, list(inputs), outputs, bound, reason)
        except BaseException:
            for t in outputs:
                t.free()
            raise
        self.last_profile = record
        self.stream.append(record)
        return outputs[0] if len(outputs) == 1 else tuple(outputs)

    def launch(self, entry: KernelEntry, inputs: list[DeviceTensor], outputs: list[DeviceTensor],
               attrs: dict | None = None, config: TuningConfig | dict | None = None
               ) -> RunRecord:
        """Run a kernel entry of one's own (not registered for an op: a kernel under
        development, a calibration workload) on live tensors of this device, as `run` runs a
        native kernel: the same version check, tiling and launch. Its `config` is used as given
        (no tuning-cache lookup); the record goes to `last_profile` and the stream."""
        with self._lock:
            self._check_open()
            for role, t in [*(("input", t) for t in inputs), *(("output", t) for t in outputs)]:
                if t is not None:
                    self._own(t, f"{entry.op} {role}")
            record = run_native(self, entry, list(inputs), list(outputs), attrs or {},
                                config if config is not None else {})
            self.last_profile = record
            self.stream.append(record)
            return record

    def _view(self, op: str, inputs, spec: ArgSpec, attrs: dict) -> DeviceTensor:
        """A contiguous tensor re-described: same storage, no data moved, no launch."""
        base = inputs[0]
        self.allocator.share(base.block)
        out = DeviceTensor(self, TensorDesc.nd(spec.shape, spec.dtype), base.addr,
                           f"{op}({base.name})", base.block)
        self._record_view(op, inputs, attrs, "a view: the same bytes under a new shape")
        return out

    def _parts(self, inputs, specs: list[ArgSpec], attrs: dict
               ) -> DeviceTensor | tuple[DeviceTensor, ...]:
        """A Split whose parts each lie in one contiguous range of its input (nothing but
        ones before the axis): every part a view at its offset, as a runtime hands out a
        tensor's storage with an offset (aclCreateTensor's offset); no launch."""
        base, outs, offset = inputs[0], [], 0
        for k, spec in enumerate(specs):
            desc = TensorDesc.nd(spec.shape, spec.dtype)
            self.allocator.share(base.block)
            outs.append(DeviceTensor(self, desc, base.addr + offset, f"Split({base.name})[{k}]",
                                     base.block))
            offset += desc.nbytes
        self._record_view("Split", inputs, attrs,
                          "views: each part a contiguous range of the input's bytes")
        return outs[0] if len(outs) == 1 else tuple(outs)

    def transposed(self, x: DeviceTensor, perm: Sequence[int]) -> DeviceTensor:
        """Transpose as a view: `x`'s bytes read with permuted strides (TensorDesc.transposed),
        for readers whose kernels take a transposed operand (a MatMul's B); no launch."""
        with self._lock:
            self._check_open()
            self._own(x, "Transpose input")
            if x.desc.is_padded or x.desc.format is not Format.ND:
                raise BadInput(f"a transposed view needs an unpadded ND tensor; {x.name} is "
                               f"{x.desc}")
            self.allocator.share(x.block)
            out = DeviceTensor(self, TensorDesc.transposed(x.desc, perm), x.addr,
                               f"Transpose({x.name})", x.block)
            self._record_view("Transpose", [x], {"perm": list(perm)},
                              "a view: its readers read the bytes transposed")
            return out

    def _record_view(self, op: str, inputs, attrs: dict, reason: str) -> None:
        record = RunRecord(op, self.chip.name, "view", [t and t.shape for t in inputs],
                           inputs[0].dtype, reason=reason, attrs=attrs)
        self.last_profile = record
        self.stream.append(record)

    def run_graph(self, graph: Graph, feeds: dict, fuse: bool = False) -> dict:
        """Run a graph node by node (or, with `fuse`, chains of elementwise nodes as fused
        kernels); `feeds` maps graph inputs to device tensors or arrays. The launches are kept
        in `last_graph` (a GraphRecord)."""
        if not isinstance(graph, Graph):
            raise BadInput(f"run_graph takes a Graph, got {type(graph).__name__}")
        if not isinstance(feeds, dict):
            raise BadInput(f"run_graph feeds are a dict of graph input name -> array or "
                           f"device tensor, got {type(feeds).__name__}")
        with self._lock:
            self._check_open()
            with self.backend.host_settings():
                outputs, self.last_graph = run_graph(self, graph, feeds, fuse)
            return outputs

    def flush_l2(self) -> None:
        """Empty the chip's L2, as a benchmark does between measurements: a launch's modeled
        time depends on what earlier launches left in L2, so a measurement that must not
        depend on what ran before (a tuning point, a sweep's task) starts from a cold L2."""
        with self._lock:
            self._check_open()
            self.backend.flush_l2()

    # ---- lifecycle ----
    def _check_open(self) -> None:
        if self.closed:
            raise DeviceClosed(f"device {self.label} is closed")

    def close(self) -> list[str]:
        """Close the device; returns (and warns about) the allocations still live."""
        with self._lock:
            if self.closed:
                return []
            leaks = self.allocator.leak_report()
            if leaks:
                warnings.warn(f"{self.chip.name}: {len(leaks)} allocation(s) still live at "
                              f"close: " + "; ".join(leaks), ResourceWarning, stacklevel=2)
            self.allocator.empty_cache()
            self.backend.close()
            self.closed = True
            return leaks

    def __enter__(self) -> Device:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Device({self.label}, debug={self.debug})"


def device(chip: str = "910B1", **kwargs: Any) -> Device:
    return Device(chip, **kwargs)
