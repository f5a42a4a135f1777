"""The shim (R2): an op with no native kernel runs its HIXL reference behind the same interface.

Inputs come back to the host, the reference runs there, outputs go back to the device. The
record says "shim" and why, so no fallback is ever silent.
"""

from __future__ import annotations

import numpy as np

from ..hixl import OpSchema
from . import log
from .record import RunRecord


def host_copy(t) -> np.ndarray:
    """The tensor on the host in its logical shape (DeviceTensor.numpy() turns a 0-d tensor
    into shape (1,), as np.ascontiguousarray does)."""
    return t.numpy().reshape(t.shape)


def run_shim(device, schema: OpSchema, inputs: list, outputs: list, attrs: dict,
             reason: str) -> RunRecord:
    log.shim(schema.name, reason)
    arrays = [t and host_copy(t) for t in inputs]
    if not device.timing_only:
        results = schema.reference(*arrays, **attrs)
        for out, res in zip(outputs, results):
            device.write(out, res)
    present = [t for t in inputs if t is not None]
    return RunRecord(schema.name, device.chip.name, "shim", [t and t.shape for t in inputs],
                     present[0].dtype if present else None, reason=reason, attrs=attrs)
