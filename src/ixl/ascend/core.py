"""One AI Core (vector side): its Unified Buffer as real bytes, its timeline, its mode.

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
from .sanitizer import HazardCheck
from .timeline import Pipe, Timeline

_current = threading.local()

# Debug mode fills fresh buffers so that a read of one stands out: all-ones bytes are a NaN in
# float16, bfloat16 and float32 alike; integer buffers get a poison pattern.
NAN_BYTE = 0xFF
POISON_BYTE = 0xA5


@dataclass(frozen=True)
class Mode:
    debug: bool = False        # NaN/poison fill of fresh buffers, truncated-copy errors, flag checks
    timing_only: bool = False  # skip the data math: only the timeline runs
    record: bool = False       # keep every slice and flag edge (for traces and plots)


class AICore:
    def __init__(self, chip: ChipSpec, core_id: int, mode: Mode = Mode(), active_cores: int = 1):
        self.chip = chip
        self.core_id = core_id
        self.mode = mode
        self.costs: CostTable = cost_table(chip.arch)
        self.mte_rate = self.costs.mte_rate(active_cores)   # GM bandwidth is shared
        self.mte_latency = self.costs.mte_latency_cycles
        self.burst_grid = self.costs.burst_align_bytes
        self.ub = np.zeros(chip.ub_bytes, np.uint8)
        self.block_idx = 0
        self.block_num = 1
        self.timeline = Timeline(self.costs.scalar_issue_cycles, self.costs.flag_latency_cycles,
                                 self.costs.queue_depth, mode.record)
        self.ub_peak = 0
        self.pipes: list = []
        self.hazards = HazardCheck(core_id) if mode.debug else None

    # ---- block lifecycle (driven by the launcher) ----
    def begin_block(self, block_idx: int, block_num: int) -> None:
        self.block_idx = block_idx
        self.block_num = block_num
        self.pipes = []      # TPipes of this block, destroyed at its end
        _current.core = self

    def pause(self) -> None:
        """A block waits at a SyncAll: it is no longer this thread's running core."""
        _current.core = None

    def resume(self) -> None:
        _current.core = self

    def end_block(self, check: bool = True) -> None:
        if check:
            for pipe in self.pipes:
                pipe.destroy()
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

    # ---- timeline ----
    def issue(self, pipe: Pipe, name: str, cycles: float, reads=(), writes=()) -> float:
        """Time one instruction; `reads`/`writes` are its UB byte ranges (debug-mode checks)."""
        end = self.timeline.issue(pipe, name, cycles)
        if self.hazards is not None:
            self.hazards.access(pipe, name, *self.timeline.last, reads, writes,
                                self.timeline.scalar)
        return end

    def issue_count(self, pipe: Pipe, name: str, cycles: float, count: int, reads: tuple,
                    writes: tuple) -> float:
        """`issue` for a count-form instruction on the first `count` elements of each operand
        (the byte ranges are worked out only when debug mode checks them)."""
        end = self.timeline.issue(pipe, name, cycles)
        if self.hazards is not None:
            self.hazards.access(pipe, name, *self.timeline.last,
                                [(t.offset, t.offset + count * t.itemsize) for t in reads],
                                [(t.offset, t.offset + count * t.itemsize) for t in writes],
                                self.timeline.scalar)
        return end

    def transfer(self, pipe: Pipe, name: str, cycles: float, nbytes: int, ub_offset: int,
                 ub_end: int) -> float:
        """Time one GM move touching UB [ub_offset, ub_end) (written by MTE2, read by MTE3)."""
        end = self.timeline.transfer(pipe, name, self.mte_latency, cycles, nbytes)
        if self.hazards is not None:
            blk = self.chip.block_bytes
            ub_range = (ub_offset, -(-ub_end // blk) * blk)         # block padding included
            inbound = pipe is Pipe.MTE2
            self.hazards.access(pipe, name, *self.timeline.last, () if inbound else (ub_range,),
                                (ub_range,) if inbound else (), self.timeline.scalar)
        return end


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
