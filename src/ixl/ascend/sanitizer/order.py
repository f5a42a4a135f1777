"""Happens-before among the pipes of one core, over program order and sync edges (not over
modeled times), as vector clocks: what the pipe-hazard check and the cross-core race check
order accesses by.

What orders two instructions on the chip:
- one pipe runs in order, so each instruction follows the pipe's earlier ones;
- the scalar unit dispatches in order, so an instruction follows everything the scalar unit
  has done or waited for when it is dispatched; dispatch order alone does not order two
  other pipes (MTE2 may still be writing when a later vector instruction starts);
- set_flag on pipe X fires when X's earlier work is done: it captures X's clock, and the
  wait_flag on pipe Y that takes it joins that into Y's (enque/deque and free/alloc are such
  pairs);
- pipe_barrier(PIPE_ALL) waits for every pipe: the scalar unit joins them all.
"""

from __future__ import annotations

from collections import defaultdict, deque
from collections.abc import Sequence

from ..observe import Sync, SyncKind
from ..timeline import Pipe

PIPES = list(Pipe)
INDEX = {p: i for i, p in enumerate(PIPES)}
S = INDEX[Pipe.S]


class PipeClocks:
    """The vector clocks of one core: clock[p][q] = the instructions of pipe q (numbered from
    1 in program order) that pipe p is ordered after."""

    def __init__(self) -> None:
        n = len(PIPES)
        self.clock = [[0] * n for _ in range(n)]
        self.seen_s = [0] * n                       # the scalar clock version p last joined
        self.s_version = 0
        self.flags: dict[tuple, deque] = defaultdict(deque)

    def dispatch(self, p: int) -> list[int]:
        """Pipe p's clock for an instruction dispatched now (after all the scalar unit knows)."""
        clock = self.clock[p]
        if p != S and self.seen_s[p] != self.s_version:
            s = self.clock[S]
            for q, v in enumerate(s):
                if v > clock[q]:
                    clock[q] = v
            self.seen_s[p] = self.s_version
        return clock

    def join(self, p: int, other: Sequence[int]) -> None:
        clock = self.clock[p]
        for q, v in enumerate(other):
            if v > clock[q]:
                clock[q] = v
        if p == S:
            self.s_version += 1

    def instruction(self, pipe: Pipe) -> tuple[list[int], int]:
        """An instruction on `pipe`: its clock and its number on the pipe."""
        p = INDEX[pipe]
        clock = self.dispatch(p)
        clock[p] += 1
        if p == S:
            self.s_version += 1
        return clock, clock[p]

    def sync(self, ev: Sync) -> None:
        """Flag edges and barriers (other events leave the clocks alone)."""
        kind = ev.kind
        if kind is SyncKind.SET:
            assert ev.src is not None
            self.flags[(ev.src, ev.dst, ev.event_id)].append(tuple(self.dispatch(INDEX[ev.src])))
        elif kind is SyncKind.WAIT:
            assert ev.dst is not None
            dst = INDEX[ev.dst]
            self.dispatch(dst)
            self.join(dst, self.flags[(ev.src, ev.dst, ev.event_id)].popleft())
        elif kind is SyncKind.BARRIER and ev.src is None:       # PIPE_ALL
            for p in range(len(PIPES)):
                self.join(S, self.dispatch(p))
