"""The shim (R2): an op with no native kernel runs its HIXL reference behind the same interface.

Inputs come back to the host, the reference runs there, outputs go back to the device. The
record says "shim" and why, so no fallback is ever silent, and its modeled time is the copies'
(device to host, then each output host to device, one after the other, nothing overlapped; the
host's own compute time is not modeled).

A fallback copies what it reads, which is every input whole unless the op says otherwise
(`READS`): a Gather reads its indices and then only the rows they pick (one batched copy), not
the whole table; GatherElements and GatherND their indices and the elements picked; a Slice
the sliced region (one strided copy) and its starts, ends, axes and steps; Shape and Size no
data at all (the shape is the host's already).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..hixl import OpSchema
from . import log
from .record import RunRecord

if TYPE_CHECKING:
    from .device import Device


def run_shim(device: Device, schema: OpSchema, inputs: list, outputs: list, attrs: dict,
             reason: str) -> RunRecord:
    log.shim(schema.name, reason)
    if not device.timing_only:          # timing-only: no data is read, computed or written
        arrays = [t and t.numpy() for t in inputs]
        results = schema.reference(*arrays, **attrs)
        for out, res in zip(outputs, results):
            device.write(out, res)
    present = [t for t in inputs if t is not None]
    reads = READS.get(schema.name, _whole)(inputs, outputs)
    host_us = sum(device.backend.host_copy_us(n) for n in reads) \
        + sum(device.backend.host_copy_us(t.desc.nbytes) for t in outputs)
    return RunRecord(schema.name, device.chip.name, "shim", [t and t.shape for t in inputs],
                     present[0].dtype if present else None, reason=reason, attrs=attrs,
                     host_us=host_us)


# ---------------------------------------------------------------- what a fallback reads

def _whole(inputs: list, outputs: list) -> list[int]:
    """Bytes of each device-to-host copy: every input, whole."""
    return [t.desc.nbytes for t in inputs if t is not None]


def _picked(inputs: list, outputs: list) -> list[int]:
    """The indices whole, then the picked elements (as many as the output holds) in one
    batched copy; the rest of the inputs whole."""
    return [inputs[1].desc.nbytes, outputs[0].desc.nbytes] + _whole(inputs[2:], outputs)


def _region(inputs: list, outputs: list) -> list[int]:
    """The output's region of the data in one strided copy; the other inputs whole."""
    return [outputs[0].desc.nbytes] + _whole(inputs[1:], outputs)


READS = {
    "Gather": _picked, "GatherElements": _picked, "GatherND": _picked,
    "Slice": _region,
    "Shape": lambda inputs, outputs: [], "Size": lambda inputs, outputs: [],
}
