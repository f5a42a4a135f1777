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
before it is copied out; `Fusion` says which, and `fuse` which chains the kernel takes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..ascend.chips import ChipSpec
from ..hixl.dtypes import to_numpy
from ..nixl import LaunchPlan, TensorDesc
from .tiling import largest_fit, split_units

DEFAULT_BUFFER_NUM = 2
FLOATS = ("float16", "bfloat16", "float32")
TUNING_SPACE = {"buffer_num": (1, 2, 4), "tile_div": (1, 2, 4)}
STAT_ITEMSIZE = 4            # statistics outputs are float32 at most (LayerNorm's mean, inv_std)


def padded_storage(in_descs, attrs=None) -> str | None:
    """The declines every axis kernel shares: padded storage is the shim's."""
    if any(d is not None and d.is_padded for d in in_descs):
        return "padded storage runs on the shim"
    return None


@dataclass(frozen=True)
class Fusion:
    """Elementwise steps an axis kernel runs around its op. Value ids: the kernel's inputs,
    then the step results, the op's own result among them."""

    prologue: tuple = ()      # Steps computing x from `tiles`
    epilogue: tuple = ()      # Steps mapping the op's result
    tiles: tuple = ()         # kernel inputs loaded like x, side by side in one queue slot
    scalars: tuple = ()       # one-element kernel inputs, read once per block as values
    consts: tuple = ()        # of those, the ones a body reads as a tile (spread once)
    params: tuple = ()        # kernel input per parameter of the op (None: omitted)

    @property
    def steps(self) -> tuple:
        return self.prologue + self.epilogue

    def span(self, elems: int, chip: ChipSpec) -> int:
        """Elements of every buffer a body touches: compare and select work on whole float16
        repeats (as in the elementwise template), so tiles round up to them."""
        return _ceil(elems, chip.repeat_bytes // 2) if self.steps else elems

    def buffers(self, widen: bool) -> tuple[int, int, int, int]:
        """Compute-dtype tiles the bodies need besides x's: the converted inputs, the step
        results (two in turn: a chain's step reads only its predecessor's result; the last
        prologue step writes x, the last epilogue step y when no conversion follows), the
        bodies' temporaries and the spread scalars."""
        converted = len(self.tiles) if widen and self.prologue else 0
        results = min(2, max(len(self.prologue) - 1, len(self.epilogue) - (not widen), 0))
        temps = max((s.body.temps for s in self.steps), default=0)
        return converted, results, temps, len(self.consts)


PLAIN = Fusion()


def fuse(op: str, program: tuple, at: int, args: tuple, in_descs: list,
         out: TensorDesc) -> tuple[Fusion, str | None]:
    """The fusion of `program` (the other steps) around axis op `op`, step `at`, which reads
    x and its parameters as `args`; and why the axis kernel declines it (None: it takes it).
    Producers read x-shaped tiles or scalars (no broadcasting inside a row); consumers
    read scalars only."""
    n = len(in_descs)
    tiles, scalars, consts = [], [], []
    reason = padded_storage(in_descs)
    for k, step in enumerate(program):
        data = len(step.args) - len(step.body.scalars)
        for j, a in enumerate(step.args):
            if a is None or a >= n:
                continue
            d = in_descs[a]
            if j >= data:
                scalars.append(a)
            elif k < at and d.shape == out.shape and d.dtype == out.dtype:
                tiles.append(a)
            elif d.size == 1 and d.dtype in FLOATS:
                scalars.append(a)
                consts.append(a)
            elif reason is None:
                where, takes = (("before", "x's tiles or scalars") if k < at
                                else ("after", "scalars"))
                reason = (f"{step.op} {where} {op} reads a {d.dtype} tensor of shape "
                          f"{list(d.shape)}; the fused {op} kernel takes {takes} there "
                          f"(x: {out.dtype} {list(out.shape)})")
    fusion = Fusion(program[:at], program[at:], _unique(tiles) if at else (args[0],),
                    _unique(scalars), _unique(consts), tuple(args[1:]))
    return fusion, reason


def _unique(ids: list) -> tuple:
    return tuple(dict.fromkeys(ids))


@dataclass(frozen=True)
class AxisTiling:
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
    buffer_num: int          # slots per queue
    tile: int                # elements per tile (rows * pitch)
    epsilon: float = 0.0
    params: int = 0          # parameter vectors present (scale, bias)
    param_repeat: tuple = ()  # per declared parameter: copies that make one normalised row


@dataclass(frozen=True)
class UbPlan:
    """Bytes of every UB buffer (queues: per slot); the kernel allocates exactly these."""

    in_slot: int
    out_slot: int
    stat_slot: int
    work: int
    aux: int
    red: tuple
    stats: int
    bc: int
    params: int
    bodies: int              # a fusion's compute-dtype tiles (Fusion.buffers, in order)
    scalars: int             # a fusion's scalar inputs, one block each
    cap: int                 # elements per statistics slot
    slots: int
    total: int


def _ceil(n: int, m: int) -> int:
    return -(-n // m) * m


def block_quantum(chip: ChipSpec, itemsize: int) -> int:
    """Row lengths a block reduction takes whole: full repeats whose results again start on
    block boundaries."""
    blk = chip.block_elems(itemsize)
    return math.lcm(chip.lanes(itemsize), blk * blk)


def reduce_steps(pitch: int, chip: ChipSpec, itemsize: int) -> tuple[int, bool, bool]:
    """How rows of `pitch` elements reduce: (block reductions, then a fold of repeats into one
    repeat, whether that works): the last step is always one whole-repeat reduction per row."""
    lanes, blk = chip.lanes(itemsize), chip.block_elems(itemsize)
    quantum = block_quantum(chip, itemsize)
    v, steps = pitch, 0
    while v > lanes and v % quantum == 0:
        v //= blk
        steps += 1
    fold = v > lanes
    return steps, fold, not fold or v // blk <= chip.max_repeat   # strides are u8 fields


def row_pitch(count: int, chip: ChipSpec, s_isz: int, c_isz: int) -> int:
    """The UB pitch of a row of `count` elements: block-aligned for both dtypes, padded further
    only when the reduction steps need it."""
    step = max(chip.block_elems(s_isz), chip.block_elems(c_isz))
    quantum = block_quantum(chip, c_isz)
    while True:
        pitch = _ceil(max(count, 1), step)
        if reduce_steps(pitch, chip, c_isz)[2]:
            return pitch
        step = math.lcm(step, quantum) if step % quantum else step * chip.block_elems(c_isz)


def ub_plan(op, layout: str, rows: int, pitch: int, s_isz: int, c_isz: int, buffer_num: int,
            params: int, streaming: bool, chip: ChipSpec, fusion: Fusion = PLAIN) -> UbPlan:
    elems = rows * pitch
    span = fusion.span(elems, chip)
    widen = s_isz != c_isz
    blk, lanes = chip.block_elems(c_isz), chip.lanes(c_isz)
    per_rep = chip.repeat_bytes // chip.block_bytes
    nstat = rows if layout == "row" else pitch
    cap = _ceil(nstat, max(blk, per_rep))          # brcb reads whole groups of 8
    slots = 2 * op.stats + 1 if streaming else op.stats
    row = layout == "row"
    red = (rows * max(-(-pitch // blk), lanes) * c_isz,
           rows * max(-(-pitch // (blk * blk)), lanes) * c_isz) if row else (0, 0)
    sizes = dict(
        in_slot=(len(fusion.tiles) or 1) * span * s_isz,
        out_slot=span * s_isz if op.has_y else 0,
        stat_slot=len(op.stat_outputs) * cap * STAT_ITEMSIZE,
        work=span * c_isz if widen or fusion.prologue else 0,
        aux=elems * c_isz if op.needs_aux(layout) else 0, red=red,
        stats=slots * cap * c_isz, bc=_ceil(rows, per_rep) * blk * c_isz if row else 0,
        params=params * pitch * c_isz, bodies=sum(fusion.buffers(widen)) * span * c_isz,
        scalars=len(fusion.scalars) * chip.block_bytes)
    a = chip.block_bytes
    queued = _ceil(sizes["in_slot"], a) + _ceil(sizes["out_slot"], a) + _ceil(sizes["stat_slot"], a)
    single = sum(_ceil(sizes[k], a)
                 for k in ("work", "aux", "stats", "bc", "params", "bodies", "scalars"))
    total = queued * buffer_num + single + sum(_ceil(r, a) for r in red)
    return UbPlan(**sizes, cap=cap, slots=slots, total=total)


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


def compute_dtype(dtype: str, config: dict) -> str:
    """float32 for every dtype, unless the tuner asks for float16 accumulation (the R13
    demonstration of why not)."""
    if config.get("accumulate") == "float16" and dtype == "float16":
        return "float16"
    return "float32"


def plan(op, x: TensorDesc, axes, chip: ChipSpec, config: dict | None = None, *,
         epsilon: float = 0.0, params: int = 0, param_repeat: tuple = (),
         fusion: Fusion = PLAIN) -> LaunchPlan:
    """Host tiling: layout, units over cores, tile rows and pitch from the UB budget (with the
    buffers of `fusion`'s bodies). `config` may set buffer_num, tile_div and block_dim (the
    tuner does) or accumulate."""
    config = config or {}
    buffer_num = int(config.get("buffer_num", DEFAULT_BUFFER_NUM))
    cdt = compute_dtype(x.dtype, config)
    s_isz, c_isz = x.itemsize, to_numpy(cdt).itemsize
    a = _analyse(x.shape, frozenset(axes), rows_only=op.params > 0)
    outer = math.prod(s for s, _ in a.kept)
    if a.length == 0 and not op.stat_outputs:
        outer = 0                                    # only empty outputs: nothing to launch

    tile_div = int(config.get("tile_div", 1))      # the tuner's knob: tiles for 1/tile_div of UB

    def budget(layout, rows, pitch, streaming):
        return tile_div * ub_plan(op, layout, rows, pitch, s_isz, c_isz, buffer_num, params,
                                  streaming, chip, fusion).total

    if a.layout == "row":
        block_dim, per_core = split_units(outer, chip, config.get("block_dim"))
        geo = _row_geometry(a, per_core, budget, chip, s_isz, c_isz)
        width, units = 1, outer
    else:
        width = _column_width(a, outer, budget, chip, s_isz, c_isz)
        units = outer * -(-a.inner // width)
        block_dim, per_core = split_units(units, chip, config.get("block_dim"))
        geo = _column_geometry(a, width, budget, chip, s_isz, c_isz)
    rows, segment, pitch, resident = geo
    tiling = AxisTiling(x.dtype, cdt, a.layout, a.length, a.inner, a.kept, a.folded, width,
                        units, per_core, rows, segment, pitch, resident, buffer_num,
                        rows * pitch, float(epsilon), params, param_repeat)
    return LaunchPlan(block_dim, tiling, _workspace(tiling, block_dim, s_isz, chip))


def _row_geometry(a: _Axes, per_core: int, budget, chip, s_isz, c_isz):
    """(rows, segment, pitch, resident) for rows: as many whole rows as fit, else the longest
    segment that fits."""
    ub = chip.ub_bytes
    if not a.folded:
        pitch = row_pitch(a.length, chip, s_isz, c_isz)
        upper = max(1, min(per_core, chip.max_copy_blocks))
        rows = largest_fit(lambda r: budget("row", r, pitch, False), ub, upper)
        if rows:
            tiles = -(-max(per_core, 1) // rows)
            return -(-max(per_core, 1) // tiles), a.length, pitch, True
    quantum = math.lcm(block_quantum(chip, c_isz), chip.block_elems(s_isz))
    most = quantum * largest_fit(lambda n: budget("row", 1, n * quantum, True), ub,
                                 ub // (quantum * s_isz))
    if most == 0:
        raise ValueError(f"no segment of {quantum} elements fits in {ub} bytes of UB")
    if a.length <= most:
        pitch = row_pitch(a.length, chip, s_isz, c_isz)
        if budget("row", 1, pitch, True) <= ub:
            return 1, a.length, pitch, False
    seg = most
    while True:
        rest = a.length % seg
        pitch = max(seg, row_pitch(rest, chip, s_isz, c_isz) if rest else seg)
        if row_pitch(seg, chip, s_isz, c_isz) == seg and budget("row", 1, pitch, True) <= ub:
            return 1, seg, pitch, False
        seg -= quantum


def _column_width(a: _Axes, outer: int, budget, chip, s_isz, c_isz) -> int:
    """Columns per unit: enough units for every core, as wide as UB allows."""
    step = max(chip.block_elems(s_isz), chip.block_elems(c_isz))
    chunks = -(-chip.aiv_cores // max(outer, 1))
    width = min(a.inner, _ceil(-(-a.inner // chunks), step))
    if not a.folded and a.length <= chip.max_copy_blocks:
        fit = step * largest_fit(lambda n: budget("column", a.length, n * step, False),
                                 chip.ub_bytes, _ceil(a.inner, step) // step)
        if fit:
            return min(width, fit)
    while width > step and budget("column", 1, _ceil(width, step), True) > chip.ub_bytes:
        width = _ceil(width // 2, step)
    return width


def _column_geometry(a: _Axes, width: int, budget, chip, s_isz, c_isz):
    step = max(chip.block_elems(s_isz), chip.block_elems(c_isz))
    pitch = _ceil(width, step)
    if not a.folded and a.length <= chip.max_copy_blocks \
            and budget("column", a.length, pitch, False) <= chip.ub_bytes:
        return a.length, a.length, pitch, True
    rows = largest_fit(lambda r: budget("column", r, pitch, True), chip.ub_bytes,
                       min(a.length, chip.max_copy_blocks))
    return rows, a.length, pitch, False


def _workspace(t: AxisTiling, block_dim: int, s_isz: int, chip) -> int:
    """GM scratch for parameters that broadcast over the normalised row: each core writes the
    expanded copy it reads back."""
    if all(r == 1 for r in t.param_repeat):
        return 0
    return block_dim * len(t.param_repeat) * _ceil(t.length * s_isz, chip.gm_alloc_align)


def param_region(t: AxisTiling, block_idx: int, index: int, s_isz: int, chip) -> int:
    """Byte offset of one core's expanded parameter `index` in the workspace."""
    return (block_idx * len(t.param_repeat) + index) * _ceil(t.length * s_isz, chip.gm_alloc_align)
