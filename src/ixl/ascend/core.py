"""One AI Core (vector side): its Unified Buffer as real bytes, its timeline, its mode, and the
observers it reports each instruction and sync edge to (observe.py).

Instructions find their core through their LocalTensor operands, or, for those with none
(flags, barriers), through the core the launcher made current on this host thread.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

import numpy as np

from .chips import ChipSpec
from .costs import CostTable, cost_table
from .errors import AicoreOutOfBound, IllegalInstruction, KernelTimeout
from .observe import Access, Instruction, Observer, Sync, SyncKind
from .timeline import Pipe, Timeline

_current = threading.local()

# Debug mode fills fresh buffers so that a read of one stands out: all-ones bytes are a NaN in
# float16, bfloat16 and float32 alike; integer buffers get a poison pattern.
NAN_BYTE = 0xFF
POISON_BYTE = 0xA5


@dataclass(frozen=True)
class Mode:
    debug: bool = False        # NaN/poison fill, truncated-copy errors, flag checks, sanitizer
    timing_only: bool = False  # skip the data math: only the timeline runs
    record: bool = False       # keep every slice and flag edge (for traces and plots)


class AICore:
    def __init__(self, chip: ChipSpec, core_id: int, mode: Mode = Mode(), active_cores: int = 1,
                 ub: np.ndarray | None = None, observers: tuple[Observer, ...] = ()):
        """`ub`: the core's Unified Buffer, kept by the chip across launches (a fresh zeroed
        one when None); `observers` hear of every instruction and sync edge."""
        self.chip = chip
        self.core_id = core_id
        self.mode = mode
        self.costs: CostTable = cost_table(chip.arch)
        self.mte_rate = self.costs.mte_rate(active_cores)   # GM bandwidth is shared
        self.mte_latency = self.costs.mte_latency_cycles
        self.burst_grid = self.costs.burst_align_bytes
        self.ub = np.zeros(chip.ub_bytes, np.uint8) if ub is None else ub
        self.block_idx = 0
        self.block_num = 1
        self.timeline = Timeline(self.costs.scalar_issue_cycles, self.costs.flag_latency_cycles,
                                 self.costs.queue_depth)
        self.ub_peak = 0
        self.pipes: list = []
        self.observers = tuple(observers)

    # ---- block lifecycle (driven by the launcher) ----
    def begin_block(self, block_idx: int, block_num: int) -> None:
        self.block_idx = block_idx
        self.block_num = block_num
        self.pipes = []      # TPipes of this block, destroyed at its end
        _current.core = self
        for o in self.observers:
            o.block_begin(self.core_id, block_idx)

    def pause(self) -> None:
        """A block waits at a SyncAll: it is no longer this thread's running core."""
        _current.core = None

    def resume(self) -> None:
        _current.core = self

    def end_block(self, check: bool = True) -> None:
        if check:
            for pipe in self.pipes:
                pipe.destroy()
            for o in self.observers:
                o.block_end(self.core_id, self.block_idx)
        _current.core = None
        unpaired = self.timeline.unpaired_flags() if check else []
        if unpaired and self.mode.debug:
            raise KernelTimeout(
                f"vector core execution timed out: core {self.core_id} block {self.block_idx} "
                f"ended with flags set and never waited: {', '.join(unpaired)}")

    # ---- UB access ----
    def ub_view(self, offset: int, nbytes: int, what: str) -> np.ndarray:
        if offset < 0 or offset + nbytes > self.chip.ub_bytes:
            raise AicoreOutOfBound(
                f"aicore memory out of bound: VEC instruction error: the ub address out of bounds: "
                f"core {self.core_id} {what} UB [{offset:#x}, {offset + nbytes:#x}), "
                f"UB holds {self.chip.ub_bytes} bytes")
        return self.ub[offset:offset + nbytes]

    def check_ub_aligned(self, offset: int, what: str) -> None:
        if offset % self.chip.block_bytes:
            raise IllegalInstruction(
                f"Illegal instruction, which is usually caused by unaligned UUB addresses: "
                f"core {self.core_id} {what} UB address {offset:#x} is not "
                f"{self.chip.block_bytes}-byte aligned")

    def fill_fresh(self, offset: int, nbytes: int, dtype: np.dtype) -> None:
        """Debug mode: make a read of a never-written buffer visible (NaN or poison)."""
        is_float = dtype.kind == "f" or dtype.name == "bfloat16"
        self.ub[offset:offset + nbytes] = NAN_BYTE if is_float else POISON_BYTE

    # ---- timeline and observers ----
    def issue(self, pipe: Pipe, name: str, cycles: float) -> float:
        """Time one instruction; returns when it completes. (An instruction then reports its
        operands with `observe` when the core has observers.)"""
        return self.timeline.issue(pipe, name, cycles)

    def transfer(self, pipe: Pipe, name: str, cycles: float, nbytes: int) -> float:
        """Time one GM move of `nbytes` (MTE2 in, MTE3 out)."""
        return self.timeline.transfer(pipe, name, self.mte_latency, cycles, nbytes)

    def observe(self, pipe: Pipe, name: str, reads: tuple[Access, ...],
                writes: tuple[Access, ...], nbytes: int = 0) -> None:
        """Tell the observers what the instruction just issued read and wrote."""
        start, end = self.timeline.last
        ins = Instruction(self.core_id, self.block_idx, pipe, name, self.timeline.issued,
                          start, end, nbytes, reads, writes)
        for o in self.observers:
            o.instruction(ins)

    def _sync(self, kind: SyncKind, what: str, **fields) -> None:
        ev = Sync(self.core_id, self.block_idx, kind, what, **fields)
        for o in self.observers:
            o.sync(ev)

    def set_flag(self, src: Pipe, dst: Pipe, event_id: int, what: str = "set_flag") -> None:
        fires = self.timeline.set_flag(src, dst, event_id)
        if self.observers:
            self._sync(SyncKind.SET, what, src=src, dst=dst, event_id=event_id,
                       issued=self.timeline.issued, time=fires)

    def wait_flag(self, src: Pipe, dst: Pipe, event_id: int, what: str = "wait_flag") -> None:
        fired, resumed = self.timeline.wait_flag(src, dst, event_id, self.core_id)
        if self.observers:
            self._sync(SyncKind.WAIT, what, src=src, dst=dst, event_id=event_id,
                       issued=self.timeline.issued, time=resumed, fired=fired)

    def barrier(self, pipe: Pipe | None) -> None:
        self.timeline.barrier(pipe)
        if self.observers:
            self._sync(SyncKind.BARRIER, "pipe_barrier", src=pipe, issued=self.timeline.issued)

    def meet(self, when: float) -> None:
        """Every core met at a SyncAll: nothing here starts before `when`."""
        self.timeline.align(when)
        if self.observers:
            self._sync(SyncKind.SYNC_ALL, "sync_all", time=when)

    def buffer_event(self, kind: SyncKind, what: str, buffer: Access) -> None:
        """alloc_tensor / free_tensor of a queue buffer (call only when observed)."""
        self._sync(kind, what, buffer=buffer)


def current_core() -> AICore:
    core = getattr(_current, "core", None)
    if core is None:
        raise RuntimeError("no AI Core is running a kernel on this thread: "
                           "flags and barriers can only be issued inside a kernel launch")
    return core


def get_block_idx() -> int:
    return current_core().block_idx


def get_block_num() -> int:
    return current_core().block_num


class SyncAll:
    """What a kernel yields to meet every other core (Ascend C's SyncAll): `yield sync_all()`."""


def sync_all() -> SyncAll:
    return SyncAll()
