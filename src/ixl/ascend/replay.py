"""Replay: a launch whose signature ran before runs again from its traces, without the
kernel's Python.

A traced launch records, per core, the steps its instructions applied once their checks had
passed (core.py): each timed step as (method, *args), each effect on memory as the closure
that applies it to views of the core's memories, a GM move or a GM effect by (argument,
byte offset) instead of an address, and where the core waits for a cross-core flag or meets
the others at a SyncAll (schedule.py). A replay binds the arguments of the new launch, then
runs the same steps through the same methods, the cores interleaved by the same rule as the
kernel's Python is (schedule.Interleaver): modeled times come from the same timeline and the
L2 as it is now, and data from the same effects in the same order, so outputs and times are
those of running the kernel again.

The signature is what the kernel's Python sees: the kernel, its host tiling, the arguments'
names, types, sizes and their addresses modulo the 512-byte burst grid, which arguments are
one tensor, the block count, the kernel type and the mode. A signature is traced the second
time it is launched (a launch that runs once pays nothing) and replayed from the third.

Guards. A kernel's Python that reads a value back from the chip (GetValue: a gather's or a
scatter's indices) may take other steps for other data. Where every effect before such a read
on its core copied GM bytes in (the indices loaded into UB, nothing computed yet) and no core
of the launch writes the arguments those copies read, the value is a guard of the trace: a
replay first makes those copies (they write only what the replay itself writes first) and
reads each value again; when all are as traced the launch replays, else its Python runs and
is traced again (`retraced`), the new trace replacing the old. A read after any other effect,
a GM tensor that is not an argument, or a trace grown too long: not kept. Debug mode, a
timeline record and attached observers trace nothing (every check and observer runs on every
launch there). IXL_REPLAY=0 turns replay off.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field

from .core import EFFECT_STEPS, GM_MOVE, MOVE_ARG, MOVE_WRITE, AICore, CoreId, ValueRead
from .crosscore import FlagBoard
from .gm import GlobalTensor, Segment
from .l2 import CacheMode
from .memo import MemoCore
from .schedule import CROSS_WAIT, SYNC_ALL, Interleaver

# A bound on what the kept traces hold ([U]: memory, not a measured optimum): steps in all.
MAX_STEPS = 4_000_000
MAX_SIGNATURES = 4096      # signatures remembered as seen once or not replayable ([U], likewise)


def replay_enabled() -> bool:
    """IXL_REPLAY=0 runs every launch's Python (the default, 1, replays)."""
    raw = os.environ.get("IXL_REPLAY", "1").strip()
    if raw not in ("0", "1"):
        raise ValueError(f"IXL_REPLAY={raw!r}: use 1 (replay launches traced before, the "
                         f"default) or 0 (run every launch's Python)")
    return raw == "1"


@dataclass
class CoreTrace:
    steps: list
    peaks: dict
    reads: list[ValueRead] = field(default_factory=list)     # its guards


@dataclass
class LaunchTrace:
    """What a launch's cores did, by core id, and what its signature holds alive."""

    cores: dict
    keep: object = None
    steps: int = 0
    memos: list = field(default_factory=list)      # its timing memos, latest used first
    joints: dict = field(default_factory=dict)     # its cores' effects in lockstep (lockstep.py)

    @property
    def guarded(self) -> bool:
        return any(t.reads for t in self.cores.values())

    def guards_hold(self, memories: Callable[[CoreId], dict], bound: list) -> bool:
        """Whether the values the traced launch read back are what this launch's cores read
        (module doc): each guarded core's effects before its last read (copies in and
        self-contained ones) made on its memories (`memories(core id)`), then each value
        compared."""
        for core_id, t in self.cores.items():
            if not t.reads:
                continue
            core = MemoCore(core_id, memories(core_id), bound)
            for step in t.steps[:t.reads[-1].at]:
                if step[0] in EFFECT_STEPS:
                    step[0](core, *step[1:])
            for r in t.reads:
                if core.memories[r.space][r.offset:r.offset + len(r.raw)].tobytes() != r.raw:
                    return False
        return True


@dataclass
class ReplayStats:
    traced: int = 0         # launches traced and kept
    retraced: int = 0       # of those, launches whose trace's guards failed (module doc)
    replayed: int = 0       # launches run from a trace
    memoized: int = 0       # of those, launches whose timing came from a memo (memo.py)
    untraceable: int = 0    # launches traced that could not be kept (why: `reasons`)
    reasons: dict = field(default_factory=dict)

    def count(self, why: str | None, again: bool = False) -> None:
        """A launch was traced (`again`: its earlier trace's guards failed): kept (`why`
        None) or not."""
        if why is None:
            self.traced += 1
            self.retraced += again
        else:
            self.untraceable += 1
            self.reasons[why] = self.reasons.get(why, 0) + 1


class TraceCache:
    """The traces of launches on one set of core memories (memories.py) by signature, least
    recently used out first."""

    def __init__(self) -> None:
        self._traces: OrderedDict = OrderedDict()
        self._refused: OrderedDict = OrderedDict()   # signature -> why it is not replayed
        self._seen: OrderedDict = OrderedDict()      # signatures launched once, not traced
        self._steps = 0
        self._lock = threading.Lock()

    def get(self, key: tuple) -> LaunchTrace | None:
        with self._lock:
            trace = self._traces.get(key)
            if trace is not None:
                self._traces.move_to_end(key)
            return trace

    def refused(self, key: tuple) -> bool:
        return key in self._refused

    def seen_before(self, key: tuple) -> bool:
        """Whether a launch of this signature came before (it is remembered now): only a
        signature that repeats is traced, so a launch that runs once pays nothing for it."""
        with self._lock:
            if key in self._seen:
                del self._seen[key]
                return True
            self._seen[key] = None
            if len(self._seen) > MAX_SIGNATURES:
                self._seen.popitem(last=False)
            return False

    def keep(self, key: tuple, cores: list[AICore], keep: object) -> str | None:
        """File the traces `cores` recorded (in place of the signature's earlier trace, if
        any); or, returned, why they cannot be replayed."""
        why = next((c.untraceable for c in cores if c.untraceable), None) \
            or _guards_written(cores)
        with self._lock:
            old = self._traces.pop(key, None)
            if old is not None:
                self._steps -= old.steps
            if why is not None:
                self._refused[key] = why
                if len(self._refused) > MAX_SIGNATURES:
                    self._refused.popitem(last=False)
                return why
            trace = LaunchTrace({c.core_id: CoreTrace(c.trace or [], dict(c.peaks), c.reads)
                                 for c in cores}, keep)
            trace.steps = sum(len(t.steps) for t in trace.cores.values())
            self._traces[key] = trace
            self._steps += trace.steps
            while self._steps > MAX_STEPS and len(self._traces) > 1:
                _, old = self._traces.popitem(last=False)
                self._steps -= old.steps
        return None



def _guards_written(cores: list[AICore]) -> str | None:
    """Why the launch's guards do not hold (a core writes an argument that a guarded core
    read before a value it read back), or None."""
    read = {step[MOVE_ARG] for c in cores if c.reads and c.trace is not None
            for step in c.trace[:c.reads[-1].at]
            if step[0] == GM_MOVE and not step[MOVE_WRITE]}
    written = {step[MOVE_ARG] for c in cores if c.trace is not None
               for step in c.trace if step[0] == GM_MOVE and step[MOVE_WRITE]}
    if read & written:
        return "get_value reads a value the launch's copies brought from GM it also writes"
    return None


def signature(args: list[tuple[GlobalTensor, object]], grid: int) -> tuple:
    """What the kernel's Python sees of its GM arguments: name, type, size, address modulo
    the burst grid, and which earlier argument (if any) is the same tensor."""
    first: dict = {}
    return tuple((t.name, t.dtype.str, t.count, t.addr % grid, first.setdefault(t.root[0], i),
                  str(role)) for i, (t, role) in enumerate(args))


def bound(args: list[tuple[GlobalTensor, object]]) -> list:
    """The launch's arguments as a replay reads them: each one's (segment, root address)."""
    return [(t.segment, t.root[0]) for t, _ in args]


def bind(cores: list[AICore], args: list[tuple[GlobalTensor, object]]) -> None:
    """Tell each core the launch's arguments: for tracing, by root address; for a replay,
    each one's (segment, root address)."""
    by_root: dict = {}
    for i, (t, _) in enumerate(args):
        by_root.setdefault(t.root[0], i)
    gm_bound = bound(args)
    for c in cores:
        c.gm_args = by_root
        c.gm_bound = gm_bound


class _Window:
    """What L2 needs of a replayed move's GM side (the GlobalTensor's fields it reads)."""

    __slots__ = ("segment", "addr", "l2_mode")

    def __init__(self, segment: Segment, addr: int, l2_mode: CacheMode) -> None:
        self.segment, self.addr, self.l2_mode = segment, addr, l2_mode


class _Cursor:
    """Where a replayed core is in its steps, and what it paused in the middle of."""

    __slots__ = ("steps", "pos", "move", "flag")

    def __init__(self, steps: list) -> None:
        self.steps = steps
        self.pos = 0
        self.move: tuple | None = None     # (step, start) of the move it paused at
        self.flag: int | None = None       # the cross-core flag it waits for


class Replayer(Interleaver):
    """Runs a launch's traces on its cores, interleaved as the kernel's Python would be."""

    def __init__(self, cores: list[AICore], trace: LaunchTrace, board: FlagBoard | None,
                 flag_latency: float, end_phase: Callable[[], None],
                 effects: list | None = None) -> None:
        """`effects`, given, gets each effect on memory as it is applied: (step function,
        the core's run rank, step), what a timing memo applies again (memo.py)."""
        super().__init__(cores, board, flag_latency, [], end_phase)
        self.effects = effects
        self.cursor = {c.core_id: _Cursor(trace.cores[c.core_id].steps) for c in cores}
        for c in cores:
            c.peaks = dict(trace.cores[c.core_id].peaks)

    def run(self) -> None:
        self._start()
        self._finish()

    def _switch(self, core: AICore) -> None:
        nxt: AICore | None = core
        while nxt is not None:
            nxt = self._advance(nxt)

    def _advance(self, core: AICore) -> AICore | None:
        """Apply `core`'s steps until it pauses (None) or hands over (the core to run)."""
        k = self.cursor[core.core_id]
        if k.move is not None:                 # resumed at the move it paused at
            (step, start), k.move = k.move, None
            _transfer(core, step, start)
        elif k.flag is not None:               # resumed once its flag was set
            flag, k.flag = k.flag, None
            self._pass(core, flag)
        steps, i, n = k.steps, k.pos, len(k.steps)
        while i < n:
            step = steps[i]
            i += 1
            op = step[0]
            if op is GM_MOVE:
                start = core.timeline.move_start(step[1])
                nxt = self._handover(core, start + step[-1])
                if nxt is None:
                    _transfer(core, step, start)
                    continue
                k.pos, k.move = i, (step, start)
                return None if nxt is core else nxt
            if op is CROSS_WAIT:
                if not self._pass(core, step[1]):
                    self.blocked[core.core_id] = (core, step[1])
                    k.pos, k.flag = i, step[1]
                    return None
            elif op is SYNC_ALL:
                self.barrier.append(core)
                k.pos = i
                return None
            else:
                op(core, *step[1:])
                if self.effects is not None and op in EFFECT_STEPS:
                    self.effects.append((op, core.run_rank, step))
        k.pos = i
        return None


def _transfer(core: AICore, step: tuple, start: float) -> None:
    (_, pipe, name, arg, offset, l2_mode, count, width, pitch, outer, outer_pitch, write,
     aligned, bursts, latency) = step
    seg, addr = core.gm_bound[arg]
    core.transfer(pipe, name, _Window(seg, addr + offset, l2_mode), 0, count, width, pitch,
                  outer, outer_pitch, write, aligned, bursts, latency, start)
