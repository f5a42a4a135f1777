"""The per-core timeline: when each instruction would run on the chip, pipe by pipe.

The scalar unit dispatches instructions in program order into per-pipe queues; each pipe runs
its queue in order, the pipes run in parallel. Only flags (and the queue/buffer operations built
on them) and barriers order one pipe after another, as on the chip. Times are in core cycles and
computed as instructions are dispatched, so nothing is stored unless a recorder asks for it.
"""

from __future__ import annotations

import enum
from collections import defaultdict, deque
from dataclasses import dataclass, field

from .errors import KernelTimeout


class Pipe(enum.Enum):
    S = "SCALAR"
    V = "VECTOR"
    M = "CUBE"
    MTE1 = "MTE1"
    MTE2 = "MTE2"
    MTE3 = "MTE3"
    FIX = "FIXPIPE"

    @property
    def lane(self) -> str:
        """The track name msprof's simulator trace uses for this pipe."""
        return self.value


@dataclass(frozen=True)
class Slice:
    """One instruction on one pipe (kept only when a recorder is attached)."""

    pipe: Pipe
    name: str
    start: float
    end: float
    nbytes: int = 0


@dataclass(frozen=True)
class FlagEdge:
    """A set_flag/wait_flag pair (or enque/deque built on one), for trace flow arrows."""

    event: str
    set_pipe: Pipe
    set_time: float
    wait_pipe: Pipe
    wait_time: float


@dataclass
class PipeStats:
    busy: float = 0.0
    count: int = 0
    nbytes: int = 0


@dataclass
class Timeline:
    """Dispatch and completion times for one core running one kernel block."""

    scalar_issue_cycles: float
    queue_depth: int
    record: bool = False
    scalar: float = 0.0
    free: dict = field(default_factory=lambda: defaultdict(float))
    stats: dict = field(default_factory=lambda: defaultdict(PipeStats))
    slices: list = field(default_factory=list)
    edges: list = field(default_factory=list)
    _flags: dict = field(default_factory=lambda: defaultdict(deque))
    _starts: dict = field(default_factory=dict)

    def issue(self, pipe: Pipe, name: str, cycles: float, nbytes: int = 0) -> float:
        """Dispatch one instruction; returns its completion time."""
        self.scalar += self.scalar_issue_cycles
        starts = self._starts.get(pipe)
        if starts is None:
            starts = self._starts[pipe] = deque(maxlen=self.queue_depth)
        elif len(starts) == self.queue_depth and starts[0] > self.scalar:
            self.scalar = starts[0]      # the pipe's queue is full: the scalar unit stalls
        start = max(self.scalar, self.free[pipe])
        end = start + cycles
        self.free[pipe] = end
        starts.append(start)
        st = self.stats[pipe]
        st.busy += cycles
        st.count += 1
        st.nbytes += nbytes
        if self.record:
            self.slices.append(Slice(pipe, name, start, end, nbytes))
        return end

    def scalar_work(self, cycles: float) -> None:
        """Work done on the scalar unit itself (address arithmetic, loop control)."""
        start = self.scalar
        self.scalar += cycles
        st = self.stats[Pipe.S]
        st.busy += cycles
        st.count += 1
        if self.record and cycles:
            self.slices.append(Slice(Pipe.S, "scalar", start, self.scalar))

    def set_flag(self, src: Pipe, dst: Pipe, event_id: int) -> None:
        self.scalar += self.scalar_issue_cycles
        when = max(self.scalar, self.free[src])
        self._flags[(src, dst, event_id)].append(when)

    def wait_flag(self, src: Pipe, dst: Pipe, event_id: int, core_id: int) -> None:
        self.scalar += self.scalar_issue_cycles
        pending = self._flags.get((src, dst, event_id))
        if not pending:
            raise KernelTimeout(
                f"vector core execution timed out: core {core_id} waits for flag "
                f"{src.name}_{dst.name} id {event_id}, which no earlier set_flag raised")
        when = pending.popleft()
        if dst is Pipe.S:
            self.scalar = max(self.scalar, when)
            resumed = self.scalar
        else:
            self.free[dst] = max(self.free[dst], when)
            resumed = self.free[dst]
        if self.record:
            self.edges.append(FlagEdge(f"{src.name}_{dst.name}:{event_id}", src, when, dst, resumed))

    def barrier(self, pipe: Pipe | None) -> None:
        """PipeBarrier<pipe>; None means PIPE_ALL, which also holds the scalar unit."""
        self.scalar += self.scalar_issue_cycles
        if pipe is None:
            self.scalar = max([self.scalar, *self.free.values()])
        # A single in-order pipe already completes earlier instructions first.

    def unpaired_flags(self) -> list[str]:
        return [f"{s.name}_{d.name} id {i} x{len(q)}" for (s, d, i), q in self._flags.items() if q]

    @property
    def end(self) -> float:
        return max([self.scalar, *self.free.values()])
