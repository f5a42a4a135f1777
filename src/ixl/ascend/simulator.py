"""The simulated chip: global memory plus AI Cores that run kernel blocks and time them.

This is the backend the runtime talks to: map and unmap GM, read and write it, launch a kernel
over blocks. Kernel time = launch overhead + the slowest core.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from .chips import ChipSpec
from .core import AICore, Mode
from .errors import IllegalInstruction, KernelTimeout
from .costs import cost_table
from .gm import GlobalMemory
from .timeline import Pipe, PipeStats

CHIP_MODEL_VERSION = "0.1.0"


def host_threads() -> int:
    """Host threads that simulate cores: IXL_THREADS, default 1. Cores are independent, but a
    kernel issues many small numpy calls, and two threads contending for the GIL measured
    slower than one (Add 16M fp16: 2.25x vs 2.0x numpy; Gelu 4096^2: 1.47 s vs 0.85 s)."""
    return max(1, int(os.environ.get("IXL_THREADS", "1")))


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

    def launch(self, name: str, body: Callable[[AICore], None], block_num: int,
               mode: Mode) -> LaunchRecord:
        """Run `body` once per block; block i runs on core i mod the core count.

        A body that is a generator meets the other cores at each `yield sync_all()` (SyncAll):
        every core runs up to the barrier, then all resume from the slowest one's time."""
        n_cores = min(block_num, self.chip.aiv_cores)
        cores = [AICore(self.chip, i, mode, active_cores=n_cores) for i in range(n_cores)]
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
            for f in futures:          # the lowest failing core reports, as it would first
                f.result()
        else:
            for c in cores:
                run_core(c)
        while phases:                  # SyncAll: everyone waits for the slowest core
            if len(phases) != len(cores):
                raise KernelTimeout(
                    f"vector core execution timed out: {len(phases)} of {len(cores)} cores "
                    f"wait at a SyncAll the others never reach")
            meet = max(c.timeline.end for c in cores) + cost_table(self.chip.arch).flag_latency_cycles
            for c in cores:
                c.timeline.align(meet)
            with np.errstate(all="ignore"):
                for c in cores:
                    step(c, phases[c.core_id])
        reports = [CoreReport(c.core_id, blocks[c.core_id], c.timeline.end, c.timeline.pipe_stats(),
                              c.ub_peak, c.timeline.slices, c.timeline.edges,
                              c.timeline.vector_busy, c.timeline.port_busy) for c in cores]
        launch_us = cost_table(self.chip.arch).launch_us(n_cores)
        return LaunchRecord(name, block_num, self.chip.clock_mhz, launch_us, reports, self.chip)
