"""The shim (R2): an op with no native kernel runs its HIXL reference behind the same interface.

Inputs come back to the host, the reference runs there, outputs go back to the device. The
record says "shim" and why, so no fallback is ever silent, and its modeled time is the copies'
(each input device to host, each output host to device, one after the other, nothing
overlapped; the host's own compute time is not modeled).
"""

from __future__ import annotations

from ..hixl import OpSchema
from . import log
from .record import RunRecord


def run_shim(device, schema: OpSchema, inputs: list, outputs: list, attrs: dict,
             reason: str) -> RunRecord:
    log.shim(schema.name, reason)
    if not device.timing_only:          # timing-only: no data is read, computed or written
        arrays = [t and t.numpy() for t in inputs]
        results = schema.reference(*arrays, **attrs)
        for out, res in zip(outputs, results):
            device.write(out, res)
    present = [t for t in inputs if t is not None]
    host_us = sum(device.backend.host_copy_us(t.desc.nbytes) for t in (*present, *outputs))
    return RunRecord(schema.name, device.chip.name, "shim", [t and t.shape for t in inputs],
                     present[0].dtype if present else None, reason=reason, attrs=attrs,
                     host_us=host_us)
