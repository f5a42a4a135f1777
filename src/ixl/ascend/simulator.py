"""The simulated chip: global memory plus AI Cores that run kernel blocks and time them.

This is the backend the runtime talks to: map and unmap GM, read and write it, make the GM
windows a kernel takes, launch a kernel over blocks (on vector cores, Cube cores, or both:
schedule.py). Kernel time = launch overhead + the slowest core. Each core's memories (UB; L1,
L0A, L0B, L0C, ...) persist from launch to launch, as on the chip. Observers (observe.py) hear
every instruction of every launch: the ones a user attaches, a timeline recorder when a launch
asks for a record, and the debug checks (sanitizer/) in debug mode.
"""

from __future__ import annotations

import os
import random
import threading
import weakref
import zlib
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial

import numpy as np
from numpy.typing import DTypeLike

from . import memo as memos
from . import memories, replay
from .chips import ChipSpec
from .core import AICore, CoreKind, Mode, as_core_id
from .costs import cost_table
from .crosscore import FlagBoard
from .errors import KernelTimeout
from .gm import GlobalMemory, GlobalTensor
from .host_blas import one_blas_thread
from .host_gc import collector_paused
from .l2 import L2Stats, l2_cache
from .observe import GmArg, GmRole, LaunchInfo, Observer, Space
from .record import TimelineRecorder
from .replay import LaunchTrace, Replayer, ReplayStats, replay_enabled
from .sanitizer import debug_checks
from .schedule import KernelType, Runner, launch_cores, place
from .timeline import Pipe, PipeStats

CHIP_MODEL_VERSION = "0.3.1"


CORE_ORDERS = ("shuffle", "reverse", "natural")


def core_order(kernel: str, n_cores: int) -> list[int]:
    """The cores' run order, which breaks ties between moves that start on the same cycle
    (schedule.Runner): IXL_CORE_ORDER natural (the default), reverse, or shuffle (seeded by the
    kernel's name and core count, so it is the same on the next run). A kernel whose result
    changes with it has a race between cores; its modeled time may move by the order in which
    cores that meet on a line at the same cycle find it in L2."""
    raw = os.environ.get("IXL_CORE_ORDER", "")
    order = raw.strip().lower() or "natural"
    if order not in CORE_ORDERS:
        raise ValueError(f"IXL_CORE_ORDER={raw!r} is not a core order: use one of "
                         f"{', '.join(CORE_ORDERS)}")
    cores = list(range(n_cores))
    if order == "reverse":
        cores.reverse()
    elif order == "shuffle":
        random.Random(zlib.crc32(f"{kernel}/{n_cores}".encode())).shuffle(cores)
    return cores


@dataclass
class CoreReport:
    core_id: int
    blocks: list[int]
    cycles: float
    pipes: dict[Pipe, PipeStats]
    ub_peak: int
    slices: list = field(default_factory=list)
    edges: list = field(default_factory=list)
    compute_busy: list = field(default_factory=list)    # V (vector core) or M (Cube core)
    port_busy: list = field(default_factory=list)      # moves holding its port or HBM share
    peaks: dict = field(default_factory=dict)           # Space -> bytes its TPipes took
    l2: L2Stats = field(default_factory=L2Stats)        # what its GM moves did in L2
    bank_conflicts: tuple = (0, 0)      # vector cycles lost to UB bank-group / bank conflicts

    @property
    def kind(self) -> CoreKind:
        return as_core_id(self.core_id).kind


@dataclass
class LaunchRecord:
    kernel: str
    block_num: int
    clock_mhz: int
    launch_us: float
    cores: list[CoreReport]
    chip: ChipSpec
    kind: KernelType = KernelType.VECTOR
    cross_edges: list = field(default_factory=list)     # recorded cross-core flags (CrossEdge)
    # replay.py: "traced" (kept to replay), "retraced" (traced again: its trace's guards did
    # not hold), "replayed", "untraceable" (traced, not kept: it read data back after
    # computing), or "none" (not traced: the first launch of its signature, debug mode, a
    # record or observers, IXL_REPLAY=0)
    replay: str = "none"
    timing: str = "timed"     # "memo": a replay whose timing came from a timing memo (memo.py)

    def of(self, kind: CoreKind) -> list[CoreReport]:
        """The cores of one kind (a mix launch has both)."""
        return [c for c in self.cores if c.kind is kind]

    @property
    def core_us(self) -> float:
        slowest = max((c.cycles for c in self.cores), default=0.0)
        return slowest / self.clock_mhz

    @property
    def time_us(self) -> float:
        return self.launch_us + self.core_us


class SimulatedChip:
    """The backend the runtime talks to (nixl.backend.Backend): GM, the cores, launches."""

    def __init__(self, chip: ChipSpec) -> None:
        self.chip = chip
        self.gm = GlobalMemory()
        self.version = CHIP_MODEL_VERSION
        self.observers: list[Observer] = []
        # the cores' memories, kept across launches, and the traces of launches on them
        self.memories = memories.take(chip)
        self._release = weakref.finalize(self, memories.give_back, self.memories)
        self.traces = self.memories.traces
        self.replay_stats = ReplayStats()          # this chip's launches (replay.py)
        self.l2 = l2_cache(chip)                  # kept across launches, as on the chip
        self._lock = threading.Lock()             # one launch at a time owns the cores

    # ---- memory ----
    def map(self, addr: int, nbytes: int) -> None:
        self.gm.map(addr, nbytes)

    def unmap(self, addr: int) -> None:
        seg = self.gm.segment_at(addr)
        self.gm.unmap(addr)
        assert seg is not None                      # gm.unmap checked addr is mapped
        self.l2.drop(seg)

    def read(self, addr: int, nbytes: int) -> np.ndarray:
        """A copy of GM [addr, addr + nbytes)."""
        return self.gm.bytes(addr, nbytes).copy()

    def write(self, addr: int, data: np.ndarray) -> None:
        """Bytes (or any array, as its bytes) into GM at `addr`."""
        raw = np.ascontiguousarray(data).reshape(-1).view(np.uint8)
        self.gm.bytes(addr, raw.nbytes)[:] = raw
        seg = self.gm.segment_at(addr)
        assert seg is not None                      # gm.bytes checked addr is mapped
        self.l2.invalidate(seg, addr - seg.addr, raw.nbytes)

    def flush_l2(self) -> None:
        """A cold L2 for the next launch (l2.py: L2Cache.flush)."""
        self.l2.flush()

    def mapped(self, addr: int) -> bool:
        return self.gm.segment_at(addr) is not None

    def window(self, addr: int, dtype: DTypeLike, count: int, name: str) -> GlobalTensor:
        """A kernel argument: a typed window of GM, checked on every access."""
        return GlobalTensor(self.gm, addr, dtype, count, name)

    def host_copy_us(self, nbytes: int) -> float:
        """One synchronous copy between host and device memory (the shim's round trips)."""
        return cost_table(self.chip.arch).host_copy_us(nbytes)

    # ---- observers ----
    def attach(self, observer: Observer) -> None:
        """Let `observer` hear every instruction and sync edge of every later launch."""
        self.observers.append(observer)

    def detach(self, observer: Observer) -> None:
        self.observers.remove(observer)

    def _end_phase(self, cores: list[AICore], draft: memos.MemoDraft | None = None) -> None:
        """A phase of the launch is over (a SyncAll, or the end): every core's moves enter L2
        (l2.py), and the next phase starts from the L2 they leave. `draft`: the timing memo
        the launch makes (memo.py), which reads L2 as the phase found it."""
        views = [c.l2 for c in cores]
        if draft is not None:
            draft.phase_end(self.l2, views)
        entered = self.l2.merge(views)
        if draft is not None:
            draft.entered(entered)
        phase = self.l2.phase(len(cores))
        for c in cores:
            c.l2_stats.add(c.l2.stats)
            c.l2 = phase.view(c.core_id)

    @contextmanager
    def host_settings(self) -> Iterator[None]:
        """What each launch holds (the host's BLAS on one thread, the garbage collector
        paused), held across the launches inside: setting and restoring them once a launch
        cost about 1 ms, a tenth of a decode step's host time."""
        with one_blas_thread(), collector_paused():
            yield

    def close(self) -> None:
        """The device is done: its memories (and their traces) go to the next one."""
        self._release()

    # ---- launch ----
    def launch(self, name: str, body: Callable[[AICore], None], block_num: int, mode: Mode,
               args: Iterable[tuple[GlobalTensor, GmRole]] = (),
               kind: KernelType = KernelType.VECTOR, signature: tuple | None = None
               ) -> LaunchRecord:
        """Run `body` once per block on the cores `kind` places them on (schedule.place).
        `args` names the role of each GM tensor the kernel takes (what the debug checks know
        of them, and what a replay binds anew).

        A body that is a generator meets the other cores at each `yield sync_all()` (SyncAll),
        and waits for another core's flag at each `yield cross_core_wait_flag(id)`.

        `signature`: everything the body's Python depends on beyond its GM arguments (the
        kernel, its tiling, held alive by the trace; replay.py): given, the launch is traced,
        and run from its trace when the same signature came before."""
        with self._lock, one_blas_thread(), collector_paused():
            return self._launch(name, body, block_num, mode, list(args), kind, signature)

    def _launch(self, name, body, block_num, mode, args, kind, signature) -> LaunchRecord:
        slots = place(kind, self.chip, block_num)
        costs = cost_table(self.chip.arch)
        recorder = TimelineRecorder() if mode.record else None
        observers = [*self.observers, *([recorder] if recorder else []),
                     *(debug_checks() if mode.debug else [])]
        by_id = {s.core_id: s for s in slots}
        order = [slots[i].core_id for i in core_order(name, len(slots))]
        key = trace = None
        replayed = "none"
        if signature is not None and not observers and replay_enabled():
            key = (signature, name, block_num, kind, mode, tuple(order),
                   replay.signature(args, costs.burst_align_bytes))
            trace = self.traces.get(key)
            bound = replay.bound(args)
            if trace is not None and trace.guarded and not trace.guards_hold(
                    self.memories.of, bound):
                trace, replayed = None, "retraced"      # its Python runs, traced again
            elif trace is None and self.traces.refused(key):
                key, replayed = None, "untraceable"
            elif trace is None and not self.traces.seen_before(key):
                key = None
        record_of = partial(self._record, name, block_num, kind, slots, costs, by_id)
        if trace is not None:
            timing = self._from_memo(trace, order, bound)
            if timing is not None:
                return record_of([(cid, timing[cid].copy(), trace.cores[cid].peaks, [], [])
                                  for cid in sorted(order)], [], "replayed", "memo")
        phase = self.l2.phase(len(slots))
        cores = [AICore(self.chip, cid, mode, active_cores=len(slots),
                        memories=self.memories.of(cid), observers=tuple(observers),
                        l2=phase.view(cid))
                 for cid in order]
        board = FlagBoard(self.chip, {s.core_id: s.group for s in slots}) \
            if kind is KernelType.MIX else None
        for c in cores:
            c.cross_core = board
        info = LaunchInfo(name, block_num, [c.core_id for c in cores], self.chip, mode.debug,
                          {t.root[0]: GmArg(t.name, t.root[0], t.root[1], role)
                           for t, role in args}, kind.value)
        for o in observers:
            o.launch_begin(info)
        if key is not None:
            replay.bind(cores, args)
        if trace is not None:
            self._replay(trace, cores, board, costs.flag_latency_cycles)
            replayed = "replayed"
        else:
            for c in cores if key is not None else ():
                c.trace = []
            Runner(cores, by_id, block_num, board, costs.flag_latency_cycles, observers,
                   lambda: self._end_phase(cores)).run(body)
            if key is not None:
                why = self.traces.keep(key, cores, signature)
                if why is not None:
                    replayed = "untraceable"
                elif replayed != "retraced":
                    replayed = "traced"
                self.replay_stats.count(why, replayed == "retraced")
        left = board.unwaited() if board is not None and mode.debug else []
        if left:
            raise KernelTimeout(f"AI Core execution timed out: the launch ended with "
                                f"cross-core flags set and never waited: {', '.join(left)}")
        record = record_of(
            [(c.core_id, memos.CoreTiming.of(c), c.peaks,
              recorder.slices[c.core_id] if recorder else [],
              recorder.edges[c.core_id] if recorder else [])
             for c in sorted(cores, key=lambda c: c.core_id)],
            recorder.cross if recorder else [], replayed, "timed")
        for o in observers:
            o.launch_end(record)
        return record

    def _record(self, name, block_num, kind, slots, costs, by_id, cores: list, cross: list,
                how: str, timing: str) -> LaunchRecord:
        """The launch's record from each core's (id, CoreTiming, peaks, recorded slices and
        edges), in core order."""
        reports = [CoreReport(cid, by_id[cid].blocks, t.end, t.pipes, peaks.get(Space.UB, 0),
                              slices, edges, t.compute_busy, t.moving, dict(peaks), t.l2,
                              t.bank_conflicts)
                   for cid, t, peaks, slices, edges in cores]
        return LaunchRecord(name, block_num, self.chip.clock_mhz,
                            costs.launch_us(launch_cores(kind, self.chip, slots)), reports,
                            self.chip, kind, cross, how, timing)

    def _from_memo(self, trace: LaunchTrace, order: list, bound: list) -> dict | None:
        """A replay from a timing memo where L2 is as one found it (memo.py): its effects on
        the cores' memories, with no AICore made, and the memo's timing by core id; None
        when no memo holds."""
        with np.errstate(all="ignore"):     # the chip gives inf and NaN silently
            memo = memos.take(trace, bound, self.l2)
            if memo is None:
                return None
            memos.apply(memo, [memos.MemoCore(cid, self.memories.of(cid), bound)
                               for cid in order], trace)
        self.replay_stats.replayed += 1
        self.replay_stats.memoized += 1
        return memo.timing

    def _replay(self, trace: LaunchTrace, cores: list[AICore], board: FlagBoard | None,
                flag_latency: float) -> None:
        """Run a launch from its trace, timed step by step; the timing is kept as a memo
        (memo.py) for launches that start from an L2 like this one's."""
        self.replay_stats.replayed += 1
        with np.errstate(all="ignore"):     # the chip gives inf and NaN silently
            draft = memos.MemoDraft(cores, self.l2.line)
            Replayer(cores, trace, board, flag_latency, lambda: self._end_phase(cores, draft),
                     draft.effects).run()
        draft.finish(trace, cores)
