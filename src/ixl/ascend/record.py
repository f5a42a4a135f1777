"""The timeline recorder: an observer that keeps every instruction's slice on its pipe and every
flag edge, per core (what traces and timeline plots draw). The chip attaches one when a launch
asks for a record (`Mode.record`)."""

from __future__ import annotations

from dataclasses import dataclass

from .costs import cost_table
from .observe import Instruction, LaunchInfo, Observer, Sync, SyncKind
from .timeline import Pipe


@dataclass(frozen=True)
class Slice:
    """One instruction on one pipe (SCALAR: the dispatch of an instruction)."""

    pipe: Pipe
    name: str
    start: float
    end: float
    nbytes: int = 0


@dataclass(frozen=True)
class FlagEdge:
    """A set_flag/wait_flag pair (or the enque/deque and free/alloc built on one)."""

    event: str
    set_pipe: Pipe
    set_time: float
    wait_pipe: Pipe
    wait_time: float


@dataclass(frozen=True)
class CrossEdge:
    """A cross-core flag: core `setter` set it on `set_pipe`, core `waiter` passed its wait."""

    flag: int
    setter: int
    set_pipe: Pipe
    set_time: float
    waiter: int
    wait_time: float


class TimelineRecorder(Observer):
    """Per core of the latest launch: `slices` and `edges`; `cross` the cross-core flags."""

    def __init__(self) -> None:
        self.scalar_issue = 0.0
        self.slices: dict[int, list[Slice]] = {}
        self.edges: dict[int, list[FlagEdge]] = {}
        self.cross: list[CrossEdge] = []
        self._sets: dict[int, list] = {}

    def launch_begin(self, launch: LaunchInfo) -> None:
        self.scalar_issue = cost_table(launch.chip.arch).scalar_issue_cycles
        self.slices = {c: [] for c in launch.cores}
        self.edges = {c: [] for c in launch.cores}
        self.cross = []
        self._sets = {c: [] for c in launch.cores}

    def _dispatch(self, core: int, issued: float) -> None:
        self.slices[core].append(Slice(Pipe.S, "dispatch", issued, issued + self.scalar_issue))

    def instruction(self, ins: Instruction) -> None:
        self._dispatch(ins.core, ins.issued)
        self.slices[ins.core].append(Slice(ins.pipe, ins.name, ins.start, ins.end, ins.nbytes))

    def sync(self, ev: Sync) -> None:
        if ev.issued is not None:
            self._dispatch(ev.core, ev.issued)
        if ev.kind is SyncKind.WAIT:
            assert ev.src is not None and ev.dst is not None
            self.edges[ev.core].append(FlagEdge(f"{ev.src.name}_{ev.dst.name}:{ev.event_id}",
                                                ev.src, ev.fired, ev.dst, ev.time))
        elif ev.kind is SyncKind.CROSS_SET:
            self._sets[ev.core].append((ev.src, ev.time))
        elif ev.kind is SyncKind.CROSS_WAIT:
            assert isinstance(ev.peer, tuple)
            for setter, number in ev.peer:
                pipe, when = self._sets[setter][number - 1]
                self.cross.append(CrossEdge(ev.event_id, setter, pipe, when, ev.core, ev.time))
