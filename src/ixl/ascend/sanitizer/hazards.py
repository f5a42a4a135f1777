"""Order-based pipe hazards: two accesses from different pipes to overlapping bytes, at least
one a write, that no chain of sync edges orders, however the modeled times fall.

Happens-before is tracked with a vector clock per pipe (order.py); a SyncAll and the end of a
block drain every pipe. An access numbered n on pipe P is ordered before a later access on
pipe Q when Q's clock holds at least n for P. The check is per address space, so UB, GM (a
core reading back what it wrote) and a Cube's L1/L0 buffers are covered alike. A tensor used
after `free_tensor` gave its buffer back is reported at once: the queue may refill it at any
time.
"""

from __future__ import annotations

import bisect
from collections import defaultdict

from ..errors import HazardError, UseAfterFree
from ..observe import Access, Instruction, LaunchInfo, Observer, Space, Sync, SyncKind
from ..timeline import Pipe
from .order import INDEX, PIPES, PipeClocks


class _Log:
    """The accesses one pipe made to one space, in its program order (seq ascending)."""

    __slots__ = ("seqs", "entries")

    def __init__(self) -> None:
        self.seqs: list[int] = []
        self.entries: list[tuple[int, int, str]] = []   # (lo, hi, instruction)

    def after(self, known: int):
        """Entries numbered above `known`: those the asking pipe is not ordered after."""
        return self.entries[bisect.bisect_right(self.seqs, known):]


class _Core(PipeClocks):
    """Clocks, access logs and freed buffers of one core."""

    def __init__(self) -> None:
        super().__init__()
        # space -> {(pipe index, writes?): log}; the logs of one space are checked together
        self.logs: dict[Space, dict[tuple[int, bool], _Log]] = defaultdict(dict)
        self.freed: list[tuple] = []     # (space, lo, hi, position) given back

    def drained(self) -> None:
        """Every pipe finished: all earlier accesses are ordered before all later ones."""
        self.logs.clear()

    def log(self, space: Space, p: int, is_write: bool) -> _Log:
        logs = self.logs[space]
        log = logs.get((p, is_write))
        if log is None:
            log = logs[(p, is_write)] = _Log()
        return log


class PipeHazards(Observer):
    def __init__(self) -> None:
        self.cores: dict[int, _Core] = {}

    def launch_begin(self, launch: LaunchInfo) -> None:
        self.cores = {c: _Core() for c in launch.cores}

    def block_begin(self, core: int, block: int) -> None:
        st = self.cores[core]
        st.drained()
        st.freed.clear()

    def sync(self, ev: Sync) -> None:
        st = self.cores[ev.core]
        kind = ev.kind
        st.sync(ev)
        if kind is SyncKind.SYNC_ALL:
            st.drained()
        elif kind is SyncKind.FREE:
            assert ev.buffer is not None
            st.freed.append((ev.buffer.space, *ev.buffer.span(), ev.buffer.role))
        elif kind is SyncKind.ALLOC:
            assert ev.buffer is not None
            lo, hi = ev.buffer.span()
            st.freed = [b for b in st.freed
                        if not (b[0] is ev.buffer.space and b[1] < hi and lo < b[2])]

    def instruction(self, ins: Instruction) -> None:
        st = self.cores[ins.core]
        p = INDEX[ins.pipe]
        clock, seq = st.instruction(ins.pipe)
        touched = [(a, *a.span(), False) for a in ins.reads if not a.empty]
        touched += [(a, *a.span(), True) for a in ins.writes if not a.empty]
        for a, lo, hi, is_write in touched:
            if st.freed and a.space is not Space.GM:
                _check_freed(st, ins, a.space, lo, hi, is_write)
            logs = st.logs.get(a.space)
            if logs:
                _check(logs, ins, clock, p, a, lo, hi, is_write)
        for a, lo, hi, is_write in touched:
            log = st.log(a.space, p, is_write)
            log.seqs.append(seq)
            log.entries.append((lo, hi, ins.name))


def _check(logs: dict, ins: Instruction, clock, p: int, a: Access, lo: int, hi: int,
           is_write: bool) -> None:
    """`a` against the accesses of other pipes its pipe is not ordered after."""
    for (q, other_writes), log in logs.items():
        if q == p or not (is_write or other_writes):
            continue
        for lo2, hi2, name in log.after(clock[q]):
            if lo2 < hi and lo < hi2:
                raise HazardError(_hazard(ins, a, lo, hi, is_write, PIPES[q], name, lo2, hi2,
                                          other_writes))


def _check_freed(st: _Core, ins: Instruction, space: Space, lo: int, hi: int,
                 is_write: bool) -> None:
    for bspace, blo, bhi, position in st.freed:
        if bspace is space and blo < hi and lo < bhi:
            raise UseAfterFree(
                f"use after free_tensor on core {ins.core}: {ins.name} ({ins.pipe.lane}) "
                f"{'writes' if is_write else 'reads'} {space.value} [{lo:#x}, {hi:#x}) of a "
                f"{position} "
                f"buffer [{blo:#x}, {bhi:#x}) that free_tensor gave back to its queue (the "
                f"next alloc_tensor may refill it at any time): finish with a tensor before "
                f"freeing it")


def _hazard(ins: Instruction, a: Access, lo: int, hi: int, is_write: bool, other: Pipe,
            other_name: str, lo2: int, hi2: int, other_writes: bool) -> str:
    tensor = f" of tensor '{a.tensor.name}'" if a.tensor is not None else ""
    event = f"{other.name}_{ins.pipe.name}"
    return (f"pipe hazard on core {ins.core}: {ins.name} ({ins.pipe.lane}) "
            f"{'writes' if is_write else 'reads'} {a.space.value} [{lo:#x}, {hi:#x}){tensor} "
            f"that {other_name} ({other.lane}) {'writes' if other_writes else 'reads'} "
            f"[{lo2:#x}, {hi2:#x}) earlier in program order, and no sync orders {other.lane} "
            f"before {ins.pipe.lane}: the chip runs the pipes in parallel, so the result "
            f"depends on timing; order them with set_flag/wait_flag({event}), enque/deque or "
            f"free/alloc")
