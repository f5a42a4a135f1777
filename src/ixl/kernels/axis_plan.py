"""Host tiling for the ops that reduce along axes: reductions, Softmax and the normalisations.

The tensor is seen as groups of dims, each kept or reduced (size-1 dims dropped, neighbours of
one kind merged). The innermost reduced group is the axis the kernel reduces in UB; the groups
outside it are kept (they index independent units, which the cores split: no core ever needs
another's partial result) or reduced (their combinations become more segments, merged into the
same statistics).

Two layouts:
- row: the reduced axis is innermost, so a unit is one contiguous row; a tile holds `rows` rows
  at a pitch the block reductions can take, the pad lanes holding the reduction's identity;
- column: kept elements follow the reduced axis (`inner`), so a unit is `width` contiguous
  columns; a tile holds `rows` of its rows, combined row against row with plain vector ops.
A unit whose reduced extent fits in UB is resident (every pass works in UB); a longer one
streams segments: a first pass merges per-segment statistics, a second writes the outputs.
Every size here comes from the chip spec: UB bytes, vector width, block size, repeat limits.

A fused axis kernel (the fusion pass's anchors) also runs elementwise bodies: a prologue that
computes x from inputs of x's shape, loaded segment by segment like x, and an epilogue on y
before it is copied out; `Fusion` (axis_ub.py) says which, and the UB plan counts their buffers.

The family: axis_plan.py (this host tiling), axis_ub.py (UB accounting), axis_layout.py (the
row and column layouts on the device), axis_kernel.py (the kernel class), axis_fusion.py (fused
kernels); reduce.py and norm.py are its ops.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..ascend.chips import ChipSpec
from ..hixl.dtypes import to_numpy
from ..intmath import ceil_div, round_up
from ..nixl import LaunchPlan, TensorDesc
from ..nixl.tuning import DoesNotFit, TuningConfig, TuningSpace
from .axis_ub import PLAIN, Fusion, block_quantum, row_pitch, ub_plan
from .tiling import Tiling, largest_fit, split_units

if TYPE_CHECKING:
    from .axis_kernel import AxisOp

TUNING_FIELDS = ("buffer_num", "tile_div", "block_dim", "accumulate")
TUNING_SPACE = TuningSpace(buffer_num=(1, 2, 4), tile_div=(1, 2, 4), core_div=(1, 2))


def padded_storage(in_descs: list, attrs: dict | None = None) -> str | None:
    """The declines every axis kernel shares: padded storage is the shim's."""
    if any(d is not None and d.is_padded for d in in_descs):
        return "padded storage runs on the shim"
    return None


@dataclass(frozen=True)
class AxisTiling(Tiling):
    dtype: str               # storage dtype
    compute_dtype: str       # float32 for halves: statistics accumulate in float32 (R8, R13)
    layout: str              # "row" or "column"
    length: int              # elements along the reduced axis (0: an empty reduction)
    inner: int               # kept elements after the reduced axis (1 in the row layout)
    kept: tuple              # (size, stride) of the kept outer groups, outermost first
    folded: tuple            # (size, stride) of the reduced outer groups
    width: int               # columns per unit (column layout; 1 in the row layout)
    units: int               # rows (row layout) or column chunks (column layout)
    per_core: int            # units per core, a contiguous range
    rows: int                # tile rows
    segment: int             # row layout: elements of the reduced axis per tile
    pitch: int               # UB elements per tile row (the widest tile)
    resident: bool           # the whole reduced extent of a unit sits in one tile
    config: TuningConfig     # buffer_num: slots per queue
    tile: int                # elements per tile (rows * pitch)
    epsilon: float = 0.0
    params: int = 0          # parameter vectors present (scale, bias)
    param_repeat: tuple = ()  # per declared parameter: copies that make one normalised row

    def describe(self) -> str:
        extent = "resident" if self.resident else f"streamed in segments of {self.segment}"
        return (f"{self.layout} layout, reduced length {self.length}, {extent}, {self.rows} "
                f"rows a tile at pitch {self.pitch}, {self.units} units ({self.per_core} a "
                f"core), buffers {self.buffer_num}")


@dataclass(frozen=True)
class _Axes:
    layout: str
    length: int
    inner: int
    kept: tuple
    folded: tuple


def _analyse(shape: tuple, axes: frozenset, rows_only: bool) -> _Axes:
    """Kept and reduced groups of `shape` (size-1 dims dropped, neighbours merged). Ops with
    parameters along the row keep the row layout even for rows of one element."""
    kept_size = math.prod(d for i, d in enumerate(shape) if i not in axes)
    if not kept_size or any(shape[i] == 0 for i in axes):
        return _Axes("row", 0, 1, ((kept_size, 0),), ())   # no units, or empty reductions
    groups: list[list] = []
    for i, d in enumerate(shape):
        if d == 1:
            continue
        if groups and groups[-1][1] == (i in axes):
            groups[-1][0] *= d
        else:
            groups.append([d, i in axes])
    reduced = [i for i, (_, red) in enumerate(groups) if red]
    if not reduced and rows_only:
        return _Axes("row", 1, 1, ((math.prod(shape), 1),), ())
    if not reduced:                                  # nothing left to reduce: one row per column
        return _Axes("column", 1, math.prod(shape), (), ())
    g = reduced[-1]
    strides = [math.prod(s for s, _ in groups[i + 1:]) for i in range(len(groups))]
    inner = strides[g]
    kept = tuple((groups[i][0], strides[i]) for i in range(g) if not groups[i][1])
    folded = tuple((groups[i][0], strides[i]) for i in range(g) if groups[i][1])
    return _Axes("row" if inner == 1 else "column", groups[g][0], inner, kept, folded)


def compute_dtype(dtype: str, config: TuningConfig) -> str:
    """float32 for every dtype, unless the config asks for float16 accumulation (the R13
    demonstration of why not)."""
    if config.accumulate == "float16" and dtype == "float16":
        return "float16"
    return "float32"


def plan(op: AxisOp, x: TensorDesc, axes: Iterable[int], chip: ChipSpec,
         config: TuningConfig | None = None, *, epsilon: float = 0.0, params: int = 0,
         param_repeat: tuple = (), fusion: Fusion = PLAIN) -> LaunchPlan:
    """Host tiling: layout, units over cores, tile rows and pitch from the UB budget (with the
    buffers of `fusion`'s bodies). The config may set buffer_num, tile_div (tiles for
    1/tile_div of UB), block_dim and accumulate."""
    config = (config or TuningConfig()).only(TUNING_FIELDS, "the axis kernels")
    cdt = compute_dtype(x.dtype, config)
    s_isz, c_isz = x.itemsize, to_numpy(cdt).itemsize
    grouped = _analyse(x.shape, frozenset(axes), rows_only=op.params > 0)
    outer = math.prod(s for s, _ in grouped.kept)
    if grouped.length == 0 and not op.stat_outputs:
        outer = 0                                    # only empty outputs: nothing to launch

    def ub(layout, rows, pitch, streaming):
        return ub_plan(op, layout, rows, pitch, s_isz, c_isz, config.buffers, params,
                       streaming, chip, fusion, chip.ub_bytes // config.divisor)

    def budget(layout, rows, pitch, streaming):
        return config.divisor * ub(layout, rows, pitch, streaming).total

    if grouped.layout == "row":
        block_dim, per_core = split_units(outer, chip, config.block_dim)
        geo = _row_geometry(grouped, per_core, budget, chip, s_isz, c_isz)
        width, units = 1, outer
    else:
        width = _column_width(grouped, outer, budget, chip, s_isz, c_isz)
        units = outer * ceil_div(grouped.inner, width)
        block_dim, per_core = split_units(units, chip, config.block_dim)
        geo = _column_geometry(grouped, width, budget, chip, s_isz, c_isz)
    rows, segment, pitch, resident = geo
    queues = ub(grouped.layout, rows, pitch, not resident).out_queues
    if queues * config.buffers > chip.event_ids_per_position:
        raise DoesNotFit(f"{queues} output queues x {config.buffers} buffers need "
                         f"{queues * config.buffers} event ids; VECOUT has "
                         f"{chip.event_ids_per_position} on {chip.name}")
    tiling = AxisTiling(x.dtype, cdt, grouped.layout, grouped.length, grouped.inner,
                        grouped.kept, grouped.folded, width, units, per_core, rows, segment,
                        pitch, resident, config, rows * pitch, float(epsilon), params,
                        param_repeat)
    return LaunchPlan(block_dim, tiling, _workspace(tiling, block_dim, s_isz, chip))


def _row_geometry(grouped: _Axes, per_core: int, budget, chip, s_isz, c_isz):
    """(rows, segment, pitch, resident) for rows: as many whole rows as fit, else the longest
    segment that fits."""
    ub = chip.ub_bytes
    if not grouped.folded:
        pitch = row_pitch(grouped.length, chip, s_isz, c_isz)
        upper = max(1, min(per_core, chip.max_copy_blocks))
        rows = largest_fit(lambda r: budget("row", r, pitch, False), ub, upper)
        if rows:
            tiles = ceil_div(max(per_core, 1), rows)
            return ceil_div(max(per_core, 1), tiles), grouped.length, pitch, True
    quantum = math.lcm(block_quantum(chip, c_isz), chip.block_elems(s_isz))
    most = quantum * largest_fit(lambda n: budget("row", 1, n * quantum, True), ub,
                                 ub // (quantum * s_isz))
    if most == 0:
        raise DoesNotFit(f"no segment of {quantum} elements fits in {ub} bytes of UB")
    if grouped.length <= most:
        pitch = row_pitch(grouped.length, chip, s_isz, c_isz)
        if budget("row", 1, pitch, True) <= ub:
            return 1, grouped.length, pitch, False
    seg = most
    while seg > 0:
        rest = grouped.length % seg
        pitch = max(seg, row_pitch(rest, chip, s_isz, c_isz) if rest else seg)
        if row_pitch(seg, chip, s_isz, c_isz) == seg and budget("row", 1, pitch, True) <= ub:
            return 1, seg, pitch, False
        seg -= quantum
    raise DoesNotFit(f"no segment of a row of {grouped.length} elements fits in {ub} bytes of UB")


def _column_width(grouped: _Axes, outer: int, budget, chip, s_isz, c_isz) -> int:
    """Columns per unit: enough units for every core, as wide as UB allows."""
    step = max(chip.block_elems(s_isz), chip.block_elems(c_isz))
    chunks = ceil_div(chip.aiv_cores, max(outer, 1))
    width = min(grouped.inner, round_up(ceil_div(grouped.inner, chunks), step))
    if not grouped.folded and grouped.length <= chip.max_copy_blocks:
        fit = step * largest_fit(lambda n: budget("column", grouped.length, n * step, False),
                                 chip.ub_bytes, round_up(grouped.inner, step) // step)
        if fit:
            return min(width, fit)
    while width > step and budget("column", 1, round_up(width, step), True) > chip.ub_bytes:
        width = round_up(width // 2, step)
    return width


def _column_geometry(grouped: _Axes, width: int, budget, chip, s_isz, c_isz):
    step = max(chip.block_elems(s_isz), chip.block_elems(c_isz))
    pitch = round_up(width, step)
    if not grouped.folded and grouped.length <= chip.max_copy_blocks \
            and budget("column", grouped.length, pitch, False) <= chip.ub_bytes:
        return grouped.length, grouped.length, pitch, True
    rows = largest_fit(lambda r: budget("column", r, pitch, True), chip.ub_bytes,
                       min(grouped.length, chip.max_copy_blocks))
    if rows == 0:
        raise DoesNotFit(f"no tile of one row of {pitch} columns fits in {chip.ub_bytes} "
                         f"bytes of UB")
    return rows, grouped.length, pitch, False


def _param_bytes(tiling: AxisTiling, s_isz: int, chip) -> int:
    """GM bytes of one expanded parameter row."""
    return round_up(tiling.length * s_isz, chip.gm_alloc_align)


def _workspace(tiling: AxisTiling, block_dim: int, s_isz: int, chip) -> int:
    """GM scratch for parameters that broadcast over the normalised row: each core writes the
    expanded copy it reads back."""
    if all(r == 1 for r in tiling.param_repeat):
        return 0
    return block_dim * len(tiling.param_repeat) * _param_bytes(tiling, s_isz, chip)


def param_region(tiling: AxisTiling, block_idx: int, index: int, s_isz: int, chip: ChipSpec) -> int:
    """Byte offset of one core's expanded parameter `index` in the workspace."""
    return (block_idx * len(tiling.param_repeat) + index) * _param_bytes(tiling, s_isz, chip)
