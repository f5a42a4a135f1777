"""The on-core memories of a chip's cores, and the traces of the launches that ran on them.

Each core's memories (UB; L1, L0A, L0B, L0C, BiasTable, Fixpipe buffer) are real bytes, kept
from launch to launch as on the chip. A trace (replay.py) holds views of them, so memories and
traces live together: a device takes a set when it is made and gives it back when it is
closed or dropped; the next device of that chip takes it zeroed, as a fresh chip's, with the
traces still good for it. So a model run on a fresh device each time (the ONNX backend's
runs) replays the launches an earlier run traced.

A memory of each kind of core is one row of a [cores, bytes] array of the chip's cores of that
kind (`stack`): core n's UB is row n of the vector cores' UB stack, and so on. One numpy
operation over a strided view of a stack then acts on several cores at once (lockstep.py).
"""

from __future__ import annotations

import threading

import numpy as np

from .chips import ChipSpec
from .core import CoreId, CoreKind, memory_bytes
from .observe import Space
from .replay import TraceCache


class CoreMemories:
    """Every core's memories of one simulated chip (made as a launch first uses the core)."""

    def __init__(self, chip: ChipSpec) -> None:
        self.chip = chip
        self.by_core: dict[int, dict] = {}
        self.stacks: dict[tuple[CoreKind, Space], np.ndarray] = {}
        self.traces = TraceCache()

    def of(self, core_id: CoreId) -> dict:
        mem = self.by_core.get(core_id)
        if mem is None:
            mem = self.by_core[core_id] = {sp: self.stack(core_id.kind, sp)[core_id.index]
                                           for sp in core_id.kind.spaces}
        return mem

    def stack(self, kind: CoreKind, space: Space) -> np.ndarray:
        """The `space` memories of every core of `kind`, one row each (made at first use)."""
        stack = self.stacks.get((kind, space))
        if stack is None:
            cores = self.chip.aic_cores if kind is CoreKind.AIC else self.chip.aiv_cores
            stack = self.stacks[(kind, space)] = np.zeros(
                (cores, memory_bytes(self.chip, space)), np.uint8)
        return stack

    def zero(self) -> None:
        for stack in self.stacks.values():
            stack.fill(0)


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
