"""The elementwise template: tiling, queues, buffering, tails, broadcasting and the multi-core
split live here; each op gives only its compute body, and a fused kernel is several bodies run
one after the other on the same tile, intermediates staying in UB.

Canonical shape (R7): each core takes a contiguous range of the output; per tile, copy in
(MTE2), compute (V), copy out (MTE3); buffer count 1, 2, 4 or 8 from the tiling; a tail whose
bytes are not a multiple of 32 goes through data_copy_pad; a zero-length tile is never issued.

Dtypes: the A2 vector unit computes float16 and float32. Other storage types are converted on
the way in and out (bfloat16, int32 and bool through casts), and bodies that compose
transcendentals compute half inputs in float32.

Broadcasting (ONNX multidirectional): when an input's shape differs from the output's, tiles
are whole output rows laid out 32-byte padded in UB (as data_copy_pad lays out blocks), and
each input is brought in row by row: an input whose last dim is the output's is copied with
one strided data_copy_pad per run of evenly spaced rows; an input whose last dim is 1 is copied
one element per row (padded to a 32-byte block of that value) and spread along the row with a
block-stride-0 vector copy. An input that is the same for every row (a scalar, or one row) is
built once per kernel in its own buffer.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Callable

import numpy as np

from ..ascend import lang as asc
from ..ascend.chips import ChipSpec
from ..hixl.dtypes import to_numpy
from ..nixl import KernelContext, KernelDeclined, LaunchPlan, TensorDesc
from .tiling import split_cores, tile_elements

DEFAULT_BUFFER_NUM = 2
VECTOR_NATIVE = ("float16", "float32")


# ---------------------------------------------------------------- what an op contributes

class BodyArgs:
    """What a body sees: output and inputs in the compute dtype, scratch tensors, `n` live
    elements of this tile, `nv` = n rounded up to whole repeats (compare and select need
    those), and the step's attributes. (A plain class: one is made per step and tile.)"""

    __slots__ = ("y", "xs", "tmp", "n", "nv", "attrs")

    def __init__(self, y: asc.LocalTensor, xs: list, tmp: list, n: int, nv: int, attrs: dict):
        self.y, self.xs, self.tmp, self.n, self.nv, self.attrs = y, xs, tmp, n, nv, attrs


@dataclass(frozen=True)
class Body:
    """An op's compute body. `fn` is None for an identity (Cast: the conversion on the way
    out is the op). `scalars` names trailing inputs read once as scalar values (Pow's
    exponent, Clip's bounds) and passed in `attrs`."""

    fn: Callable[[BodyArgs], None] | None
    temps: int = 0
    float32: bool = False
    scalars: tuple[str, ...] = ()


@dataclass(frozen=True)
class Step:
    """One body of a program: reads values `args` (kernel inputs first, then step results)."""

    op: str
    body: Body
    args: tuple[int, ...]
    attrs: tuple = ()          # sorted (name, value) pairs


@dataclass(frozen=True)
class InputPlan:
    dtype: str
    shape: tuple[int, ...]
    strides: tuple[int, ...]   # element strides aligned to the output's dims, 0 where broadcast
    scalar: bool = False       # read once as a value (a Body's `scalars`)
    once: bool = False         # built once per block in its own buffer, not streamed

    @property
    def constant(self) -> bool:
        """The same data for every output row: a scalar or a single broadcast row."""
        return all(s == 0 for s in self.strides[:-1])

    @property
    def last_broadcast(self) -> bool:
        return bool(self.strides) and self.strides[-1] == 0


@dataclass(frozen=True)
class ElementwiseTiling:
    total: int             # elements of the output
    per_core: int          # output elements (flat) or rows (row layout) per core
    tile: int              # elements per tile (flat) or rows per tile (row layout)
    buffer_num: int        # slots per queue: 1 single, 2 double buffering, 4 a 4-slot pipeline
    out_dtype: str
    compute_dtype: str
    out_shape: tuple[int, ...]
    inputs: tuple[InputPlan, ...]
    steps: tuple[Step, ...]
    rows: bool = False     # row layout (some input broadcasts)
    row_pad: int = 0       # elements per UB row (the last dim padded to 32 bytes)
    out_round: str = "CAST_RINT"


# ---------------------------------------------------------------- host tiling

def broadcast_strides(shape: tuple[int, ...], out: tuple[int, ...]) -> tuple[int, ...]:
    """Element strides of `shape` seen through `out`'s dims (numpy broadcasting)."""
    padded = (1,) * (len(out) - len(shape)) + tuple(shape)
    strides, step = [], 1
    for d in reversed(padded):
        strides.append(0 if d == 1 else step)
        step *= d
    return tuple(reversed(strides)) if out else ()


def compute_dtype(dtypes: list[str], steps: tuple[Step, ...]) -> str:
    wide = any(s.body.float32 for s in steps) or any(
        d not in ("float16", "bool") for d in dtypes)
    return "float32" if wide else "float16"


def plan(in_descs: list, out: TensorDesc, chip: ChipSpec, steps: tuple[Step, ...],
         config: dict | None = None, out_round: str = "CAST_RINT") -> LaunchPlan:
    """Host tiling for a program of steps. `config` may set buffer_num, block_dim, and tile
    (elements) or tile_div (a fraction of the largest tile that fits)."""
    config = config or {}
    buffer_num = int(config.get("buffer_num", DEFAULT_BUFFER_NUM))
    scalar_ids = _scalar_inputs(steps)
    inputs = tuple(InputPlan("", (), (), True) if d is None else
                   InputPlan(d.dtype, d.shape, broadcast_strides(d.shape, out.shape),
                             i in scalar_ids) for i, d in enumerate(in_descs))
    streamed = [p for p in inputs if not p.scalar]
    # A single element broadcast over the output is built once (any layout); any other
    # broadcast needs the row layout, where every input the same for all rows is built once.
    single = [p.shape != out.shape and math.prod(p.shape) == 1 for p in streamed]
    rows = any(p.shape != out.shape and not one for p, one in zip(streamed, single))
    once = {id(p) for p, one in zip(streamed, single) if one or (rows and p.constant)}
    inputs = tuple(replace(p, once=id(p) in once) for p in inputs)
    streamed = [p for p in inputs if not p.scalar]
    queues = sum(1 for p in streamed if not p.once)
    if queues * buffer_num > chip.event_ids_per_position:
        raise ValueError(f"{queues} input queues x {buffer_num} buffers need "
                         f"{queues * buffer_num} event ids; VECIN has "
                         f"{chip.event_ids_per_position} on {chip.name}")
    cdt = compute_dtype([p.dtype for p in inputs if p.dtype] + [out.dtype], steps)
    c_isz = to_numpy(cdt).itemsize
    queued = sum(to_numpy(p.dtype).itemsize for p in streamed if not p.once) + out.itemsize
    scratch = c_isz * (_scratch_count(inputs, out.dtype, cdt, steps)) \
        + sum(c_isz for p in streamed if p.once)
    lanes = chip.repeat_bytes // 2      # whole float16 repeats: whole float32 repeats too
    per_element = queued * buffer_num + scratch
    reserved = chip.block_bytes * sum(p.scalar for p in inputs)
    row_pad = 0
    if rows:
        blk = chip.block_bytes // min(to_numpy(d).itemsize for d in
                                      [p.dtype for p in streamed] + [out.dtype])
        row_pad = -(-out.shape[-1] // blk) * blk
        reserved += lanes * per_element              # one repeat of slack per buffer
    reserved += sum(max(row_pad, lanes) * (to_numpy(p.dtype).itemsize + c_isz)
                    for p in streamed if p.once)     # staging of what is built once
    tile = tile_elements(chip, queued_bytes=queued, buffer_num=buffer_num,
                         scratch_bytes=scratch, vector_itemsize=2, reserved_bytes=reserved)
    if "tile_div" in config:
        tile = max(lanes, tile // int(config["tile_div"]) // lanes * lanes)
    if "tile" in config:
        wanted = int(config["tile"])
        if wanted <= 0 or wanted > tile or wanted % lanes:
            raise ValueError(f"tile {wanted} must be a positive multiple of {lanes} "
                             f"up to {tile} for {buffer_num} buffers")
        tile = wanted
    base = dict(total=out.size, buffer_num=buffer_num, out_dtype=out.dtype, compute_dtype=cdt,
                out_shape=out.shape, inputs=inputs, steps=steps, out_round=out_round)
    if not rows:
        block_dim, per_core = split_cores(out.size, chip, out.itemsize, config.get("block_dim"))
        return LaunchPlan(block_dim, ElementwiseTiling(per_core=per_core, tile=tile, **base))
    n_last = out.shape[-1]
    rows_per_tile = tile // row_pad
    if rows_per_tile == 0:
        raise KernelDeclined(f"broadcasting over rows of {n_last} elements: a padded row "
                             f"({row_pad}) is longer than a tile ({tile})")
    n_rows = out.size // n_last if n_last else 0
    cores = min(int(config.get("block_dim", chip.aiv_cores)), chip.aiv_cores)
    per_core = -(-n_rows // cores) if n_rows else 0
    block_dim = -(-n_rows // per_core) if per_core else 0
    return LaunchPlan(block_dim, ElementwiseTiling(per_core=per_core, tile=rows_per_tile,
                                                   rows=True, row_pad=row_pad, **base))


def _scalar_inputs(steps: tuple[Step, ...]) -> set[int]:
    out = set()
    for s in steps:
        if s.body.scalars:
            out.update(s.args[-len(s.body.scalars):])
    return out


def _scratch_count(inputs, out_dtype: str, cdt: str, steps) -> int:
    """Compute-dtype buffers besides the queues: converted inputs, step results, temps."""
    converted = sum(1 for p in inputs if not p.scalar and p.dtype != cdt)
    results = len(steps) if (len(steps) > 1 or out_dtype != cdt) else 0
    return converted + results + max((s.body.temps for s in steps), default=0)


# ---------------------------------------------------------------- the device kernel

def make_kernel(name: str, n_inputs: int):
    """The device kernel: `kernel(ctx, *inputs, out)`; what it computes is in the tiling."""

    def kernel(ctx: KernelContext, *gm: asc.GlobalTensor) -> None:
        given = list(gm[:-1])                  # omitted trailing optional inputs: None
        _Run(ctx, given + [None] * (n_inputs - len(given)), gm[-1]).run()

    kernel.__name__ = kernel.__qualname__ = name
    return kernel


class _Run:
    """One block of an elementwise program: buffers, then the tile loop."""

    def __init__(self, ctx: KernelContext, srcs, dst):
        self.t: ElementwiseTiling = ctx.tiling
        self.ctx = ctx
        self.srcs, self.dst = srcs, dst
        self.cdt = to_numpy(self.t.compute_dtype)
        self.lanes = ctx.chip.repeat_bytes // 2     # float16 lanes: the tile's rounding unit
        self.pipe = asc.TPipe()

    # ---- buffers ----
    def _scratch(self, count: int) -> asc.LocalTensor:
        b = asc.TBuf()
        self.pipe.init_buffer(b, count * self.cdt.itemsize)
        return b.get(self.cdt)

    def run(self) -> None:
        t = self.t
        tile_elems = t.tile * t.row_pad if t.rows else t.tile
        cap = tile_elems + (self.lanes if t.rows else 0)
        self.queues = {}
        for i, p in enumerate(t.inputs):
            if p.scalar or p.once:
                continue
            q = asc.TQue(asc.TPosition.VECIN)
            self.pipe.init_buffer(q, t.buffer_num, cap * to_numpy(p.dtype).itemsize)
            self.queues[i] = q
        self.out_q = asc.TQue(asc.TPosition.VECOUT)
        self.pipe.init_buffer(self.out_q, t.buffer_num, cap * to_numpy(t.out_dtype).itemsize)
        self.converted = {i: self._scratch(cap) for i, p in enumerate(t.inputs)
                          if i in self.queues and to_numpy(p.dtype) != self.cdt}
        many = len(t.steps) > 1 or to_numpy(t.out_dtype) != self.cdt
        self.results = [self._scratch(cap) for _ in t.steps] if many else []
        self.temps = [self._scratch(cap) for _ in range(max(s.body.temps for s in t.steps))]
        self.values = self._read_scalars()
        self.program = resolve_program(self.t.steps, self.values)
        self.out_dtype = to_numpy(t.out_dtype)
        self.constants = {i: self._constant_rows(i, cap) for i, p in enumerate(t.inputs)
                          if p.once}
        if t.rows:
            self._row_tiles()
        else:
            self._flat_tiles()

    # ---- scalars and constant rows, once per block ----
    def _read_scalars(self) -> dict[int, float]:
        return read_scalars(self.pipe, self.ctx.chip,
                            {i: self.srcs[i] for i, p in enumerate(self.t.inputs)
                             if p.scalar and self.srcs[i] is not None})

    def _constant_rows(self, i: int, cap: int) -> asc.LocalTensor:
        """A scalar or single-row input, converted once and spread over a tile of rows."""
        t, p = self.t, self.t.inputs[i]
        dtype = to_numpy(p.dtype)
        width = max(t.row_pad, self.lanes)
        stage, conv_stage = asc.TBuf(), asc.TBuf()
        self.pipe.init_buffer(stage, width * dtype.itemsize)
        self.pipe.init_buffer(conv_stage, width * self.cdt.itemsize)
        raw = stage.get(dtype)
        n = 1 if p.last_broadcast else t.out_shape[-1]
        asc.data_copy_pad(raw, self.srcs[i], asc.DataCopyExtParams(1, n * dtype.itemsize, 0, 0))
        asc.set_flag(asc.HardEvent.MTE2_V, 0)
        asc.wait_flag(asc.HardEvent.MTE2_V, 0)
        row = self._to_compute(raw, p.dtype, width, conv_stage.get(self.cdt))
        buf = self._scratch(cap).reinterpret(row.dtype)   # float16 for a bool condition
        if not t.rows:                             # one element over a flat tile
            self._spread(buf, row, cap)
            return buf
        first, last = self._block_rows()
        rows = min(t.tile, last - first)
        if p.last_broadcast:
            self._spread(buf, row, rows * t.row_pad)
        else:
            for r in range(rows):
                asc.adds(buf[r * t.row_pad], row, 0, t.row_pad)
        return buf

    def _block_rows(self) -> tuple[int, int]:
        t = self.t
        n_rows = t.total // t.out_shape[-1]
        first = self.ctx.block_idx * t.per_core
        return first, min(first + t.per_core, n_rows)

    def _to_compute(self, src: asc.LocalTensor, dtype: str, count: int,
                    into: asc.LocalTensor) -> asc.LocalTensor:
        """`src` in the compute dtype, converted into `into` when it is another type. A bool
        input becomes float16 0/1 whatever the compute dtype: it only ever feeds a compare."""
        d = to_numpy(dtype)
        if d == np.dtype(np.bool_):
            half = into.reinterpret(np.float16)
            asc.cast(half, src.reinterpret(np.uint8), asc.RoundMode.CAST_NONE, count)
            return half
        if d == self.cdt:
            return src
        asc.cast(into, src, asc.RoundMode.CAST_NONE, count)
        return into

    def _spread(self, dst: asc.LocalTensor, block: asc.LocalTensor, count: int) -> None:
        """Fill `count` elements (rounded up to whole repeats) of dst with the 32-byte block
        at `block`, which holds one value."""
        lanes = self.ctx.chip.repeat_bytes // dst.itemsize
        repeats = -(-count // lanes)
        limit = self.ctx.chip.max_repeat
        params = asc.UnaryRepeatParams(dst_blk_stride=1, src_blk_stride=0,
                                       dst_rep_stride=8, src_rep_stride=0)
        for first in range(0, repeats, limit):
            asc.adds(dst[first * lanes], block, 0, lanes, min(limit, repeats - first), params)

    # ---- flat tiles: every streamed input has the output's shape ----
    def _flat_tiles(self) -> None:
        t, ctx = self.t, self.ctx
        start = ctx.block_idx * t.per_core
        length = min(t.per_core, t.total - start)
        streams = [(i, q, self.srcs[i].window(start, length), to_numpy(t.inputs[i].dtype))
                   for i, q in self.queues.items()]
        dst = self.dst.window(start, length)
        for offset in range(0, length, t.tile):
            count = min(t.tile, length - offset)
            loaded = {}
            for i, q, src, dtype in streams:
                x = q.alloc_tensor(dtype)
                _copy_in(x, src[offset], count)
                q.enque(x)
            for i, q in self.queues.items():
                loaded[i] = q.deque()
            loaded.update(self.constants)
            y = self._compute(loaded, count)
            for i, q in self.queues.items():
                q.free_tensor(loaded[i])
            y = self.out_q.deque()
            _copy_out(dst[offset], y, count)
            self.out_q.free_tensor(y)

    # ---- row tiles: some input broadcasts ----
    def _row_tiles(self) -> None:
        t, ctx = self.t, self.ctx
        n_last = t.out_shape[-1]
        first, last = self._block_rows()
        for r0 in range(first, last, t.tile):
            k = min(t.tile, last - r0)
            loaded = {}
            for i, q in self.queues.items():
                x = q.alloc_tensor(to_numpy(t.inputs[i].dtype))
                self._rows_in(i, x, r0, k)
                q.enque(x)
            for i, q in self.queues.items():
                loaded[i] = q.deque()
            for i, buf in self.constants.items():
                loaded[i] = buf
            y = self._compute(loaded, k * t.row_pad)
            for i, q in self.queues.items():
                q.free_tensor(loaded[i])
            y = self.out_q.deque()
            nbytes = n_last * y.itemsize
            gap = (t.row_pad * y.itemsize - _ceil_block(nbytes, ctx.chip)) // ctx.chip.block_bytes
            asc.data_copy_pad(self.dst[r0 * n_last], y, asc.DataCopyExtParams(k, nbytes, gap, 0))
            self.out_q.free_tensor(y)

    def _rows_in(self, i: int, x: asc.LocalTensor, r0: int, k: int) -> None:
        """Rows r0..r0+k of input i, in padded row layout (last-dim-broadcast inputs spread)."""
        t, p = self.t, self.t.inputs[i]
        offsets = _row_offsets(p, t.out_shape, r0, k)
        isz = x.itemsize
        width = 1 if p.last_broadcast else t.out_shape[-1]
        block_elems = self.ctx.chip.block_bytes // isz
        ub_pitch = block_elems if p.last_broadcast else t.row_pad
        ub_gap = (ub_pitch * isz - _ceil_block(width * isz, self.ctx.chip)) \
            // self.ctx.chip.block_bytes
        for start, count, pitch in _runs(offsets):
            gm_gap = (pitch - width) * isz if count > 1 else 0
            asc.data_copy_pad(x[start * ub_pitch], self.srcs[i][int(offsets[start])],
                              asc.DataCopyExtParams(count, width * isz, gm_gap, ub_gap))
        if p.last_broadcast:
            asc.set_flag(asc.HardEvent.MTE2_V, 1)
            asc.wait_flag(asc.HardEvent.MTE2_V, 1)
            self._spread_rows(x, k)

    def _spread_rows(self, x: asc.LocalTensor, k: int) -> None:
        """Row r's value fills block r; spread each over its padded row, last row first, so
        no block is overwritten before it is read (a row is at least one block wide). The
        copy adds 0 to the bits as integers, so any storage type spreads exactly."""
        bits = np.dtype(np.int32 if x.itemsize == 4 else np.int16)
        width = self.t.row_pad * x.itemsize // bits.itemsize
        x = x.reinterpret(bits)
        lanes = self.ctx.chip.repeat_bytes // x.itemsize
        block = self.ctx.chip.block_bytes // x.itemsize
        full, tail = divmod(width, lanes)
        params = asc.UnaryRepeatParams(dst_blk_stride=1, src_blk_stride=0,
                                       dst_rep_stride=8, src_rep_stride=0)
        for r in reversed(range(k)):
            src = x[r * block]
            if full:
                asc.adds(x[r * width], src, 0, lanes, full, params)
            if tail:
                asc.adds(x[r * width + full * lanes], src, 0, tail, 1, params)

    # ---- compute: the program's steps on one tile ----
    def _compute(self, loaded: dict, count: int) -> asc.LocalTensor:
        t = self.t
        nv = -(-count // self.lanes) * self.lanes
        values = [None if p.scalar else
                  self._to_compute(loaded[i], p.dtype, nv, self.converted[i])
                  if i in self.converted else loaded[i]
                  for i, p in enumerate(t.inputs)]
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
        if result is not y:
            if self.out_dtype == self.cdt:
                asc.adds(y, result, 0, count)
            else:
                asc.cast(y, result, getattr(asc.RoundMode, t.out_round), count)
        self.out_q.enque(y)
        return y


def read_scalars(pipe: asc.TPipe, chip: ChipSpec, srcs: dict) -> dict:
    """Scalar operands (input id -> one-element GM tensor): each into its own UB block, then
    read by the scalar unit after an MTE2 -> S flag."""
    if not srcs:
        return {}
    blocks = asc.TBuf()
    pipe.init_buffer(blocks, chip.block_bytes * len(srcs))
    values = {}
    for k, (i, src) in enumerate(srcs.items()):
        local = blocks.get(np.uint8)[k * chip.block_bytes].reinterpret(src.dtype)
        asc.data_copy_pad(local, src, asc.DataCopyExtParams(1, src.dtype.itemsize, 0, 0))
        asc.set_flag(asc.HardEvent.MTE2_S, 0)
        asc.wait_flag(asc.HardEvent.MTE2_S, 0)
        values[i] = local.get_value(0)
    return values


def resolve_program(steps, values: dict) -> list[tuple]:
    """Per step, once per block: body, data value ids, attributes with the scalar operands'
    values filled in."""
    out = []
    for step in steps:
        n_data = len(step.args) - len(step.body.scalars)
        attrs = dict(step.attrs)
        attrs.update((name, values.get(vid))
                     for name, vid in zip(step.body.scalars, step.args[n_data:]))
        out.append((step.body.fn, step.args[:n_data], attrs))
    return out


def _ceil_block(nbytes: int, chip: ChipSpec) -> int:
    return -(-nbytes // chip.block_bytes) * chip.block_bytes


def _row_offsets(p: InputPlan, out_shape: tuple[int, ...], r0: int, k: int) -> np.ndarray:
    """Element offset in input p of the first element of output rows r0..r0+k."""
    outer = out_shape[:-1]
    idx = np.unravel_index(np.arange(r0, r0 + k), outer) if outer else ()
    off = np.zeros(k, np.int64)
    for d, stride in zip(idx, p.strides[:-1]):
        off += d * stride
    return off


def _runs(offsets: np.ndarray) -> list[tuple[int, int, int]]:
    """(start, count, pitch) runs of evenly increasing offsets (pitch > 0) or single rows."""
    runs, i, n = [], 0, len(offsets)
    while i < n:
        j = i + 1
        pitch = int(offsets[j] - offsets[i]) if j < n else 0
        if pitch > 0:
            while j + 1 < n and offsets[j + 1] - offsets[j] == pitch:
                j += 1
            j += 1
        runs.append((i, j - i, pitch))
        i = j
    return runs


def _copy_in(local: asc.LocalTensor, src: asc.GlobalTensor, count: int) -> None:
    nbytes = count * local.itemsize
    if nbytes % local.core.chip.block_bytes == 0:
        asc.data_copy(local, src, count)
    else:
        asc.data_copy_pad(local, src, asc.DataCopyExtParams(1, nbytes, 0, 0))


def _copy_out(dst: asc.GlobalTensor, local: asc.LocalTensor, count: int) -> None:
    nbytes = count * local.itemsize
    if nbytes % local.core.chip.block_bytes == 0:
        asc.data_copy(dst, local, count)
    else:
        asc.data_copy_pad(dst, local, asc.DataCopyExtParams(1, nbytes, 0, 0))


