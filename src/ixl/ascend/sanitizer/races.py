"""Cross-core GM races: between two SyncAlls (or in a launch without one) the cores run in no
order the kernel may rely on, so two cores writing the same GM bytes, or one reading bytes
another writes, give a result that depends on which core the chip ran first.

Each core's GM reads and writes are kept per tensor as byte intervals; at each phase's end
they are merged (sorted, touching ones joined) and compared across cores, so the cost grows
with the number of moves, not of bytes.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from ..errors import CrossCoreRace
from ..observe import Instruction, LaunchInfo, Observer, Space


def merge(starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sorted, disjoint intervals covering the same bytes as [starts, ends)."""
    if len(starts) <= 1:
        return starts, ends
    order = np.argsort(starts, kind="stable")
    starts, ends = starts[order], ends[order]
    reach = np.maximum.accumulate(ends)
    new = np.empty(len(starts), bool)
    new[0] = True
    new[1:] = starts[1:] > reach[:-1]
    firsts = np.flatnonzero(new)
    return starts[firsts], np.maximum.reduceat(ends, firsts)


class _Moves:
    """One core's GM intervals in the current phase, per tensor root."""

    def __init__(self):
        self.reads: dict[int, list] = defaultdict(list)
        self.writes: dict[int, list] = defaultdict(list)

    @staticmethod
    def merged(parts: list) -> tuple[np.ndarray, np.ndarray]:
        return merge(np.concatenate([s for s, _ in parts]), np.concatenate([e for _, e in parts]))


class CrossCoreRaces(Observer):
    def __init__(self):
        self.moves: dict[int, _Moves] = {}
        self.names: dict[int, str] = {}

    def launch_begin(self, launch: LaunchInfo) -> None:
        self.moves = {c: _Moves() for c in launch.cores}
        self.names = {}

    def instruction(self, ins: Instruction) -> None:
        for accesses, is_write in ((ins.reads, False), (ins.writes, True)):
            for a in accesses:
                if a.space is Space.GM and not a.empty:
                    moves = self.moves[ins.core]
                    root = a.tensor.root[0]
                    (moves.writes if is_write else moves.reads)[root].append(a.intervals())
                    self.names.setdefault(root, a.tensor.name)

    def phase_end(self, phase: int) -> None:
        moves, self.moves = self.moves, {c: _Moves() for c in self.moves}
        roots = {r for m in moves.values() for r in (*m.reads, *m.writes)}
        for root in sorted(roots):
            writes = {c: m.merged(m.writes[root]) for c, m in moves.items() if root in m.writes}
            reads = {c: m.merged(m.reads[root]) for c, m in moves.items() if root in m.reads}
            starts, ends, cores = self._check_writes(root, writes, phase)
            self._check_reads(root, reads, starts, ends, cores, phase)

    def _check_writes(self, root: int, writes: dict, phase: int):
        """All cores' writes to one tensor, sorted; two that overlap are a race. Returns them
        (disjoint once checked) with the writing core of each."""
        if not writes:
            return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64)
        starts = np.concatenate([s for s, _ in writes.values()])
        ends = np.concatenate([e for _, e in writes.values()])
        cores = np.concatenate([np.full(len(s), c) for c, (s, _) in writes.items()])
        order = np.argsort(starts, kind="stable")
        starts, ends, cores = starts[order], ends[order], cores[order]
        if len(starts) > 1:
            reach = np.maximum.accumulate(ends)[:-1]
            clash = np.flatnonzero(starts[1:] < reach)
            if len(clash):
                j = int(clash[0]) + 1                 # overlaps an earlier interval of another
                i = int(np.flatnonzero(ends[:j] > starts[j])[0])   # core (a core's own are merged)
                lo, hi = starts[j], min(ends[i], ends[j])
                raise CrossCoreRace(
                    f"cross-core race: cores {min(cores[i], cores[j])} and "
                    f"{max(cores[i], cores[j])} both write {self._where(root, lo, hi)} "
                    f"{_phase(phase)}: the bytes hold whichever core writes last")
        return starts, ends, cores

    def _check_reads(self, root: int, reads: dict, starts, ends, cores, phase: int) -> None:
        """Each core's reads against the (disjoint, sorted) writes of the others."""
        if not len(starts):
            return
        for core, (r_starts, r_ends) in reads.items():
            first = np.searchsorted(ends, r_starts, side="right")
            stop = np.searchsorted(starts, r_ends, side="left")
            for k in np.flatnonzero(stop > first):
                for w in range(first[k], stop[k]):
                    if cores[w] != core:
                        lo, hi = max(starts[w], r_starts[k]), min(ends[w], r_ends[k])
                        raise CrossCoreRace(
                            f"cross-core race: core {core} reads {self._where(root, lo, hi)} "
                            f"that core {cores[w]} writes {_phase(phase)}: what it reads "
                            f"depends on which core runs first")

    def _where(self, root: int, lo: int, hi: int) -> str:
        return (f"GM [{lo:#x}, {hi:#x}) of tensor '{self.names[root]}' (its bytes "
                f"[{lo - root}, {hi - root}))")


def _phase(phase: int) -> str:
    return ("with no SyncAll between them" if phase == 0
            else f"with no SyncAll between them (after SyncAll {phase})")
