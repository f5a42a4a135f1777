"""The kernel library's fusion provider: the fused kernels the fusion pass (nixl.fusion) asks
for, built from the ops' compute bodies and cached by signature (nixl never imports kernels:
the provider is registered with the registry).

An op is a "map" in a chain (an elementwise body) or an "anchor", an op registered with
`add_anchor` (the axis ops in norm.py), whose kernel runs the bodies before it on its input and
those after it on its output.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from ..hixl.dtypes import FLOATS
from ..nixl import REGISTRY, KernelEntry, TensorDesc
from .elementwise import make_kernel, plan
from .elementwise_ops import BODIES
from .family_ops import COMPARISONS
from .program import Step
from .version import BUILT_FOR_RUNTIME


class FusedKernels:
    """Fused kernels for the fusion pass: a program of bodies, or bodies around an anchor."""

    def __init__(self) -> None:
        self._cache: dict[str, KernelEntry] = {}
        self._anchors: dict[str, Callable[..., dict]] = {}
        self._lock = threading.Lock()          # devices on several threads share the cache

    def add_anchor(self, op: str, build: Callable[..., dict]) -> None:
        """`build(kernel_name, program, at, args, attrs, in_descs, out)` gives the anchor's
        fused kernel, tiling, dtypes, declines and tuning space: `program` holds the other
        steps, the anchor's own (reading value ids `args`) being step `at`."""
        self._anchors[op] = build

    def role(self, op: str) -> str | None:
        """What `op` can be in a fused chain: "map" (a body), "anchor" or nothing."""
        if op in self._anchors:
            return "anchor"
        keeps_dtype = op != "Cast" and op not in COMPARISONS      # a fused chain keeps one dtype
        return "map" if op in BODIES and keeps_dtype else None

    @property
    def built(self) -> int:
        """Fused kernels built so far (one per signature)."""
        return len(self._cache)

    def entry(self, steps: list, in_descs: list, out: TensorDesc) -> KernelEntry:
        key = repr(([(op, args, sorted(attrs.items())) for op, args, attrs in steps],
                    [(d.shape, d.dtype) for d in in_descs], out.shape, out.dtype))
        with self._lock:
            if key not in self._cache:
                self._cache[key] = self._build(steps, in_descs, out)
            return self._cache[key]

    def _build(self, steps: list, in_descs: list, out: TensorDesc) -> KernelEntry:
        program = tuple(Step(op, BODIES[op], tuple(args), tuple(sorted(attrs.items())))
                        for op, args, attrs in steps if op not in self._anchors)
        at = next((k for k, (op, _, _) in enumerate(steps) if op in self._anchors), None)
        name = "fused_" + "_".join(op.lower() for op, _, _ in steps) + "_kernel"
        if at is None:
            parts: dict[str, Any] = {
                "kernel": make_kernel(name, len(in_descs)), "dtypes": ("bool",) + FLOATS,
                "tiling": lambda ins, outs, attrs, chip, config: plan(
                    list(ins), outs[0], chip, program, config)}
        else:
            op, args, attrs = steps[at]
            parts = self._anchors[op](name, program, at, args, attrs, in_descs, out)
        return KernelEntry(op="Fused[" + "+".join(op for op, _, _ in steps) + "]",
                           built_for_runtime=BUILT_FOR_RUNTIME,
                           arg_names=tuple(f"in{i}" for i in range(len(in_descs))) + ("y",),
                           **parts)


FUSION = FusedKernels()
REGISTRY.register_fusion(FUSION)
