"""The on-core memories of a chip's cores, and the traces of the launches that ran on them.

Each core's memories (UB; L1, L0A, L0B, L0C, BiasTable, Fixpipe buffer) are real bytes, kept
from launch to launch as on the chip. A trace (replay.py) holds views of them, so memories and
traces live together: a device takes a set when it is made and gives it back when it is
closed or dropped; the next device of that chip takes it zeroed, as a fresh chip's, with the
traces still good for it. So a model run on a fresh device each time (the ONNX backend's
runs) replays the launches an earlier run traced.
"""

from __future__ import annotations

import threading

import numpy as np

from .chips import ChipSpec
from .core import CoreId, memory_bytes
from .replay import TraceCache


class CoreMemories:
    """Every core's memories of one simulated chip (made as a launch first uses the core)."""

    def __init__(self, chip: ChipSpec) -> None:
        self.chip = chip
        self.by_core: dict[int, dict] = {}
        self.traces = TraceCache()

    def of(self, core_id: CoreId) -> dict:
        mem = self.by_core.get(core_id)
        if mem is None:
            mem = self.by_core[core_id] = {
                sp: np.zeros(memory_bytes(self.chip, sp), np.uint8)
                for sp in core_id.kind.spaces}
        return mem

    def zero(self) -> None:
        for mem in self.by_core.values():
            for array in mem.values():
                array.fill(0)


_lock = threading.Lock()
_free: dict[str, list[CoreMemories]] = {}


def take(chip: ChipSpec) -> CoreMemories:
    """A set of memories for a new device of `chip`: a free one zeroed, or a new one."""
    with _lock:
        free = _free.get(chip.name)
        memories = free.pop() if free else None
    if memories is None or memories.chip != chip:
        return CoreMemories(chip)
    memories.zero()
    return memories


def give_back(memories: CoreMemories) -> None:
    """A device is done with `memories` (closed or collected)."""
    with _lock:
        _free.setdefault(memories.chip.name, []).append(memories)
