"""Launching a native kernel: tiling on the host, then blocks over cores (R5, R7)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from . import log, tiling_cache, tuning_cache
from .backend import GmRole, Mode
from .context import KernelContext
from .errors import KernelStartFailed
from .record import RunRecord
from .registry import KernelEntry
from .tuning import ConfigDoesNotFit, DoesNotFit, TuningConfig
from .version import RUNTIME_VERSION, compatible

if TYPE_CHECKING:
    from .device import Device


class SamePlan:
    """A launch plan compared by identity: the tiling cache hands out one plan per case, so
    the plan stands for everything the host tiling read (replay.py keys traces by it)."""

    __slots__ = ("plan",)

    def __init__(self, plan: object) -> None:
        self.plan = plan

    def __hash__(self) -> int:
        return id(self.plan)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SamePlan) and other.plan is self.plan


def run_native(device: Device, entry: KernelEntry, inputs: list, outputs: list, attrs: dict,
               config: TuningConfig | dict | None = None, in_descs: list | None = None
               ) -> RunRecord:
    """Launch `entry` on device tensors; `in_descs` may carry what the host read back of
    shape-deciding inputs (their `value`), which the tiling then sees. The tuning config (or
    its dict form) is validated here, once; one the caller chose that does not fit this case
    raises ConfigDoesNotFit, while the default or cached one declines to the shim."""
    chip = device.chip
    name = getattr(entry.kernel, "__name__", entry.op)
    if not compatible(entry.built_for_runtime, RUNTIME_VERSION):
        raise KernelStartFailed(
            f"kernel start failed: kernel {name} was built for runtime "
            f"{entry.built_for_runtime}, this runtime is {RUNTIME_VERSION}")
    present = [t for t in (*inputs, *outputs) if t is not None]
    for t in present:
        if not t.alive or t.device is not device:
            raise KernelStartFailed(f"kernel start failed: {t.name} is not a live buffer "
                                    f"of this device")
    chosen = config is not None
    shapes = [t and t.shape for t in inputs]
    dtype = present[0].dtype if present else None
    if not chosen:          # a configuration `ixl tune` chose for this case, if any
        config = tuning_cache.lookup(chip.name, entry.op, shapes, dtype)
    config = TuningConfig.of(config, chip)
    if in_descs is None:
        in_descs = [t and t.desc for t in inputs]
    try:
        plan = tiling_cache.plan(entry.tiling, entry.op, in_descs, [t.desc for t in outputs],
                                 attrs, chip, config)
    except DoesNotFit as refused:
        if not chosen:
            raise
        raise ConfigDoesNotFit(f"tuning config {config.to_dict()} does not fit {entry.op} on "
                               f"{shapes} {dtype}: {refused}") from None
    record = RunRecord(entry.op, chip.name, "native", shapes, dtype, kernel=name,
                       block_dim=plan.block_dim, tiling=plan.tiling,
                       config=config.to_dict() or None, attrs=attrs)
    if plan.block_dim == 0:     # nothing to compute: the host skips the launch
        return record
    if not 1 <= plan.block_dim <= chip.max_block_dim:
        raise KernelStartFailed(f"kernel start failed: block_dim {plan.block_dim} outside "
                                f"[1, {chip.max_block_dim}]")
    backend = device.backend
    workspace = device.empty((plan.workspace_bytes,), "uint8", "workspace") \
        if plan.workspace_bytes else None
    try:
        ws = (backend.window(workspace.addr, workspace.desc.np_dtype, plan.workspace_bytes,
                             "workspace") if workspace else None)
        names = entry.arg_names or [*entry.schema.input_names(len(inputs)),
                                     *entry.schema.output_names(len(outputs))]
        tensors = [t and backend.window(t.addr, t.desc.np_dtype, t.desc.storage_size, n)
                   for t, n in zip((*inputs, *outputs), names)]
        log.launch(entry.op, name, chip.name,
                   [("in" if i < len(inputs) else "out", n, t)
                    for i, (n, t) in enumerate(zip(names, (*inputs, *outputs))) if t], plan, ws)

        mode = Mode(debug=device.debug, timing_only=device.timing_only, record=device.record)

        def body(core):
            ctx = KernelContext.of(core, plan.tiling, chip, ws)
            return entry.kernel(ctx, *tensors)      # a generator when the kernel waits for others

        roles = [GmRole.INPLACE if i in entry.inplace else GmRole.INPUT
                 for i in range(len(inputs))] + [GmRole.OUTPUT] * len(outputs)
        args = [(t, r) for t, r in zip(tensors, roles) if t]
        args += [(ws, GmRole.WORKSPACE)] if ws else []
        record.launch = backend.launch(name, body, plan.block_dim, mode, args,
                                       plan.kind or entry.kind,
                                       signature=(entry.kernel, SamePlan(plan)))
    finally:
        if workspace is not None:
            workspace.free()
    return record
