"""Calibration: the vendor's measured 910B1 workloads, rerun on the model.

Measurements (Atlas A2 / 910B1, 48 AIV at 1850 MHz) from the vendor's best-practice examples
[EX-ADD] and [EX-COPY]. Each workload is a kernel written the way its variant is described;
the cost table (`ascend/costs/dav-c220.json`) is fitted to these points with
`benchmarks/fit_costs.py`, and no workload is special-cased.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from .ascend import AICore, ChipSpec, LaunchRecord, Mode, SimulatedChip, get_chip
from .ascend import lang as asc
from .ascend.gm import GlobalMemory, GlobalTensor
from .hixl import BadInput
from .nixl import REGISTRY, KernelContext, TensorDesc
from .nixl.tuning import TuningConfig

MEASURED_CHIP = "910B1"    # the chip every measurement below was made on

F16 = np.dtype(np.float16)
ADD_SIDE = 8192            # Add: 8192 x 8192 float16, out = a + b (402.7 MB moved)
COPY_SIDE = 12288          # copy: 12288 x 12288 float16 read GM -> UB with DataCopyPad
COPY_ROWS_PER_TILE = 64
SEGMENT_BASE = 0x10_0000_0000


@dataclass
class Workload:
    name: str
    measured_us: float
    block_num: int
    body: Callable[[AICore], None]     # runs one block on a core
    chip: ChipSpec
    gm: object

    def run(self) -> LaunchRecord:
        sim = SimulatedChip(self.chip)
        sim.gm = self.gm
        return sim.launch(self.name, self.body, self.block_num, Mode(timing_only=True))


def _map(gm, index: int, nbytes: int, name: str, count: int) -> GlobalTensor:
    addr = SEGMENT_BASE + index * (1 << 32)
    gm.map(addr, nbytes)
    return GlobalTensor(gm, addr, F16, count, name)


def add_workload(chip: ChipSpec, name: str, measured_us: float, *, cores: int,
                 chunk_bytes: int, buffer_num: int) -> Workload:
    """The native Add kernel with the variant's core count, chunk per copy and buffering."""
    gm = GlobalMemory()
    n = ADD_SIDE * ADD_SIDE
    tensors = [_map(gm, i, n * 2, nm, n) for i, nm in enumerate(("a", "b", "y"))]
    entry = REGISTRY.native("Add")
    desc = TensorDesc.nd((ADD_SIDE, ADD_SIDE), "float16")
    plan = entry.tiling([desc, desc], [desc], {}, chip,
                        TuningConfig(block_dim=cores, tile=chunk_bytes // 2, buffer_num=buffer_num))

    def body(core: AICore) -> None:
        ctx = KernelContext(core.block_idx, core.block_num, plan.tiling, chip)
        entry.kernel(ctx, *tensors)

    return Workload(name, measured_us, plan.block_dim, body, chip, gm)


def copy_workload(chip: ChipSpec, name: str, measured_us: float, *, block_bytes: int,
                  blocks_per_copy: int) -> Workload:
    """GM -> UB reads with DataCopyPad: each core reads its rows in tiles of 64 rows x
    `block_bytes`, either one DataCopyPad per row block or one per `blocks_per_copy` rows."""
    gm = GlobalMemory()
    n = COPY_SIDE * COPY_SIDE
    src = _map(gm, 0, n * 2, "src", n)
    cores = chip.aiv_cores
    rows_per_core = COPY_SIDE // cores
    row_bytes = COPY_SIDE * 2
    width = block_bytes // 2

    tile_bytes = COPY_ROWS_PER_TILE * block_bytes
    slots = min(2, chip.ub_bytes // tile_bytes)     # double buffer when two tiles fit

    def body(core: AICore) -> None:
        pipe = asc.TPipe()
        q = asc.TQue(asc.TPosition.VECIN)
        pipe.init_buffer(q, slots, tile_bytes)
        first = core.block_idx * rows_per_core
        for r0 in range(first, first + rows_per_core, COPY_ROWS_PER_TILE):
            for c0 in range(0, COPY_SIDE, width):
                x = q.alloc_tensor(F16)
                for r in range(0, COPY_ROWS_PER_TILE, blocks_per_copy):
                    asc.data_copy_pad(
                        x[r * width], src[(r0 + r) * COPY_SIDE + c0],
                        asc.DataCopyExtParams(blocks_per_copy, block_bytes,
                                              row_bytes - block_bytes, 0))
                q.enque(x)
                q.free_tensor(q.deque())

    return Workload(name, measured_us, cores, body, chip, gm)


def workloads(chip_name: str = "910B1") -> list[Workload]:
    chip = get_chip(chip_name)
    kb = 1024
    return [
        add_workload(chip, "add 1 core", 6909.6, cores=1, chunk_bytes=8 * kb, buffer_num=1),
        add_workload(chip, "add 48 cores, 8 KB chunks", 306.6, cores=48, chunk_bytes=8 * kb,
                     buffer_num=1),
        add_workload(chip, "add 48 cores, 32 KB chunks", 268.5, cores=48, chunk_bytes=32 * kb,
                     buffer_num=1),
        add_workload(chip, "add 48 cores, 32 KB chunks, double buffer", 264.0, cores=48,
                     chunk_bytes=32 * kb, buffer_num=2),
        copy_workload(chip, "copy 128 B blocks", 564.8, block_bytes=128, blocks_per_copy=1),
        copy_workload(chip, "copy 64 x 128 B", 233.5, block_bytes=128, blocks_per_copy=64),
        copy_workload(chip, "copy 64 x 2 KB", 215.8, block_bytes=2048, blocks_per_copy=64),
    ]


@dataclass(frozen=True)
class CalibrationPoint:
    name: str
    modeled_us: float
    measured_us: float

    @property
    def ratio(self) -> float:
        return self.modeled_us / self.measured_us

    def to_json(self) -> dict:
        return {"name": self.name, "modeled_us": round(self.modeled_us, 2),
                "measured_us": self.measured_us, "ratio": round(self.ratio, 4)}


def calibrate(chip_name: str = MEASURED_CHIP, progress=None) -> list[CalibrationPoint]:
    """The workloads modeled on `chip_name` beside their measurements, which exist for the
    measured chip only: another chip's model set against them would say nothing."""
    get_chip(chip_name)
    if chip_name != MEASURED_CHIP:
        raise BadInput(f"calibrate: there are no measurements for {chip_name}; the workloads "
                       f"were measured on a {MEASURED_CHIP} (ixl calibrate --chip "
                       f"{MEASURED_CHIP})")
    points = []
    todo = workloads(chip_name)
    for i, w in enumerate(todo):
        if progress:
            progress(i, len(todo), w.name)
        points.append(CalibrationPoint(w.name, w.run().time_us, w.measured_us))
    return points
