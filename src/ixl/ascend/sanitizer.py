"""Debug mode's hazard check: two pipes touching the same UB bytes with no flag between them.

On the chip the pipes run in parallel, so a vector instruction that reads a buffer MTE2 is
still filling (a read after write) or an MTE2 copy that overwrites a buffer the vector unit is
still reading (a write after read) gives results that change run to run. The timeline already
knows when every instruction runs; this check compares each UB access with the accesses of
other pipes that had not finished by then.
"""

from __future__ import annotations

from dataclasses import dataclass

from .errors import HazardError
from .observe import Instruction, Observer, Space
from .timeline import Pipe


@dataclass(frozen=True)
class Access:
    lo: int
    hi: int
    pipe: Pipe
    end: float
    name: str


class HazardCheck(Observer):
    def __init__(self):
        self.reads: dict[int, list[Access]] = {}
        self.writes: dict[int, list[Access]] = {}

    def launch_begin(self, launch) -> None:
        self.reads = {c: [] for c in launch.cores}
        self.writes = {c: [] for c in launch.cores}

    def instruction(self, ins: Instruction) -> None:
        """Check one instruction's UB reads and writes, then keep them. Accesses that ended
        before its dispatch (no later instruction can start earlier) are dropped."""
        horizon = ins.issued
        reads_ = [a for a in self.reads[ins.core] if a.end > horizon]
        writes_ = [a for a in self.writes[ins.core] if a.end > horizon]
        reads = [a.span() for a in ins.reads if a.space is Space.UB and not a.empty]
        writes = [a.span() for a in ins.writes if a.space is Space.UB and not a.empty]
        for lo, hi in reads:
            self._against(ins, writes_, "reads", "writes", lo, hi)
        for lo, hi in writes:
            self._against(ins, reads_, "writes", "reads", lo, hi)
            self._against(ins, writes_, "writes", "writes", lo, hi)
        reads_ += [Access(lo, hi, ins.pipe, ins.end, ins.name) for lo, hi in reads]
        writes_ += [Access(lo, hi, ins.pipe, ins.end, ins.name) for lo, hi in writes]
        self.reads[ins.core], self.writes[ins.core] = reads_, writes_

    def _against(self, ins, earlier: list[Access], verb: str, other_verb: str, lo: int,
                 hi: int) -> None:
        for a in earlier:
            if a.pipe is not ins.pipe and a.lo < hi and lo < a.hi and a.end > ins.start:
                raise HazardError(
                    f"pipe hazard on core {ins.core}: {ins.name} ({ins.pipe.lane}) {verb} UB "
                    f"[{lo:#x}, {hi:#x}) from cycle {ins.start:.0f} while {a.name} "
                    f"({a.pipe.lane}) {other_verb} [{a.lo:#x}, {a.hi:#x}) until cycle "
                    f"{a.end:.0f}: order them with a flag (enque/deque, alloc/free, or "
                    f"set_flag/wait_flag)")
