"""The per-core timeline: when each instruction would run on the chip, pipe by pipe.

The scalar unit dispatches instructions in program order into per-pipe queues; each pipe runs
its queue in order, the pipes run in parallel. Only flags (and the queue/buffer operations built
on them) and barriers order one pipe after another, as on the chip. Times are in core cycles and
computed as instructions are dispatched and nothing is stored per instruction: a recorder is an
observer of the core (record.py).
"""

from __future__ import annotations

import bisect
import enum
import itertools
from collections import defaultdict, deque
from dataclasses import dataclass, field

import numpy as np

from .errors import KernelTimeout


class Pipe(enum.Enum):
    S = "SCALAR"
    V = "VECTOR"
    M = "CUBE"
    MTE1 = "MTE1"
    MTE2 = "MTE2"
    MTE3 = "MTE3"
    FIX = "FIXPIPE"

    __hash__ = object.__hash__   # pipes key hot dicts: skip Enum's Python-level hash

    @property
    def lane(self) -> str:
        """The track name msprof's simulator trace uses for this pipe."""
        return self.value


@dataclass
class PipeStats:
    busy: float = 0.0
    count: int = 0
    nbytes: int = 0
    flops: int = 0          # the Cube's multiply-adds x 2 (PIPE_M only)

    def copy(self) -> PipeStats:
        return PipeStats(self.busy, self.count, self.nbytes, self.flops)


@dataclass
class Timeline:
    """Dispatch and completion times for one core running kernel blocks.

    `free[p]` is when pipe p has finished everything issued to it; `port_busy` holds when the
    core's port to GM and L2 is taken (MTE2, MTE3 and the Fixpipe share it, each after its own
    latency) and `hbm_busy` when the core's share of the chip's HBM bandwidth is (the bytes
    HBM serves or takes: misses, bypasses, write-backs of dirty lines).
    A flag fires when its source pipe has finished its earlier work and releases the waiting
    pipe `flag_latency` cycles later.
    """

    scalar_issue: float
    flag_latency: float
    queue_depth: int
    scalar: float = 0.0
    issued: float = 0.0               # when the scalar unit began dispatching the latest one
    dispatches: int = 0
    free: dict = field(default_factory=lambda: defaultdict(float))
    stats: dict = field(default_factory=lambda: defaultdict(PipeStats))
    _flags: dict = field(default_factory=lambda: defaultdict(deque))
    _starts: dict = field(default_factory=dict)
    # Busy intervals of the compute pipe (V on a vector core, M on a Cube core) and of the GM
    # port (each sorted, touching ones merged): enough to tell how much moving happens while
    # nothing computes.
    compute_busy: list = field(default_factory=list)
    port_busy: list = field(default_factory=list)
    hbm_busy: list = field(default_factory=list)
    last: tuple = (0.0, 0.0)          # (start, end) of the latest instruction

    def _dispatch(self, pipe: Pipe) -> float:
        """The scalar unit issues one instruction to `pipe`; returns when that pipe can start it."""
        self._scalar_step()
        starts = self._starts.get(pipe)
        if starts is None:
            starts = self._starts[pipe] = deque(maxlen=self.queue_depth)
        elif len(starts) == self.queue_depth and starts[0] > self.scalar:
            self.scalar = starts[0]      # the pipe's queue is full: the scalar unit stalls
        start = max(self.scalar, self.free[pipe])
        starts.append(start)
        return start

    def _finish(self, pipe: Pipe, name: str, start: float, end: float, busy: float,
                nbytes: int) -> float:
        self.free[pipe] = end
        self.last = (start, end)
        st = self.stats[pipe]
        st.busy += busy
        st.count += 1
        st.nbytes += nbytes
        return end

    def issue(self, pipe: Pipe, name: str, cycles: float) -> float:
        """An instruction that occupies `pipe` for `cycles`; returns its completion time."""
        start = self._dispatch(pipe)
        if (pipe is Pipe.V or pipe is Pipe.M) and cycles:
            _extend(self.compute_busy, start, start + cycles)
        return self._finish(pipe, name, start, start + cycles, cycles, 0)

    def move_start(self, pipe: Pipe) -> float:
        """The scalar unit dispatches a GM move to `pipe`: when the pipe starts it (what L2
        serves it depends on the moves of other cores before then, so the move is timed in two
        steps: this, then `transfer`)."""
        return self._dispatch(pipe)

    def transfer(self, pipe: Pipe, name: str, start: float, latency: float, cycles: float,
                 nbytes: int, hbm_cycles: float = 0.0) -> float:
        """A GM move that `pipe` started at `start` (move_start): `latency` on its own pipe,
        then `cycles` of the core's port and `hbm_cycles` of its HBM share, each taken from
        whatever time is free on it from then on (MTE2 and MTE3 share both; a move dispatched
        later in program order may still use an earlier gap); it ends when both are done."""
        ready = start + latency
        end = _reserve(self.port_busy, ready, cycles)
        if hbm_cycles:
            end = max(end, _reserve(self.hbm_busy, ready, hbm_cycles))
        return self._finish(pipe, name, start, end, end - start, nbytes)

    def moving(self) -> list:
        """When the core's moves hold its port or its HBM share (sorted, disjoint)."""
        return union(self.port_busy, self.hbm_busy)

    def _scalar_step(self) -> None:
        self.issued = self.scalar
        self.scalar += self.scalar_issue
        self.dispatches += 1

    def pipe_stats(self) -> dict:
        """Per-pipe busy cycles, instruction counts and bytes (SCALAR: its dispatches)."""
        out = dict(self.stats)
        out[Pipe.S] = PipeStats(self.dispatches * self.scalar_issue, self.dispatches, 0)
        return out

    def set_flag(self, src: Pipe, dst: Pipe, event_id: int) -> float:
        """Returns when the flag fires."""
        self._scalar_step()
        when = max(self.scalar, self.free[src])
        self._flags[(src, dst, event_id)].append(when)
        return when

    def wait_flag(self, src: Pipe, dst: Pipe, event_id: int, core_id: int,
                  label: str = "vector core") -> tuple[float, float]:
        """Returns when the flag fired and when the waiting pipe resumes."""
        self._scalar_step()
        pending = self._flags.get((src, dst, event_id))
        if not pending:
            raise KernelTimeout(
                f"{label} execution timed out: core {core_id} waits for flag "
                f"{src.name}_{dst.name} id {event_id}, which no earlier set_flag raised")
        when = pending.popleft() + self.flag_latency
        if dst is Pipe.S:
            self.scalar = max(self.scalar, when)
            resumed = self.scalar
        else:
            self.free[dst] = max(self.free[dst], when)
            resumed = self.free[dst]
        return when - self.flag_latency, resumed

    def hold(self, pipe: Pipe, until: float) -> None:
        """Nothing more starts on `pipe` before `until` (a hardware handshake, like a flag
        wait with no latency: the Cube's unit flags)."""
        if self.free[pipe] < until:
            self.free[pipe] = until

    def stretch(self, pipe: Pipe, until: float) -> float:
        """The latest instruction on `pipe` cannot finish before `until` (it waits for data a
        coupled pipe is still producing); returns its end."""
        start, end = self.last
        if end < until:
            self.free[pipe] = until
            self.last = (start, until)
            return until
        return end

    def cross_set(self, pipe: Pipe) -> float:
        """CrossCoreSetFlag on `pipe`: returns when it fires (the pipe's earlier work done)."""
        self._scalar_step()
        return max(self.scalar, self.free[pipe])

    def cross_wait(self, fired: float) -> float:
        """CrossCoreWaitFlag for a flag that fired at `fired`: every pipe and the scalar unit
        wait for it plus the flag latency; returns when the core resumes."""
        self._scalar_step()
        self.align(fired + self.flag_latency)
        return self.scalar

    def barrier(self, pipe: Pipe | None) -> None:
        """PipeBarrier<pipe>; None means PIPE_ALL, which also holds the scalar unit."""
        self._scalar_step()
        if pipe is None:
            self.scalar = max([self.scalar, *self.free.values()])
        # A single in-order pipe already completes earlier instructions first.

    def align(self, when: float) -> None:
        """After a cross-core barrier: nothing on this core starts before `when`."""
        self.scalar = max(self.scalar, when)
        for pipe in list(self.free):
            self.free[pipe] = max(self.free[pipe], when)

    def unpaired_flags(self) -> list[str]:
        return [f"{s.name}_{d.name} id {i} x{len(q)}" for (s, d, i), q in self._flags.items() if q]

    @property
    def end(self) -> float:
        return max([self.scalar, *self.free.values()])


def _extend(intervals: list, start: float, end: float) -> None:
    if intervals and start <= intervals[-1][1]:
        if end > intervals[-1][1]:
            intervals[-1][1] = end
    else:
        intervals.append([start, end])


def _reserve(busy: list, ready: float, cycles: float) -> float:
    """Take `cycles` of free time from the sorted busy list, from `ready` on; returns the end."""
    last = busy[-1] if busy else None
    if last is None or ready >= last[0]:          # the common case: at or after the last move
        start = ready if last is None or ready > last[1] else last[1]
        end = start + cycles
        if last is not None and start == last[1]:
            last[1] = end
        else:
            busy.append([start, end])
        return end
    i = bisect.bisect_right(busy, [ready, float("inf")]) - 1
    if i < 0 or busy[i][1] <= ready:
        i += 1
    t, left = ready, cycles
    while left > 0:
        if i > 0 and busy[i - 1][1] > t:       # inside someone else's (merged) busy time
            t = busy[i - 1][1]
        if i < len(busy) and busy[i][0] <= t:
            t = max(t, busy[i][1])
            i += 1
            continue
        gap_end = busy[i][0] if i < len(busy) else float("inf")
        take = min(left, gap_end - t)
        end = t + take
        if i > 0 and busy[i - 1][1] >= t:
            busy[i - 1][1] = end
        else:
            busy.insert(i, [t, end])
            i += 1
        if i < len(busy) and busy[i][0] <= end:   # the gap is now closed: join the next one
            busy[i - 1][1] = busy[i][1]
            del busy[i]
        left -= take
        t = end
    return t


def union(a: list, b: list) -> list:
    """The union of two sorted, disjoint interval lists, as one."""
    if not b:
        return a
    if not a:
        return b
    iv = np.fromiter(itertools.chain.from_iterable(a + b), float, 2 * (len(a) + len(b)))
    iv = iv.reshape(-1, 2)
    iv = iv[np.argsort(iv[:, 0], kind="stable")]
    reach = np.maximum.accumulate(iv[:, 1])
    new = np.empty(len(iv), bool)
    new[0] = True
    new[1:] = iv[1:, 0] > reach[:-1]
    starts = np.flatnonzero(new)
    ends = np.append(starts[1:], len(iv)) - 1
    return np.column_stack([iv[starts, 0], reach[ends]]).tolist()


def overlap(a: list, b: list) -> float:
    """Total length of the intersection of two sorted, disjoint interval lists."""
    i = j = 0
    total = 0.0
    while i < len(a) and j < len(b):
        lo = max(a[i][0], b[j][0])
        hi = min(a[i][1], b[j][1])
        if hi > lo:
            total += hi - lo
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return total


def length(intervals: list) -> float:
    return sum(e - s for s, e in intervals)
