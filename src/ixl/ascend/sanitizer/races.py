"""Cross-core GM races: between two SyncAlls (or in a launch without one) the cores run in no
order the kernel may rely on, so two cores writing the same GM bytes, or one reading bytes
another writes, give a result that depends on which core the chip ran first.

Each core's GM reads and writes are kept per tensor as byte intervals; at each phase's end
they are merged (sorted, touching ones joined) and compared across cores, so the cost grows
with the number of moves, not of bytes.

In a mix kernel cross-core flags order cores too: a CrossCoreSetFlag on pipe P orders the
setter's accesses that P is ordered after (order.py) before everything the waiting core does
after its CrossCoreWaitFlag (which holds all its pipes). There each access keeps its pipe, its
number on that pipe and what its core knew of the other cores then, and two conflicting
accesses of different cores race unless one is ordered before the other.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from ..core import as_core_id
from ..errors import CrossCoreRace
from ..observe import Instruction, LaunchInfo, Observer, Space, Sync, SyncKind
from .order import INDEX, PipeClocks


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

    def __init__(self) -> None:
        self.reads: dict[int, list] = defaultdict(list)
        self.writes: dict[int, list] = defaultdict(list)

    @staticmethod
    def merged(parts: list) -> tuple[np.ndarray, np.ndarray]:
        return merge(np.concatenate([s for s, _ in parts]), np.concatenate([e for _, e in parts]))


class _Order:
    """Cross-core happens-before of a mix launch: per core its pipe clocks, what it knows of
    each other core's pipes (joined at each cross-core wait), and the knowledge each of its
    sets carried."""

    def __init__(self, cores) -> None:
        self.clocks = {c: PipeClocks() for c in cores}
        self.known: dict = {c: [{}] for c in cores}       # core -> versions of its knowledge
        self.sets: dict = {c: [] for c in cores}          # core -> what each of its sets carried
        self.waits = 0

    def sync(self, ev: Sync) -> None:
        self.clocks[ev.core].sync(ev)
        if ev.kind is SyncKind.CROSS_SET:
            assert ev.src is not None
            carried = dict(self.known[ev.core][-1])
            carried[ev.core] = tuple(self.clocks[ev.core].dispatch(INDEX[ev.src]))
            self.sets[ev.core].append(carried)
        elif ev.kind is SyncKind.CROSS_WAIT:
            assert isinstance(ev.peer, tuple)
            know = dict(self.known[ev.core][-1])
            for setter, number in ev.peer:
                for core, clock in self.sets[setter][number - 1].items():
                    old = know.get(core)
                    know[core] = clock if old is None else tuple(map(max, old, clock))
            self.known[ev.core].append(know)
            self.waits += 1

    def stamp(self, ins: Instruction) -> tuple[int, int, int]:
        """(pipe, number on the pipe, knowledge version) of an instruction."""
        _, seq = self.clocks[ins.core].instruction(ins.pipe)
        return INDEX[ins.pipe], seq, len(self.known[ins.core]) - 1

    def before(self, a, b) -> bool:
        """Access a (core, pipe, seq, version) is ordered before access b."""
        know = self.known[b[0]][b[3]].get(a[0])
        return know is not None and know[a[1]] >= a[2]


class CrossCoreRaces(Observer):
    def __init__(self) -> None:
        self.moves: dict[int, _Moves] = {}
        self.names: dict[int, str] = {}
        self.order: _Order | None = None
        self.stamped: list = []        # mix launches: (root, starts, ends, write, stamp, core)

    def launch_begin(self, launch: LaunchInfo) -> None:
        self.moves = {c: _Moves() for c in launch.cores}
        self.names = {}
        self.order = _Order(launch.cores) if launch.kind == "mix" else None
        self.stamped = []

    def sync(self, ev: Sync) -> None:
        if self.order is not None:
            self.order.sync(ev)

    def instruction(self, ins: Instruction) -> None:
        stamp = self.order.stamp(ins) if self.order is not None else None
        for accesses, is_write in ((ins.reads, False), (ins.writes, True)):
            for a in accesses:
                if a.space is Space.GM and not a.empty:
                    moves = self.moves[ins.core]
                    root = a.gm_tensor.root[0]
                    (moves.writes if is_write else moves.reads)[root].append(a.intervals())
                    self.names.setdefault(root, a.gm_tensor.name)
                    if stamp is not None:
                        self.stamped.append((root, *a.intervals(), is_write, stamp, ins.core))

    def phase_end(self, phase: int) -> None:
        if self.order is not None and self.order.waits:
            self._check_ordered(phase)
            self.moves = {c: _Moves() for c in self.moves}
            self.stamped = []
            return
        self.stamped = []
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
                first, second = sorted((as_core_id(int(cores[i])), as_core_id(int(cores[j]))))
                raise CrossCoreRace(
                    f"cross-core race: cores {first} and {second} both write "
                    f"{self._where(root, lo, hi)} "
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
                            f"that core {as_core_id(int(cores[w]))} writes {_phase(phase)}: "
                            f"what it reads "
                            f"depends on which core runs first")

    def _check_ordered(self, phase: int) -> None:
        """Every pair of overlapping accesses of two cores, one a write, in the order the
        cross-core flags give, or a race."""
        rows = [(root, lo, hi, w, stamp, core)
                for root, starts, ends, w, stamp, core in self.stamped
                for lo, hi in zip(starts.tolist(), ends.tolist())]
        rows.sort(key=lambda r: (r[0], r[1]))
        order = self.order
        assert order is not None                    # called only when it waited
        active: list = []
        for row in rows:
            root, lo, hi, w, stamp, core = row
            active = [r for r in active if r[0] == root and r[2] > lo]
            for other in active:
                if other[5] == core or not (w or other[3]):
                    continue
                a, b = (other[5], *other[4]), (core, *stamp)
                if not (order.before(a, b) or order.before(b, a)):
                    self._race(root, other, row, phase)
            active.append(row)

    def _race(self, root: int, first, second, phase: int) -> None:
        lo, hi = max(first[1], second[1]), min(first[2], second[2])
        where = self._where(root, lo, hi)
        unordered = ("with no SyncAll or cross-core flag ordering them"
                     + (f" (after SyncAll {phase})" if phase else ""))
        if first[3] and second[3]:
            cores = sorted((first[5], second[5]))
            raise CrossCoreRace(f"cross-core race: cores {cores[0]} and {cores[1]} both write "
                                f"{where} {unordered}: the bytes hold whichever core writes last")
        reader, writer = (first, second) if second[3] else (second, first)
        raise CrossCoreRace(f"cross-core race: core {reader[5]} reads {where} that core "
                            f"{writer[5]} writes {unordered}: what it reads depends on which "
                            f"core runs first")

    def _where(self, root: int, lo: int, hi: int) -> str:
        return (f"GM [{lo:#x}, {hi:#x}) of tensor '{self.names[root]}' (its bytes "
                f"[{lo - root}, {hi - root}))")


def _phase(phase: int) -> str:
    return ("with no SyncAll between them" if phase == 0
            else f"with no SyncAll between them (after SyncAll {phase})")
