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
from .timeline import Pipe


@dataclass(frozen=True)
class Access:
    lo: int
    hi: int
    pipe: Pipe
    end: float
    name: str


class HazardCheck:
    def __init__(self, core_id: int):
        self.core_id = core_id
        self.reads: list[Access] = []
        self.writes: list[Access] = []

    def access(self, pipe: Pipe, name: str, start: float, end: float, reads, writes,
               horizon: float) -> None:
        """Check one instruction's UB reads and writes ((lo, hi) byte ranges), then keep them.
        Accesses that ended before `horizon` (the scalar unit's clock: no later instruction
        can start earlier) can never conflict again and are dropped."""
        self.reads = [a for a in self.reads if a.end > horizon]
        self.writes = [a for a in self.writes if a.end > horizon]
        for lo, hi in reads:
            self._against(self.writes, "reads", "writes", pipe, name, start, lo, hi)
        for lo, hi in writes:
            self._against(self.reads, "writes", "reads", pipe, name, start, lo, hi)
            self._against(self.writes, "writes", "writes", pipe, name, start, lo, hi)
        self.reads += [Access(lo, hi, pipe, end, name) for lo, hi in reads]
        self.writes += [Access(lo, hi, pipe, end, name) for lo, hi in writes]

    def _against(self, earlier: list[Access], verb: str, other_verb: str, pipe: Pipe, name: str,
                 start: float, lo: int, hi: int) -> None:
        for a in earlier:
            if a.pipe is not pipe and a.lo < hi and lo < a.hi and a.end > start:
                raise HazardError(
                    f"pipe hazard on core {self.core_id}: {name} ({pipe.lane}) {verb} UB "
                    f"[{lo:#x}, {hi:#x}) from cycle {start:.0f} while {a.name} ({a.pipe.lane}) "
                    f"{other_verb} [{a.lo:#x}, {a.hi:#x}) until cycle {a.end:.0f}: order them "
                    f"with a flag (enque/deque, alloc/free, or set_flag/wait_flag)")
