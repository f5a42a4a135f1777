"""The timing memo: a replayed launch takes its timing from an earlier replay that started
from an L2 in the same state, instead of stepping through the timeline again.

What a launch's timing reads that outlives the launch is L2 alone: every core's timeline,
flags, unit flags and flag board start fresh at each launch. A launch's phases (the stretches
between SyncAlls) each meet L2 as the phase before left it, and a phase that starts from an
L2 with the same fingerprint (l2.L2Cache.fingerprint: how many of the oldest entries have
left at each of its eviction checks, the dirty lines among them, where each line it touches
sits in the LRU order) meets the same hits, evictions and write-backs, move by move. So a
replay (replay.py) whose every phase has the fingerprint an earlier one had comes to the same
modeled times. A memo keeps, from one timed replay: per phase its fingerprint and the lines
it entered L2 with; the order the cores applied their effects on memory in; each core's
timing. A launch that finds its memo enters each phase's lines into L2 (checking the next
phase's fingerprint on the L2 they leave; a mismatch puts L2 back as it was), applies the
effects in their order (data only: no timeline, no L2 lookups) and reports the same timing;
one that does not is timed by the replay and remembered.

GM by argument: a memo's regions and lines are kept relative to the first argument in their
segment, so a launch on other buffers laid out alike finds it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from . import lockstep
from .core import AICore, CoreId
from .l2 import L2Cache, L2Stats, L2View, line_hulls

if TYPE_CHECKING:
    from .replay import LaunchTrace

# Memos kept per trace ([U]: a bound on memory and on the fingerprints a lookup computes, not
# a measured optimum): the same launch in each layer of a model is one trace, and meets L2 in
# a few states (a decode step's first layers after the LM head's stream, its later ones).
MAX_MEMOS = 64


@dataclass
class CoreTiming:
    """What a launch's report says of one core's time (simulator.CoreReport)."""

    end: float
    pipes: dict
    compute_busy: list
    moving: list
    l2: L2Stats
    bank_conflicts: tuple

    @classmethod
    def of(cls, core: AICore) -> CoreTiming:
        """The core's timing as the launch left it; the busy intervals as tuples (a model run
        keeps every launch's reports, and tuples of floats stay out of the garbage
        collector's walks, the timeline's [start, end] lists would not)."""
        tl = core.timeline
        return cls(tl.end, tl.pipe_stats(), [tuple(iv) for iv in tl.compute_busy],
                   [tuple(iv) for iv in tl.moving()], core.l2_stats, tuple(core.bank_conflicts))

    def copy(self) -> CoreTiming:
        """Its own stats objects, for a report (the intervals are tuples, shared)."""
        return CoreTiming(self.end, {p: s.copy() for p, s in self.pipes.items()},
                          self.compute_busy, self.moving, self.l2.copy(),
                          self.bank_conflicts)


@dataclass
class PhaseMemo:
    """One phase of a memoised launch (GM lines relative to their segment's first argument)."""

    points: np.ndarray     # allocation counts at its eviction checks
    evicted: int           # starting LRU entries it evicted
    regions: list          # (argument, first line, past-the-last line) its moves touched
    key: bytes             # the fingerprint of the L2 it started from
    entered: list = field(default_factory=list)   # (argument, lines, kind) it entered L2 with
    effects: int = 0       # the launch's effects applied by its end
    asks: bytes = field(init=False)   # what its fingerprint asks of L2 (points, evicted,
                                      # regions): memos that ask alike share one answer

    def __post_init__(self) -> None:
        self.asks = self.points.tobytes() + repr((self.evicted, self.regions)).encode()


@dataclass
class TimingMemo:
    layout: tuple          # per argument: (the first argument in its segment, offset from it)
    phases: list           # PhaseMemo, in order
    effects: list          # (step function, core's run rank, step), in the order applied
    timing: dict           # core id -> CoreTiming
    in_lockstep: lockstep.LockstepPlan | None = None   # its effects in lockstep (lockstep.py),
    planned: bool = False                              # planned at its first use


def _layout(bound: list, line: int) -> tuple[tuple, dict] | None:
    """The arguments' layout (what a memo must match) and, per segment address, its first
    argument and that argument's first line in the segment; None when an argument's segment
    does not start its first argument on a line (no memo then)."""
    layout: list = []
    first: dict[int, tuple[int, int]] = {}
    for i, (seg, root) in enumerate(bound):
        group = first.get(seg.addr)
        if group is None:
            if (root - seg.addr) % line:
                return None
            group = first[seg.addr] = (i, (root - seg.addr) // line)
        layout.append((group[0], root - bound[group[0]][1]))
    return tuple(layout), first


def _shifted(idx, shift: int):
    return slice(idx.start + shift, idx.stop + shift) if isinstance(idx, slice) else idx + shift


class _Binding:
    """A launch's arguments as a memo's relative lines see them: argument -> (segment, the
    argument's first line in it)."""

    def __init__(self, bound: list, line: int) -> None:
        self.at = [(seg, (root - seg.addr) // line) for seg, root in bound]

    def regions(self, phase: PhaseMemo) -> list:
        out = []
        for arg, lo, hi in phase.regions:
            seg, shift = self.at[arg]
            out.append((seg, slice(lo + shift, hi + shift)))
        return out

    def entered(self, phase: PhaseMemo) -> list:
        out = []
        for arg, idx, kind in phase.entered:
            seg, shift = self.at[arg]
            out.append((seg, _shifted(idx, shift), kind))
        return out


class MemoCore:
    """What a memoised launch's effects read of a core (`apply`, lockstep.py): its id and
    kind, its memories, the launch's GM arguments as replay.bind gives them; not the rest of
    an AICore (timeline, L2 view, registers), which a memo's timing stands in for."""

    __slots__ = ("core_id", "kind", "memories", "gm_bound")

    def __init__(self, core_id: CoreId, memories: dict, gm_bound: list) -> None:
        self.core_id, self.kind = core_id, core_id.kind
        self.memories, self.gm_bound = memories, gm_bound


def take(trace: LaunchTrace, bound: list, cache: L2Cache) -> TimingMemo | None:
    """The memo of `trace` whose phases' fingerprints L2 has, phase after phase, for a launch
    of arguments `bound` (replay.bound), if any: its lines are then in L2 (the memo moves to
    the front); else L2 is as it was."""
    if not trace.memos:
        return None
    found = _layout(bound, cache.line)
    if found is None:
        return None
    layout, _ = found
    binding = _Binding(bound, cache.line)
    starts: dict[bytes, bytes] = {}       # the L2 the launch starts from, fingerprinted
    for k, memo in enumerate(trace.memos):
        if memo.layout == layout and _enter(memo, binding, cache, starts):
            trace.memos.insert(0, trace.memos.pop(k))
            return memo
    return None


def _enter(memo: TimingMemo, binding: _Binding, cache: L2Cache, starts: dict) -> bool:
    """Enter the memo's phases into L2 while each one's fingerprint holds; on a mismatch, L2
    goes back as it was and the answer is False. `starts`: the starting L2's fingerprints by
    what they asked (memos whose first phases ask alike share one)."""
    saved = None
    for n, phase in enumerate(memo.phases):
        if n == 0:
            key = starts.get(phase.asks)
            if key is None:
                key = starts[phase.asks] = cache.fingerprint(phase.points, phase.evicted,
                                                             binding.regions(phase))
        else:
            key = cache.fingerprint(phase.points, phase.evicted, binding.regions(phase))
        if key != phase.key:
            if saved is not None:
                cache.restore(saved)
            return False
        if n == 0:
            entered = [binding.entered(p) for p in memo.phases]
            if len(entered) > 1:
                saved = cache.checkpoint([e for part in entered for e in part])
        cache.enter(entered[n])
    return True


def apply(memo: TimingMemo, cores: list[MemoCore], trace: LaunchTrace) -> None:
    """The memo's effects on memory: in lockstep where its cores' effects allow it (planned at
    its first use), else in the order the timed replay applied them."""
    if not memo.planned:
        memo.in_lockstep, memo.planned = lockstep.plan(memo, trace, cores), True
    if memo.in_lockstep is not None:
        memo.in_lockstep.apply(cores)
        return
    for op, rank, step in memo.effects:
        op(cores[rank], *step[1:])


class MemoDraft:
    """A timed replay becoming a memo: the replayer adds each effect as it applies it, the
    chip calls `phase_end` at each phase's end (before its merge) and `entered` after it,
    `finish` after the run."""

    def __init__(self, cores: list[AICore], line: int) -> None:
        found = _layout(cores[0].gm_bound, line)
        self.ok = found is not None
        self.layout, self.first = found if found is not None else ((), {})
        self.effects: list = []
        self.phases: list[PhaseMemo] = []

    def phase_end(self, cache: L2Cache, views: list[L2View]) -> None:
        """The phase's regions and fingerprint, from the L2 as it started (nothing of the
        phase entered it yet)."""
        spans = line_hulls((b.seg, part) for v in views for b in v.entries for part in b.parts)
        if not self.ok or any(addr not in self.first for addr in spans):
            self.ok = False                  # a segment of no argument: not relatable
            return
        phase = views[0].phase
        points, evicted = np.array(phase.points, np.int64), phase.evicted
        regions = [(seg, slice(lo, hi)) for seg, lo, hi in spans.values()]
        rel = [(self.first[seg.addr][0], lo - self.first[seg.addr][1],
                hi - self.first[seg.addr][1]) for seg, lo, hi in spans.values()]
        self.phases.append(PhaseMemo(points, evicted, rel,
                                     cache.fingerprint(points, evicted, regions),
                                     effects=len(self.effects)))

    def entered(self, entered: list) -> None:
        if self.ok:
            self.phases[-1].entered = [
                (self.first[seg.addr][0], _shifted(idx, -self.first[seg.addr][1]), kind)
                for seg, idx, kind in entered]

    def finish(self, trace: LaunchTrace, cores: list[AICore]) -> None:
        """The replay is over: keep the memo (the most recently used first, at most
        MAX_MEMOS)."""
        if not self.ok or not self.phases:
            return
        memo = TimingMemo(self.layout, self.phases, self.effects,   # its own stats objects:
                          {c.core_id: CoreTiming.of(c).copy() for c in cores})  # not the report's
        ends = [p.effects for p in self.phases]
        for other in trace.memos:         # the same effects as another's: its list and plan
            if other.layout == self.layout and other.effects == self.effects \
                    and [p.effects for p in other.phases] == ends:
                memo.effects, memo.in_lockstep, memo.planned = \
                    other.effects, other.in_lockstep, other.planned
                break
        trace.memos.insert(0, memo)
        del trace.memos[MAX_MEMOS:]
