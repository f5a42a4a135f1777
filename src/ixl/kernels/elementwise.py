"""The elementwise template (tier S): tiling, queues, buffering, tails and the multi-core split
live here; each op gives only its compute body (program.py), and a fused kernel is several
bodies run one after the other on the same tile, intermediates staying in UB.

Canonical shape (R7): each core takes a contiguous range of the output; per tile, copy in
(MTE2), compute (V), copy out (MTE3); buffer count 1, 2, 4 or 8 from the tuning config; a tail
whose bytes are not a multiple of 32 goes through data_copy_pad; a zero-length tile is never
issued. When an input broadcasts, tiles are whole output rows (broadcast.py).

Dtypes: the A2 vector unit computes float16 and float32. Other storage types are converted on
the way in and out (bfloat16, int32 and bool through casts), and bodies that compose
transcendentals compute half inputs in float32. A bool output (a comparison, a logical op) is
the program's 0/1 result cast through float16 to bytes; a program whose bodies all take
integers as they are (`Body.ints`) computes int32 inputs in int32, exactly.

The file reads as an Ascend C sample: the tiling data, the host tiling function, the kernel
class (init, process, copy_in, compute, copy_out) and the kernel entry.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from ..ascend import lang as asc
from ..ascend.chips import ChipSpec
from ..hixl.dtypes import to_numpy
from ..intmath import ceil_div, round_up
from ..nixl import KernelContext, LaunchPlan, TensorDesc
from ..nixl.tuning import DoesNotFit, TuningConfig
from . import broadcast, wide_casts
from .broadcast import InputPlan
from .program import BodyArgs, Step, Words, resolve_program, scalar_inputs
from .tiling import Tiling, largest_fit, split_cores, split_units, tile_elements
from .ub import copy, read_scalars, spread
from .ub_place import Want, gaps, pad
from .wide_casts import WideScratch, convert_in, convert_out, needs_wide

TUNING_FIELDS = ("buffer_num", "tile", "tile_div", "block_dim", "bank_gaps")
BOOL, F16, I32 = np.dtype(np.bool_), np.dtype(np.float16), np.dtype(np.int32)


# ---------------------------------------------------------------- tiling data

@dataclass(frozen=True)
class ElementwiseTiling(Tiling):
    total: int             # elements of the output
    per_core: int          # output elements (flat) or rows (row layout) per core
    tile: int              # elements per tile (flat) or rows per tile (row layout)
    out_dtype: str
    compute_dtype: str
    out_shape: tuple[int, ...]
    inputs: tuple[InputPlan, ...]
    steps: tuple[Step, ...]
    config: TuningConfig   # buffer_num: slots per queue
    rows: bool = False     # row layout (some input broadcasts)
    row_pad: int = 0       # elements per UB row (the segment padded to 32 bytes)
    segment: int = 0       # row layout: elements of the last dim per UB row
    out_round: str = "CAST_RINT"
    gaps: tuple[int, ...] = ()   # UB bytes left before each placed buffer (`_placed`)

    def describe(self) -> str:
        if self.rows:
            return (f"row layout (an input broadcasts), rows of {self.segment} (UB pitch "
                    f"{self.row_pad}), {self.tile} rows a tile, {self.per_core} rows a core, "
                    f"buffers {self.buffer_num}")
        return (f"flat, tile {self.tile} elements, {self.per_core} a core, compute "
                f"{self.compute_dtype}, buffers {self.buffer_num}")


# ---------------------------------------------------------------- host tiling

def compute_dtype(dtypes: list[str], steps: tuple[Step, ...]) -> str:
    """float16 when every value is float16 (or bool) and no body asks for float32; int32 (or
    int64) for a Cast between integers and bool, which stays exact; int32 when the values are
    int32 (or bool) and every body computes on integers as they are (exact integer arithmetic);
    else float32."""
    if all(s.body.fn is None for s in steps) and all(
            d in ("int32", "int64", "bool") for d in dtypes) and set(dtypes) != {"bool"}:
        return "int64" if set(dtypes) == {"int64"} else "int32"
    if "int32" in dtypes and all(d in ("int32", "bool") for d in dtypes) \
            and all(s.body.ints for s in steps):
        return "int32"
    wide = any(s.body.float32 for s in steps) or any(
        d not in ("float16", "bool") for d in dtypes)
    return "float32" if wide else "float16"


@dataclass(frozen=True)
class _Budget:
    """UB bytes per element of a tile (the queues times their slots, plus single scratch) and
    the bytes set aside before tiles: scalar blocks, staging of what is built once."""

    queued: int
    scratch: int
    scalars: int
    staging: int          # bytes per staged element of what is built once
    buffer_num: int

    @property
    def per_element(self) -> int:
        return self.queued * self.buffer_num + self.scratch

    def reserved(self, chip: ChipSpec, pad: int) -> int:
        """Bytes set aside in a layout whose UB rows are `pad` elements (0: the flat layout)."""
        lanes = chip.lanes(2)
        reserved = chip.block_bytes * self.scalars + max(pad, lanes) * self.staging
        if pad:
            reserved += lanes * self.per_element          # one repeat of slack per buffer
        return reserved

    def tile(self, chip: ChipSpec, pad: int) -> int:
        """The largest tile (whole float16 repeats) beside the reserved bytes."""
        return tile_elements(chip, queued_bytes=self.queued, buffer_num=self.buffer_num,
                             scratch_bytes=self.scratch, vector_itemsize=2,
                             reserved_bytes=self.reserved(chip, pad))

    def bytes(self, chip: ChipSpec, pad: int, tile: int) -> int:
        """UB bytes of a tile of `tile` elements in that layout."""
        return self.reserved(chip, pad) + tile * self.per_element


def _budget(inputs, out: TensorDesc, cdt: str, steps, config: TuningConfig,
            chip: ChipSpec) -> _Budget:
    streamed = [p for p in inputs if not p.scalar]
    queues = sum(1 for p in streamed if not p.once)
    spreads = any(p.last_broadcast and not p.once for p in streamed)   # an MTE2 -> V flag
    if queues * config.buffers + spreads > chip.event_ids_per_position:
        raise DoesNotFit(f"{queues} input queues x {config.buffers} buffers"
                         f"{' and a spread flag' if spreads else ''} need "
                         f"{queues * config.buffers + spreads} MTE2 -> V event ids; the chip has "
                         f"{chip.event_ids_per_position} on {chip.name}")
    c_isz = to_numpy(cdt).itemsize
    queued = sum(to_numpy(p.dtype).itemsize for p in streamed if not p.once) + out.itemsize
    scratch = c_isz * _scratch_count(inputs, out.dtype, cdt, steps) \
        + sum(c_isz * _width(p.dtype, steps) for p in streamed if p.once)
    if _converts_wide([p.dtype for p in inputs if p.dtype], out.dtype, steps):
        scratch += wide_casts.SCRATCH_BYTES
    staging = sum(to_numpy(p.dtype).itemsize + c_isz * _width(p.dtype, steps)
                  for p in streamed if p.once)
    return _Budget(queued, scratch, sum(p.scalar for p in inputs), staging, config.buffers)


def _scratch_count(inputs, out_dtype: str, cdt: str, steps) -> int:
    """Compute-dtype buffers besides the queues: converted inputs, step results, temps."""
    converted = sum(_width(p.dtype, steps) for p in inputs if not p.scalar and p.dtype != cdt)
    results = len(steps) if (len(steps) > 1 or out_dtype != cdt) else 0
    bool_stage = _zero_one(out_dtype, steps) and cdt != "float16"
    return converted + results + bool_stage + _temps(steps, cdt, [p.dtype for p in inputs])


def _zero_one(out_dtype: str, steps) -> bool:
    """A bool output made by a comparison or a logical op: its 0/1 result goes through float16
    to bool bytes. A Cast to bool instead tests every value for nonzero (wide_casts)."""
    return out_dtype == "bool" and steps[-1].body.fn is not None


def _words(dtype: str | None, steps) -> bool:
    """Whether an input of this dtype reaches the program as its int32 words (`Words`): an
    int64 input of bodies that all take words (the comparisons)."""
    return dtype == "int64" and all(s.body.words for s in steps)


def _width(dtype: str | None, steps) -> int:
    """Compute-dtype elements an input's converted element takes: two for words."""
    return 2 if _words(dtype, steps) else 1


def _temps(steps, cdt: str, in_dtypes) -> int:
    """The program's scratch tensors: a body's `int_temps` where it computes on integers
    (int32 values, int64 words), else its `temps`."""
    ints = cdt == "int32" or any(_words(d, steps) for d in in_dtypes)
    return max((s.body.int_temps if ints and s.body.int_temps is not None else s.body.temps
                for s in steps), default=0)


def _converts_wide(in_dtypes, out_dtype: str, steps) -> bool:
    """Whether a tile needs wide_casts' scratch: an int64 input (unless it arrives as words),
    or an int64 or bool output that is not a comparison's 0/1 result."""
    if _zero_one(out_dtype, steps):
        return "int64" in in_dtypes and not _words("int64", steps)
    return needs_wide(in_dtypes, out_dtype)


def _tuned(tile: int, config: TuningConfig, chip: ChipSpec) -> int:
    """The tile the config asks for: a fraction of the largest, or a size of its own."""
    lanes = chip.lanes(2)
    if config.tile_div is not None:
        tile = max(lanes, tile // config.tile_div // lanes * lanes)
    if config.tile is not None:
        if config.tile > tile or config.tile % lanes:
            raise DoesNotFit(f"tile {config.tile} must be a positive multiple of {lanes} up "
                             f"to {tile} for {config.buffers} buffers")
        tile = config.tile
    return tile


def _placed(inputs, out_dtype: str, cdt: str, steps, buffers: int, cap: int) -> list[Want]:
    """The buffers the kernel places, in its allocation order (ub_place.py): each streamed
    input's queue half a bank-group cycle from the one before, so a binary instruction's
    sources meet in no bank group; the output queue a bank stretch after the first input's
    when UB has room (else half a cycle from the last input's); then the compute-dtype scratch
    (converted inputs, step results, temporaries, the bool stage), each half a cycle from the
    one before."""
    c_isz = to_numpy(cdt).itemsize
    block = 32
    queued = [p for p in inputs if not (p.scalar or p.once)]
    wants = [Want(buffers * round_up(cap * to_numpy(p.dtype).itemsize, block),
                  k - 1 if k else None) for k, p in enumerate(queued)]
    wants.append(Want(buffers * round_up(cap * to_numpy(out_dtype).itemsize, block),
                      len(wants) - 1 if wants else None, 0 if wants else None))
    widths = [_width(p.dtype, steps) for p in queued if p.dtype != cdt]   # converted inputs
    many = len(steps) > 1 or out_dtype != cdt
    widths += [1] * (len(steps) * many + _temps(steps, cdt, [p.dtype for p in inputs])
                     + (_zero_one(out_dtype, steps) and cdt != "float16"))
    wants += [Want(round_up(cap * c_isz * w, block), len(wants) + j - 1)
              for j, w in enumerate(widths)]
    return wants


def _bank_gaps(budget: _Budget, inputs, out: TensorDesc, cdt: str, steps, chip: ChipSpec,
               pad: int, tile: int) -> tuple[int, ...] | None:
    """The gaps before the placed buffers of a tile (`tile` elements, or rows of `pad`), within
    what the budget leaves of UB; None when they do not fit."""
    cap = tile * pad + chip.lanes(2) if pad else tile
    wants = _placed(inputs, out.dtype, cdt, steps, budget.buffer_num, cap)
    rest = budget.bytes(chip, pad, tile * pad if pad else tile) - sum(w.nbytes for w in wants)
    return gaps(wants, chip, chip.ub_bytes - rest)


def _bank_aware(budget: _Budget, inputs, out: TensorDesc, cdt: str, steps, chip: ChipSpec,
                tile: int, shrink: bool) -> tuple[int, tuple[int, ...]]:
    """A flat tile and its gaps: the largest tile (`shrink`) gives up what the gaps need, in
    steps that keep every tile's GM bursts on the 512-byte grid [MEMOPT][BANK2]; a tile the
    config names keeps its size, with gaps when they fit."""
    found = _bank_gaps(budget, inputs, out, cdt, steps, chip, 0, tile)
    if found is not None or not shrink:
        return tile, found or ()
    itemsizes = [to_numpy(p.dtype).itemsize for p in inputs if not (p.scalar or p.once)]
    step = math.lcm(chip.lanes(2), chip.gm_alloc_align // min(itemsizes + [out.itemsize]))
    smaller = (tile - 1) // step * step
    found = _bank_gaps(budget, inputs, out, cdt, steps, chip, 0, smaller) if smaller else None
    return (smaller, found) if found is not None else (tile, ())


def plan(in_descs: list, out: TensorDesc, chip: ChipSpec, steps: tuple[Step, ...],
         config: TuningConfig | None = None, out_round: str = "CAST_RINT") -> LaunchPlan:
    """Host tiling for a program of steps: the layout, the tile from UB (R11), the cores."""
    config = (config or TuningConfig()).only(TUNING_FIELDS, "the elementwise kernels")
    inputs, rows = broadcast.input_plans(in_descs, out.shape, scalar_inputs(steps))
    cdt = compute_dtype([p.dtype for p in inputs if p.dtype] + [out.dtype], steps)
    base: dict[str, Any] = dict(total=out.size, out_dtype=out.dtype, compute_dtype=cdt,
                                out_shape=out.shape, steps=steps, config=config,
                                out_round=out_round)
    if not rows:
        budget = _budget(inputs, out, cdt, steps, config, chip)
        placed: tuple[int, ...] = ()
        tile = _tuned(budget.tile(chip, 0), config, chip)
        if config.bank_gaps is not False:
            tile, placed = _bank_aware(budget, inputs, out, cdt, steps, chip, tile,
                                       shrink=config.tile is None)
        block_dim, per_core = split_cores(out.size, chip, out.itemsize, config.block_dim)
        return LaunchPlan(block_dim, ElementwiseTiling(per_core=per_core, tile=tile,
                                                       inputs=inputs, gaps=placed, **base))
    n_last = out.shape[-1]
    n_rows = out.size // n_last if n_last else 0
    block_dim, per_core = split_units(n_rows, chip, config.block_dim)
    tiling = _whole_rows(inputs, out, cdt, steps, config, chip) \
        or _row_segments(in_descs, out, cdt, steps, config, chip)
    budget = _budget(tiling["inputs"], out, cdt, steps, config, chip)
    placed = config.bank_gaps is not False and _bank_gaps(
        budget, tiling["inputs"], out, cdt, steps, chip, tiling["row_pad"], tiling["tile"]) or ()
    return LaunchPlan(block_dim, ElementwiseTiling(per_core=per_core, rows=True, **tiling,
                                                   gaps=placed, **base))


def plan_given_rows(in_descs: list, out: TensorDesc, chip: ChipSpec, steps: tuple[Step, ...],
                    width: int, max_rows: int) -> ElementwiseTiling:
    """The row layout for a kernel that hands the template tiles of its own (a Cube tile's
    rows of `width` columns, as the vector side of a mix kernel gets them): UB rows of
    `width` elements padded to 32 bytes, at most `max_rows` of them per tile, every input
    streamed but single elements. Double buffered; DoesNotFit when one row does not fit."""
    config = TuningConfig()
    inputs, _ = broadcast.input_plans(in_descs, out.shape, scalar_inputs(steps), segmented=True)
    cdt = compute_dtype([p.dtype for p in inputs if p.dtype] + [out.dtype], steps)
    itemsizes = [to_numpy(p.dtype).itemsize for p in inputs if not p.scalar] + [out.itemsize]
    pad = broadcast.row_pad(width, itemsizes, chip)
    budget = _budget(inputs, out, cdt, steps, config, chip)
    rows = largest_fit(lambda r: budget.bytes(chip, pad, r * pad), chip.ub_bytes, max_rows)
    if not rows:
        raise DoesNotFit(f"a row of {width} elements and its {len(steps)} step(s) do not fit "
                         f"in {chip.ub_bytes} bytes of UB")
    return ElementwiseTiling(total=out.size, per_core=0, tile=rows, out_dtype=out.dtype,
                             compute_dtype=cdt, out_shape=out.shape, inputs=inputs, steps=steps,
                             config=config, rows=True, row_pad=pad, segment=width)


def _whole_rows(inputs, out, cdt, steps, config, chip) -> dict[str, Any] | None:
    """Tiles of whole output rows, or None when a padded row is longer than a tile."""
    itemsizes = [to_numpy(p.dtype).itemsize for p in inputs if not p.scalar] + [out.itemsize]
    pad = broadcast.row_pad(out.shape[-1], itemsizes, chip)
    budget = _budget(inputs, out, cdt, steps, config, chip)
    if pad == 0:                                  # empty rows: nothing to launch
        return dict(tile=1, inputs=inputs, row_pad=0, segment=0)
    try:
        largest = budget.tile(chip, pad)
    except DoesNotFit:
        return None
    tile = _tuned(largest, config, chip)
    if tile < pad:
        return None
    return dict(tile=tile // pad, inputs=inputs, row_pad=pad, segment=out.shape[-1])


def _row_segments(in_descs, out, cdt, steps, config, chip) -> dict[str, Any]:
    """Rows longer than a tile: each cut into segments of the last dim, as even as the block
    size allows, each segment a UB row; every input but single elements streams."""
    inputs, _ = broadcast.input_plans(in_descs, out.shape, scalar_inputs(steps),
                                      segmented=True)
    itemsizes = [to_numpy(p.dtype).itemsize for p in inputs if not p.scalar] + [out.itemsize]
    blk = chip.block_elems(min(itemsizes))
    budget = _budget(inputs, out, cdt, steps, config, chip)
    lanes = chip.lanes(2)
    blocks = ceil_div(out.shape[-1], blk)
    most = largest_fit(lambda n: budget.bytes(chip, n * blk, round_up(n * blk, lanes)),
                       chip.ub_bytes, blocks)
    if not most:
        raise DoesNotFit(f"no row segment of {blk} elements fits in {chip.ub_bytes} bytes of "
                         f"UB at {config.buffers} buffers")
    pad = round_up(ceil_div(out.shape[-1], ceil_div(blocks, most)), blk)
    tile = _tuned(budget.tile(chip, pad), config, chip)
    pad = min(pad, tile // blk * blk)
    return dict(tile=tile // pad, inputs=inputs, row_pad=pad, segment=pad)


# ---------------------------------------------------------------- the device kernel

class FlatTile(NamedTuple):
    offset: int      # first output element of the tile within the block's range
    count: int  # type: ignore[assignment]  # elements (the field shadows tuple.count)


class RowTile(NamedTuple):
    row: int         # first output row
    rows: int
    col: int         # first element of the last dim
    width: int       # elements of the last dim in each UB row
    count: int  # type: ignore[assignment]  # elements in UB: rows x the padded width


class ElementwiseKernel:
    """One block of an elementwise program over a contiguous range of the output."""

    def __init__(self, ctx: KernelContext, srcs: list, dst: asc.GlobalTensor) -> None:
        """Init: the pipe, a queue per streamed input and the output's, scratch in the compute
        dtype, the scalar operands read, the inputs built once."""
        tiling: ElementwiseTiling = ctx.tiling
        self.tiling, self.ctx, self.srcs, self.dst = tiling, ctx, srcs, dst
        self.cdt = to_numpy(tiling.compute_dtype)
        self.lanes = ctx.chip.lanes(2)      # float16 lanes: the tile's rounding unit
        self.pipe = asc.TPipe()
        self.gaps = iter(tiling.gaps)      # the host's bank-aware placement (_placed)
        cap = self.capacity
        buffers = tiling.config.buffers
        self.queues = {}
        for i, p in enumerate(tiling.inputs):
            if not (p.scalar or p.once):
                self.queues[i] = asc.TQue(asc.TPosition.VECIN)
                pad(self.pipe, next(self.gaps, 0))
                self.pipe.init_buffer(self.queues[i], buffers, cap * to_numpy(p.dtype).itemsize)
        self.out_q = asc.TQue(asc.TPosition.VECOUT)
        pad(self.pipe, next(self.gaps, 0))
        self.pipe.init_buffer(self.out_q, buffers, cap * to_numpy(tiling.out_dtype).itemsize)
        self.converted = {i: self._scratch(cap * _width(p.dtype, tiling.steps))
                          for i, p in enumerate(tiling.inputs)
                          if i in self.queues and to_numpy(p.dtype) != self.cdt}
        self.out_dtype = to_numpy(tiling.out_dtype)
        many = len(tiling.steps) > 1 or self.out_dtype != self.cdt
        self.results = [self._scratch(cap) for _ in tiling.steps] if many else []
        self.temps = [self._scratch(cap) for _ in range(
            _temps(tiling.steps, tiling.compute_dtype, [p.dtype for p in tiling.inputs]))]
        self.zero_one = self.out_dtype == BOOL and tiling.steps[-1].body.fn is not None
        self.bool_stage = self._scratch(cap).reinterpret(np.float16) \
            if self.zero_one and self.cdt != F16 else None
        self.wide = WideScratch(self.pipe, cap) if _converts_wide(
            [p.dtype for p in tiling.inputs if p.dtype], tiling.out_dtype, tiling.steps) else None
        values = read_scalars(self.pipe, ctx.chip, {i: srcs[i] for i, p in
                                                    enumerate(tiling.inputs)
                                                    if p.scalar and srcs[i] is not None})
        self.program = resolve_program(tiling.steps, values)
        self.constants = {i: self._constant(i, cap) for i, p in enumerate(tiling.inputs)
                          if p.once}

    @property
    def capacity(self) -> int:
        """Elements of each tile buffer."""
        return self.tiling.tile

    def process(self) -> None:
        start = self.ctx.block_idx * self.tiling.per_core
        length = min(self.tiling.per_core, self.tiling.total - start)
        self.windows = {i: self.srcs[i].window(start, length) for i in self.queues}
        self.out_window = self.dst.window(start, length)
        for offset in range(0, length, self.tiling.tile):
            tile = FlatTile(offset, min(self.tiling.tile, length - offset))
            self.copy_in(tile)
            self.compute(tile)
            self.copy_out(tile)

    def copy_in(self, tile: FlatTile | RowTile) -> None:
        assert isinstance(tile, FlatTile)
        for i, q in self.queues.items():
            x = q.alloc_tensor(to_numpy(self.tiling.inputs[i].dtype))
            copy(x, self.windows[i][tile.offset], tile.count)
            q.enque(x)

    def compute(self, tile: FlatTile | RowTile) -> None:
        """The program's steps on the tile, in the compute dtype; the result converted to the
        output type (Cast's round mode) into the output queue."""
        queued = {i: q.deque() for i, q in self.queues.items()}
        loaded: dict[int, asc.LocalTensor | Words] = {**queued, **self.constants}
        count = tile.count
        nv = round_up(count, self.lanes)
        values = [None if p.scalar else
                  self._to_compute(queued[i], p.dtype, nv, self.converted[i])
                  if i in self.converted else loaded[i]
                  for i, p in enumerate(self.tiling.inputs)]
        y = self.out_q.alloc_tensor(self.out_dtype)
        for k, (fn, args, attrs) in enumerate(self.program):
            xs = [values[a] for a in args]
            if fn is None:                       # identity (Cast): the conversion out is the op
                values.append(xs[0])
                continue
            out = self.results[k] if self.results else y
            fn(BodyArgs(out, xs, self.temps, count, nv, attrs))
            values.append(out)
        result = values[-1]
        assert isinstance(result, asc.LocalTensor)  # a step's output: no scalar, no words
        if result is not y:
            self._to_output(y, result, count)
        self.out_q.enque(y)
        for i, q in self.queues.items():
            q.free_tensor(queued[i])

    def copy_out(self, tile: FlatTile | RowTile) -> None:
        assert isinstance(tile, FlatTile)
        y = self.out_q.deque()
        copy(self.out_window[tile.offset], y, tile.count)
        self.out_q.free_tensor(y)

    # ---- conversions and buffers ----
    def _to_compute(self, src: asc.LocalTensor, dtype: str, count: int,
                    into: asc.LocalTensor) -> asc.LocalTensor | Words:
        """`src` in the compute dtype, converted into `into` when it is another type. A bool
        input becomes float16 0/1 whatever the compute dtype: it only ever feeds a compare.
        An int64 input of a comparison becomes its words (`into` holds two elements each)."""
        d = to_numpy(dtype)
        if _words(dtype, self.tiling.steps):
            return wide_casts.int64_to_words(into.reinterpret(np.int32), src, count)
        if d == np.dtype(np.int64):
            assert self.wide is not None            # _converts_wide saw the int64 input
            convert_in(into, src, count, self.wide)
            return into
        if d == np.dtype(np.bool_):
            half = into.reinterpret(np.float16)
            asc.cast(half, src.reinterpret(np.uint8), asc.RoundMode.CAST_NONE, count)
            return half
        if d == self.cdt:
            return src
        asc.cast(into, src, asc.RoundMode.CAST_NONE, count)
        return into

    def _to_output(self, y: asc.LocalTensor, result: asc.LocalTensor, count: int) -> None:
        if self.zero_one and result.dtype != BOOL:
            self._to_bool(y, result, count)
        elif self.out_dtype in (np.dtype(np.int64), BOOL) and result.dtype != self.out_dtype:
            assert self.wide is not None            # _converts_wide saw the output
            convert_out(y, result, count, round_up(count, self.lanes), self.wide)
        elif self.out_dtype == result.dtype == np.dtype(np.int64):   # a copy, bit for bit
            asc.adds(y.reinterpret(np.int32), result.reinterpret(np.int32), 0, 2 * count)
        elif self.out_dtype == result.dtype:
            asc.adds(y, result, 0, count)
        elif result.dtype == np.float16 and self.out_dtype == np.float32:   # a bool input
            asc.cast(y, result, asc.RoundMode.CAST_NONE, count)
        else:
            asc.cast(y, result, getattr(asc.RoundMode, self.tiling.out_round), count)

    def _to_bool(self, y: asc.LocalTensor, result: asc.LocalTensor, count: int) -> None:
        """A 0/1 result (a comparison, a logical op) to bool bytes: through float16, which
        casts to uint8 (an int32 result first becomes float32 in place)."""
        if self.cdt == I32:
            asc.cast(result.reinterpret(np.float32), result, asc.RoundMode.CAST_NONE, count)
            result = result.reinterpret(np.float32)
        if result.dtype != F16:
            assert self.bool_stage is not None      # set up when the compute dtype is not F16
            asc.cast(self.bool_stage, result, asc.RoundMode.CAST_RINT, count)
            result = self.bool_stage
        asc.cast(y.reinterpret(np.uint8), result, asc.RoundMode.CAST_NONE, count)

    def _scratch(self, count: int) -> asc.LocalTensor:
        """A compute-dtype buffer; the placed ones (until the gaps run out) after their gap."""
        pad(self.pipe, next(self.gaps, 0))
        buf = asc.TBuf()
        self.pipe.init_buffer(buf, count * self.cdt.itemsize)
        return buf.get(self.cdt)

    def _constant(self, i: int, cap: int) -> asc.LocalTensor | Words:
        """An input the same for every row (one element, or one row), converted once and
        spread over a tile."""
        tiling, p = self.tiling, self.tiling.inputs[i]
        dtype = to_numpy(p.dtype)
        width = max(tiling.row_pad, self.lanes)
        words = _width(p.dtype, tiling.steps)
        stage, conv_stage = asc.TBuf(), asc.TBuf()
        self.pipe.init_buffer(stage, width * dtype.itemsize)
        self.pipe.init_buffer(conv_stage, width * words * self.cdt.itemsize)
        raw = stage.get(dtype)
        n = 1 if p.last_broadcast else tiling.out_shape[-1]
        asc.data_copy_pad(raw, self.srcs[i], asc.DataCopyExtParams(1, n * dtype.itemsize, 0, 0))
        if words > 1 and p.last_broadcast:       # the high words' first block: 8 elements
            asc.data_copy_pad(raw[self.ctx.chip.block_elems(dtype.itemsize)], self.srcs[i],
                              asc.DataCopyExtParams(1, dtype.itemsize, 0, 0))
        asc.set_flag(asc.HardEvent.MTE2_V, 0)
        asc.wait_flag(asc.HardEvent.MTE2_V, 0)
        row = self._to_compute(raw, p.dtype, width, conv_stage.get(self.cdt))
        if isinstance(row, Words):                         # each half spread on its own
            buf = self._scratch(cap * words).reinterpret(np.int32)
            spread_words = Words(buf, buf[cap])
            for half, part in zip(spread_words, row):
                self.fill_constant(half, part, cap, p)
            return spread_words
        buf = self._scratch(cap).reinterpret(row.dtype)   # float16 for a bool condition
        self.fill_constant(buf, row, cap, p)
        return buf

    def fill_constant(self, buf: asc.LocalTensor, row: asc.LocalTensor, cap: int,
                      p: InputPlan) -> None:
        spread(buf, row, cap)                    # one element over a flat tile


class RowKernel(ElementwiseKernel):
    """The row layout (some input broadcasts): tiles of whole output rows, or of segments of
    rows too long for a tile, in padded row layout."""

    def __init__(self, ctx: KernelContext, srcs: list, dst: asc.GlobalTensor) -> None:
        """Init as the flat kernel, plus the event id that orders a row's spread after its
        copy-in (a flag of its own: the queues' ids are taken by their enque/deque)."""
        super().__init__(ctx, srcs, dst)
        spreads = any(self.tiling.inputs[i].last_broadcast for i in self.queues)
        self.spread_event = self.pipe.alloc_event_id(asc.HardEvent.MTE2_V) if spreads else -1

    @property
    def capacity(self) -> int:
        return self.tiling.tile * self.tiling.row_pad + self.lanes

    def block_rows(self) -> tuple[int, int]:
        tiling = self.tiling
        n_rows = tiling.total // tiling.out_shape[-1]
        first = self.ctx.block_idx * tiling.per_core
        return first, min(first + tiling.per_core, n_rows)

    def fill_constant(self, buf: asc.LocalTensor, row: asc.LocalTensor, cap: int,
                      p: InputPlan) -> None:
        tiling = self.tiling
        first, last = self.block_rows()
        rows = min(tiling.tile, last - first)
        if p.last_broadcast:
            spread(buf, row, rows * tiling.row_pad)
        else:
            for r in range(rows):
                asc.adds(buf[r * tiling.row_pad], row, 0, tiling.row_pad)

    def process(self) -> None:
        tiling = self.tiling
        n_last = tiling.out_shape[-1]
        first, last = self.block_rows()
        for r0 in range(first, last, tiling.tile):
            k = min(tiling.tile, last - r0)
            for c0 in range(0, n_last, tiling.segment):
                tile = RowTile(r0, k, c0, min(tiling.segment, n_last - c0), k * tiling.row_pad)
                self.copy_in(tile)
                self.compute(tile)
                self.copy_out(tile)

    def copy_in(self, tile: FlatTile | RowTile) -> None:
        assert isinstance(tile, RowTile)
        for i, q in self.queues.items():
            p = self.tiling.inputs[i]
            x = q.alloc_tensor(to_numpy(p.dtype))
            broadcast.copy_rows_in(x, self.srcs[i], p, self.tiling.out_shape, tile,
                                   self.tiling.row_pad, self.spread_event)
            q.enque(x)

    def copy_out(self, tile: FlatTile | RowTile) -> None:
        assert isinstance(tile, RowTile)
        y = self.out_q.deque()
        broadcast.copy_rows_out(self.dst, y, self.tiling.out_shape, tile, self.tiling.row_pad)
        self.out_q.free_tensor(y)


def make_kernel(name: str, n_inputs: int) -> Callable[..., None]:
    """The device kernel: `kernel(ctx, *inputs, out)`; what it computes is in the tiling."""

    def kernel(ctx: KernelContext, *gm: asc.GlobalTensor) -> None:
        given = list(gm[:-1])                  # omitted trailing optional inputs: None
        srcs = given + [None] * (n_inputs - len(given))
        kernel_class = RowKernel if ctx.tiling.rows else ElementwiseKernel
        kernel_class(ctx, srcs, gm[-1]).process()

    kernel.__name__ = kernel.__qualname__ = name
    return kernel
