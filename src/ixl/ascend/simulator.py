"""The simulated chip: global memory plus AI Cores that run kernel blocks and time them.

This is the backend the runtime talks to: map and unmap GM, read and write it, launch a kernel
over blocks. Kernel time = launch overhead + the slowest core. Each core's Unified Buffer
persists from launch to launch, as on the chip. Observers (observe.py) hear every instruction
of every launch: the ones a user attaches, a timeline recorder when a launch asks for a record,
and the debug checks (sanitizer/) in debug mode.
"""

from __future__ import annotations

import os
import random
import threading
import zlib
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Callable, Iterable

import numpy as np

from .chips import ChipSpec
from .core import AICore, Mode
from .errors import IllegalInstruction, KernelTimeout
from .costs import cost_table
from .gm import GlobalMemory, GlobalTensor
from .observe import GmArg, GmRole, LaunchInfo, Observer
from .record import TimelineRecorder
from .sanitizer import debug_checks
from .timeline import Pipe, PipeStats

CHIP_MODEL_VERSION = "0.1.0"


def host_threads() -> int:
    """Host threads that simulate cores: IXL_THREADS, default 1. Cores are independent, but a
    kernel issues many small numpy calls, and two threads contending for the GIL measured
    slower than one (Add 16M fp16: 2.25x vs 2.0x numpy; Gelu 4096^2: 1.47 s vs 0.85 s)."""
    return max(1, int(os.environ.get("IXL_THREADS", "1")))


CORE_ORDERS = ("shuffle", "reverse", "natural")


def core_order(kernel: str, n_cores: int, debug: bool) -> list[int]:
    """The order the cores run in on the host: IXL_CORE_ORDER (shuffle, reverse or natural);
    by default shuffled in debug mode, seeded by the kernel's name and core count (so a result
    that depends on which core runs first shows, and shows again on the next run), natural in
    release mode. Modeled times never depend on it."""
    raw = os.environ.get("IXL_CORE_ORDER", "")
    order = raw.strip().lower() or ("shuffle" if debug else "natural")
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
    vector_busy: list = field(default_factory=list)
    port_busy: list = field(default_factory=list)


@dataclass
class LaunchRecord:
    kernel: str
    block_num: int
    clock_mhz: int
    launch_us: float
    cores: list[CoreReport]
    chip: ChipSpec

    @property
    def core_us(self) -> float:
        slowest = max((c.cycles for c in self.cores), default=0.0)
        return slowest / self.clock_mhz

    @property
    def time_us(self) -> float:
        return self.launch_us + self.core_us


class SimulatedChip:
    def __init__(self, chip: ChipSpec):
        self.chip = chip
        self.gm = GlobalMemory()
        self.version = CHIP_MODEL_VERSION
        self.observers: list[Observer] = []
        self._ubs: dict[int, np.ndarray] = {}     # core id -> its UB, kept across launches
        self._lock = threading.Lock()             # one launch at a time owns the cores

    def attach(self, observer: Observer) -> None:
        """Let `observer` hear every instruction and sync edge of every later launch."""
        self.observers.append(observer)

    def detach(self, observer: Observer) -> None:
        self.observers.remove(observer)

    def _ub(self, core_id: int) -> np.ndarray:
        ub = self._ubs.get(core_id)
        if ub is None:
            ub = self._ubs[core_id] = np.zeros(self.chip.ub_bytes, np.uint8)
        return ub

    def launch(self, name: str, body: Callable[[AICore], None], block_num: int, mode: Mode,
               args: Iterable[tuple[GlobalTensor, GmRole]] = ()) -> LaunchRecord:
        """Run `body` once per block; block i runs on core i mod the core count. `args` names
        the role of each GM tensor the kernel takes (what the debug checks know of them).

        A body that is a generator meets the other cores at each `yield sync_all()` (SyncAll):
        every core runs up to the barrier, then all resume from the slowest one's time."""
        with self._lock:
            return self._launch(name, body, block_num, mode, args)

    def _launch(self, name, body, block_num, mode, args) -> LaunchRecord:
        n_cores = min(block_num, self.chip.aiv_cores)
        costs = cost_table(self.chip.arch)
        recorder = TimelineRecorder() if mode.record else None
        observers = [*self.observers, *([recorder] if recorder else []),
                     *(debug_checks() if mode.debug else [])]
        cores = [AICore(self.chip, i, mode, active_cores=n_cores, ub=self._ub(i),
                        observers=tuple(observers))
                 for i in core_order(name, n_cores, mode.debug)]
        info = LaunchInfo(name, block_num, [c.core_id for c in cores], self.chip, mode.debug,
                          {t.root[0]: GmArg(t.name, t.root[0], t.root[1], role)
                           for t, role in args})
        for o in observers:
            o.launch_begin(info)
        blocks = {c.core_id: list(range(c.core_id, block_num, n_cores)) for c in cores}
        phases = {}                      # core id -> a paused generator (between barriers)

        def run_core(core: AICore) -> None:
            with np.errstate(all="ignore"):     # the chip gives inf and NaN silently
                run_blocks(core)

        def step(core: AICore, gen) -> None:
            """Run a paused block up to its next barrier, or to its end."""
            core.resume()
            try:
                next(gen)
            except StopIteration:
                phases.pop(core.core_id, None)
                core.end_block()
                return
            except BaseException:
                core.end_block(check=False)
                raise
            phases[core.core_id] = gen
            core.pause()

        def run_blocks(core: AICore) -> None:
            for b in blocks[core.core_id]:
                core.begin_block(b, block_num)
                try:
                    result = body(core)
                except BaseException:
                    core.end_block(check=False)
                    raise
                if result is None:
                    core.end_block()
                elif block_num > n_cores:
                    core.end_block(check=False)
                    raise IllegalInstruction(
                        f"SyncAll needs every block resident at once: {block_num} blocks on "
                        f"{n_cores} cores")
                else:
                    step(core, result)

        # Cores only meet at the launch's end (or a SyncAll), so they may run on host threads;
        # the modeled time does not depend on how the host ran them.
        workers = min(host_threads(), n_cores)
        if workers > 1:
            with ThreadPoolExecutor(workers) as pool:
                futures = [pool.submit(run_core, c) for c in cores]
            for f in futures:          # the first failing core in run order reports
                f.result()
        else:
            for c in cores:
                run_core(c)
        phase = 0
        while phases:                  # SyncAll: everyone waits for the slowest core
            if len(phases) != len(cores):
                raise KernelTimeout(
                    f"vector core execution timed out: {len(phases)} of {len(cores)} cores "
                    f"wait at a SyncAll the others never reach")
            for o in observers:
                o.phase_end(phase)
            phase += 1
            meet = max(c.timeline.end for c in cores) + costs.flag_latency_cycles
            for c in cores:
                c.meet(meet)
            with np.errstate(all="ignore"):
                for c in cores:
                    step(c, phases[c.core_id])
        for o in observers:
            o.phase_end(phase)
        reports = [CoreReport(c.core_id, blocks[c.core_id], c.timeline.end, c.timeline.pipe_stats(),
                              c.ub_peak, recorder.slices[c.core_id] if recorder else [],
                              recorder.edges[c.core_id] if recorder else [],
                              c.timeline.vector_busy, c.timeline.port_busy)
                   for c in sorted(cores, key=lambda c: c.core_id)]
        record = LaunchRecord(name, block_num, self.chip.clock_mhz, costs.launch_us(n_cores),
                              reports, self.chip)
        for o in observers:
            o.launch_end(record)
        return record
