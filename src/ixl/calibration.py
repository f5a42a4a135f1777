"""Calibration: the vendor's measured 910B1 workloads, rerun on the model.

Measurements (Atlas A2 / 910B1, 48 AIV at 1850 MHz) from the vendor's best-practice examples
[EX-ADD] and [EX-COPY]. Each workload is a kernel written the way its variant is described and
runs on a timing-only device, like any kernel: the native Add with the variant's configuration,
or the copy kernel below as a kernel entry of its own. The cost table
(`ascend/costs/dav-c220.json`) is fitted to these points with `benchmarks/fit_costs.py`, and no
workload is special-cased.

Each workload runs twice on its tensors and the second launch is the one set against the
measurement: a profiled kernel has run before [U: the examples do not say how many times they
ran], so L2 holds what the first run left (the working sets here are larger than L2, so
nothing is read from it, but the first run's dirty lines are written back during the second,
as in any steady stream of launches).

The vendor also gives the vector time inside the Add kernel, 6.95 us a core "with no bank
conflicts": the measured kernel's vector work met no conflicts, so the Add workloads place
their queues apart where UB has room (the template's bank gaps); the double-buffered 32 KB
variant fills UB with its six 32 KB buffers and keeps them back to back. That vector time is a
point of its own, read off the single-buffered 32 KB launch (the same 86 Adds a core).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .ascend import LaunchRecord, get_chip
from .ascend import lang as asc
from .ascend.chips import ChipSpec
from .ascend.costs import cost_table
from .ascend.pipe import Pipe
from .hixl import BadInput
from .nixl import REGISTRY, RUNTIME_VERSION, Device, KernelContext, KernelEntry, LaunchPlan
from .nixl.tuning import TuningConfig

MEASURED_CHIP = "910B1"    # the chip every measurement below was made on

ADD_SIDE = 8192            # Add: 8192 x 8192 float16, out = a + b (402.7 MB moved)
COPY_SIDE = 12288          # copy: 12288 x 12288 float16 read GM -> UB with DataCopyPad
COPY_ROWS_PER_TILE = 64


@dataclass(frozen=True)
class Workload:
    """A measured variant as a kernel: its entry, its tensors (inputs, outputs: shape and
    dtype) and its configuration."""

    name: str
    measured_us: float
    entry: KernelEntry
    inputs: tuple
    outputs: tuple
    config: TuningConfig
    vector_us: float | None = None      # the measured vector time per core, where published

    def measurements(self) -> list[tuple[str, float]]:
        """(point name, measured us): the launch, then the vector time per core where
        published."""
        points = [(self.name, self.measured_us)]
        if self.vector_us is not None:
            points.append((f"{self.name}: vector time per core", self.vector_us))
        return points

    def run(self, dev: Device) -> LaunchRecord:
        """The workload's second launch on `dev` (a timing-only device: no data is touched),
        after a first that warms L2 as a stream of launches does."""
        ins = [dev.empty(shape, dtype, "in") for shape, dtype in self.inputs]
        outs = [dev.empty(shape, dtype, "out") for shape, dtype in self.outputs]
        try:
            dev.launch(self.entry, ins, outs, config=self.config)
            record = dev.launch(self.entry, ins, outs, config=self.config).launch
            assert record is not None       # a native launch keeps its launch record
            return record
        finally:
            for t in (*ins, *outs):
                t.free()


def add_workload(name: str, measured_us: float, *, cores: int, chunk_bytes: int,
                 buffer_num: int, vector_us: float | None = None) -> Workload:
    """The native Add kernel with the variant's core count, chunk per copy and buffering, its
    queues placed apart where UB has room: the measured kernel's vector time is one with no
    bank conflicts (module docstring)."""
    side = ((ADD_SIDE, ADD_SIDE), "float16")
    entry = REGISTRY.native("Add")
    assert entry is not None        # Add is one of the library's native kernels
    return Workload(name, measured_us, entry, (side, side), (side,),
                    TuningConfig(block_dim=cores, tile=chunk_bytes // 2, buffer_num=buffer_num),
                    vector_us)


@dataclass(frozen=True)
class CopyTiling:
    rows_per_core: int
    block_bytes: int          # bytes per row block
    blocks_per_copy: int      # row blocks per DataCopyPad
    slots: int


def copy_kernel(ctx: KernelContext, src: asc.GlobalTensor) -> None:
    """GM -> UB reads with DataCopyPad: each core reads its rows in tiles of 64 rows x
    `block_bytes`, either one DataCopyPad per row block or one per `blocks_per_copy` rows."""
    t: CopyTiling = ctx.tiling
    row_bytes = COPY_SIDE * 2
    width = t.block_bytes // 2
    pipe = asc.TPipe()
    q = asc.TQue(asc.TPosition.VECIN)
    pipe.init_buffer(q, t.slots, COPY_ROWS_PER_TILE * t.block_bytes)
    params = asc.DataCopyExtParams(t.blocks_per_copy, t.block_bytes, row_bytes - t.block_bytes,
                                   0)
    first = ctx.block_idx * t.rows_per_core
    for r0 in range(first, first + t.rows_per_core, COPY_ROWS_PER_TILE):
        for c0 in range(0, COPY_SIDE, width):
            x = q.alloc_tensor(np.float16)
            for r in range(0, COPY_ROWS_PER_TILE, t.blocks_per_copy):
                asc.data_copy_pad(x[r * width], src[(r0 + r) * COPY_SIDE + c0], params)
            q.enque(x)
            q.free_tensor(q.deque())


def copy_workload(chip: ChipSpec, name: str, measured_us: float, *, block_bytes: int,
                  blocks_per_copy: int) -> Workload:
    cores = chip.aiv_cores
    tile_bytes = COPY_ROWS_PER_TILE * block_bytes
    tiling = CopyTiling(COPY_SIDE // cores, block_bytes, blocks_per_copy,
                        min(2, chip.ub_bytes // tile_bytes))     # double buffer when two fit
    entry = KernelEntry(op="copy", kernel=copy_kernel,
                        tiling=lambda ins, outs, attrs, c, config: LaunchPlan(cores, tiling),
                        dtypes=("float16",), built_for_runtime=RUNTIME_VERSION,
                        arg_names=("src",))
    return Workload(name, measured_us, entry, (((COPY_SIDE, COPY_SIDE), "float16"),), (),
                    TuningConfig())


def workloads(chip_name: str = "910B1") -> list[Workload]:
    chip = get_chip(chip_name)
    kb = 1024
    return [
        add_workload("add 1 core", 6909.6, cores=1, chunk_bytes=8 * kb, buffer_num=1),
        add_workload("add 48 cores, 8 KB chunks", 306.6, cores=48, chunk_bytes=8 * kb,
                     buffer_num=1),
        add_workload("add 48 cores, 32 KB chunks", 268.5, cores=48, chunk_bytes=32 * kb,
                     buffer_num=1, vector_us=6.95),
        add_workload("add 48 cores, 32 KB chunks, double buffer", 264.0, cores=48,
                     chunk_bytes=32 * kb, buffer_num=2),
        copy_workload(chip, "copy 128 B blocks", 564.8, block_bytes=128, blocks_per_copy=1),
        copy_workload(chip, "copy 64 x 128 B", 233.5, block_bytes=128, blocks_per_copy=64),
        copy_workload(chip, "copy 64 x 2 KB", 215.8, block_bytes=2048, blocks_per_copy=64),
    ]


def provenance(chip_name: str) -> list[tuple[str, str]]:
    """Each cost of the chip's table and what its value rests on (published, fitted to the
    measurements above, or assumed), in the table's order."""
    chip = get_chip(chip_name)
    return list(cost_table(chip.arch).provenance().items())


def no_measurements(chip_name: str) -> str | None:
    """Why no deviation can be given for `chip_name` (None for the measured chip)."""
    name = get_chip(chip_name).name
    if name == MEASURED_CHIP:
        return None
    return (f"there are no measurements for {name}: the workloads were measured on a "
            f"{MEASURED_CHIP}, and its modeled times set against them would say nothing, so no "
            f"deviation is given (its costs are listed with what each rests on)")


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


def calibrate(chip_name: str = MEASURED_CHIP,
              progress: Callable[[int, int, str], None] | None = None
              ) -> list[CalibrationPoint]:
    """The workloads modeled on `chip_name` beside their measurements, which exist for the
    measured chip only: another chip's model set against them would say nothing."""
    why = no_measurements(chip_name)
    if why:
        raise BadInput(f"calibrate: {why} (ixl calibrate --chip {MEASURED_CHIP})")
    points = []
    todo = workloads(chip_name)
    with Device(chip_name, timing_only=True, debug=False) as dev:
        for i, w in enumerate(todo):
            if progress:
                progress(i, len(todo), w.name)
            record = w.run(dev)
            modeled = [record.time_us]          # in the order of w.measurements()
            if w.vector_us is not None:
                modeled.append(vector_busy_us(record))
            points += [CalibrationPoint(name, us, measured)
                       for (name, measured), us in zip(w.measurements(), modeled, strict=True)]
    return points


def vector_busy_us(record: LaunchRecord) -> float:
    """The busiest core's vector pipe time in a launch."""
    return max(c.pipes[Pipe.V].busy for c in record.cores) / record.clock_mhz
