"""The registry: one unique op type name binds a schema to its native kernel (R5).

A kernel entry holds the kernel entry point, the tiling function, an optional tensor-desc
function, the tier, the dtypes it handles and the runtime it was built for. Lookup falls back to
the shim when there is no kernel or the kernel declines a case; the reason is kept and shown.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..hixl import OpSchema, get_op
from .backend import KernelType
from .tensor_desc import TensorDesc
from .tuning import TuningSpace


@dataclass(frozen=True)
class LaunchPlan:
    """What the host tiling function decides: cores, tiling data, workspace, and (when the
    case decides it) the kernel type: a Gemm whose epilogue needs the vector cores runs as a
    mix kernel, one the Fixpipe finishes on the Cube alone."""

    block_dim: int
    tiling: Any                 # a dataclass the kernel reads (TilingData)
    workspace_bytes: int = 0
    kind: KernelType | None = None     # None: the entry's kind


@dataclass
class KernelEntry:
    op: str
    # kernel(ctx, *inputs, *outputs) on GlobalTensors; a kernel that meets other cores is a
    # generator of what it waits for
    kernel: Callable[..., Iterator[object] | None]
    tiling: Callable[..., LaunchPlan]    # tiling(in_descs, out_descs, attrs, chip, TuningConfig)
    dtypes: tuple[str, ...]
    built_for_runtime: str
    declines: Callable[..., str | None] = lambda in_descs, attrs: None
    desc_fn: Callable[..., list[TensorDesc]] | None = None   # storage layout of outputs
    tile_unit: Callable[..., int] | None = None             # elements per tile (for verify)
    tuning_space: TuningSpace = field(default_factory=TuningSpace)   # what `ixl tune` sweeps
    arg_names: tuple[str, ...] | None = None   # GM tensor names (default: the schema's)
    inplace: tuple[int, ...] = ()              # inputs the kernel may write (by position)
    kind: KernelType = KernelType.VECTOR       # vector, cube or mix: what block_dim counts

    @property
    def schema(self) -> OpSchema:
        return get_op(self.op)

    def why_not(self, in_descs: list[TensorDesc | None], attrs: dict) -> str | None:
        """None when the kernel takes this case, else the reason it goes to the shim."""
        dtype = next((d.dtype for d in in_descs if d is not None), None)
        if dtype is not None and dtype not in self.dtypes:
            return f"native kernel has no {dtype} path (has {', '.join(self.dtypes)})"
        return self.declines(in_descs, attrs)


class FusionProvider(Protocol):
    """What the kernel library offers the fusion pass (nixl never imports kernels)."""

    def role(self, op: str) -> str | None:
        """"map" (an elementwise body), "anchor" (an op a chain may pass through), or None."""

    def entry(self, steps: list, in_descs: list[TensorDesc], out: TensorDesc) -> KernelEntry: ...


class Registry:
    """The kernel library loads on first lookup, once, under a lock: a thread asking while
    another loads waits for every kernel instead of finding none and taking the shim."""

    def __init__(self, load_library: bool = True) -> None:
        """`load_library=False`: only what is registered into it, never the kernel library."""
        self._kernels: dict[str, KernelEntry] = {}
        self._loaded = not load_library
        self._loading = False            # this thread is inside the import (nested lookups)
        self._lock = threading.RLock()
        self._fusion: FusionProvider | None = None

    @property
    def fusion(self) -> FusionProvider | None:
        self._load()
        return self._fusion

    def register_fusion(self, provider: FusionProvider) -> None:
        self._fusion = provider

    def register(self, entry: KernelEntry) -> KernelEntry:
        get_op(entry.op)   # the op must exist in HIXL
        with self._lock:
            if entry.op in self._kernels:
                raise ValueError(f"a native kernel for {entry.op} is registered twice")
            self._kernels[entry.op] = entry
        return entry

    def native(self, op: str) -> KernelEntry | None:
        self._load()
        return self._kernels.get(op)

    def _load(self) -> None:
        """Import the kernel library; marked loaded only once every kernel registered."""
        if self._loaded:
            return
        with self._lock:
            if self._loaded or self._loading:
                return
            self._loading = True
            try:
                from .. import kernels  # noqa: F401  (the only importer of the kernel library)
                self._loaded = True
            finally:
                self._loading = False


REGISTRY = Registry()
register_kernel = REGISTRY.register
