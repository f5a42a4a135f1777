"""The simulated chip: global memory plus AI Cores that run kernel blocks and time them.

This is the backend the runtime talks to: map and unmap GM, read and write it, launch a kernel
over blocks. Kernel time = launch overhead + the slowest core.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from .chips import ChipSpec
from .core import AICore, Mode
from .costs import cost_table
from .gm import GlobalMemory
from .timeline import Pipe, PipeStats

CHIP_MODEL_VERSION = "0.1.0"


@dataclass
class CoreReport:
    core_id: int
    blocks: list[int]
    cycles: float
    pipes: dict[Pipe, PipeStats]
    ub_peak: int
    slices: list = field(default_factory=list)
    edges: list = field(default_factory=list)


@dataclass
class LaunchRecord:
    kernel: str
    block_num: int
    clock_mhz: int
    launch_us: float
    cores: list[CoreReport]

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
        """Run `body` once per block; block i runs on core i mod the core count."""
        n_cores = min(block_num, self.chip.aiv_cores)
        cores = [AICore(self.chip, i, mode, active_cores=n_cores) for i in range(n_cores)]
        blocks: dict[int, list[int]] = {i: [] for i in range(n_cores)}
        for b in range(block_num):
            core = cores[b % n_cores]
            blocks[core.core_id].append(b)
            core.begin_block(b, block_num)
            try:
                body(core)
            except BaseException:
                core.end_block(check=False)
                raise
            core.end_block()
        reports = [CoreReport(c.core_id, blocks[c.core_id], c.timeline.end, dict(c.timeline.stats),
                              c.ub_peak, c.timeline.slices, c.timeline.edges) for c in cores]
        launch_us = cost_table(self.chip.arch).launch_us(n_cores)
        return LaunchRecord(name, block_num, self.chip.clock_mhz, launch_us, reports)
