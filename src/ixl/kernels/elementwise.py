"""The elementwise template: tiling, queues, buffering, tails and the core split live here;
each op gives only its compute body.

Canonical shape (R7): each core takes a contiguous range; per tile, copy in (MTE2), compute (V),
copy out (MTE3); buffer count 1, 2 or 4 from the tiling; a tail whose bytes are not a multiple
of 32 goes through data_copy_pad; a zero-length tile is never issued. bfloat16 is a storage
type on the A2 vector unit, so bfloat16 tiles are cast to float32 scratch, computed, and cast
back with round-to-nearest-even.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from ..ascend import lang as asc
from ..ascend.chips import ChipSpec
from ..hixl.dtypes import to_numpy
from ..nixl import KernelContext, LaunchPlan, TensorDesc
from .tiling import split_cores, tile_elements

# body(out, inputs, count): vector instructions over `count` elements of local tensors.
Body = Callable[[asc.LocalTensor, list, int], None]

# dtypes the vector unit computes in directly; others are cast to float32 around the body.
NATIVE_COMPUTE = ("float16", "float32")
DEFAULT_BUFFER_NUM = 2


@dataclass(frozen=True)
class ElementwiseTiling:
    total: int           # elements of the output
    per_core: int        # elements per core (the last core takes the rest)
    tile: int            # elements per tile
    buffer_num: int      # slots per queue: 1 single, 2 double buffering, 4 a 4-slot pipeline
    dtype: str           # storage dtype
    compute_dtype: str   # dtype the body runs in


def compute_dtype(dtype: str) -> str:
    return dtype if dtype in NATIVE_COMPUTE else "float32"


def plan(arity: int, out: TensorDesc, chip: ChipSpec, config: dict | None = None) -> LaunchPlan:
    """Host tiling. `config` may set buffer_num, tile and block_dim (the tuner does)."""
    config = config or {}
    buffer_num = int(config.get("buffer_num", DEFAULT_BUFFER_NUM))
    cdt = compute_dtype(out.dtype)
    c_isz = to_numpy(cdt).itemsize
    scratch = 0 if cdt == out.dtype else c_isz * (arity + 1)
    tile = tile_elements(chip, queued_bytes=out.itemsize * (arity + 1), buffer_num=buffer_num,
                         scratch_bytes=scratch, vector_itemsize=c_isz)
    if "tile" in config:
        lanes = chip.repeat_bytes // c_isz
        wanted = int(config["tile"])
        if wanted <= 0 or wanted > tile or wanted % lanes:
            raise ValueError(f"tile {wanted} must be a positive multiple of {lanes} "
                             f"up to {tile} for {buffer_num} buffers")
        tile = wanted
    block_dim, per_core = split_cores(out.size, chip, out.itemsize, config.get("block_dim"))
    return LaunchPlan(block_dim, ElementwiseTiling(out.size, per_core, tile, buffer_num,
                                                   out.dtype, cdt))


def make_kernel(name: str, arity: int, body: Body):
    """The device kernel for one elementwise op: `kernel(ctx, *inputs, out)` on GM tensors."""

    def kernel(ctx: KernelContext, *gm: asc.GlobalTensor) -> None:
        t: ElementwiseTiling = ctx.tiling
        start = ctx.block_idx * t.per_core
        length = min(t.per_core, t.total - start)
        srcs = [g.window(start, length) for g in gm[:arity]]
        dst = gm[arity].window(start, length)
        dtype, cdtype = to_numpy(t.dtype), to_numpy(t.compute_dtype)
        isz = dtype.itemsize

        pipe = asc.TPipe()
        in_qs = [asc.TQue(asc.TPosition.VECIN) for _ in range(arity)]
        out_q = asc.TQue(asc.TPosition.VECOUT)
        for q in (*in_qs, out_q):
            pipe.init_buffer(q, t.buffer_num, t.tile * isz)
        widen = cdtype != dtype
        if widen:
            scratch = [asc.TBuf() for _ in range(arity + 1)]
            for b in scratch:
                pipe.init_buffer(b, t.tile * cdtype.itemsize)

        for offset in range(0, length, t.tile):
            count = min(t.tile, length - offset)
            for q, src in zip(in_qs, srcs):
                x = q.alloc_tensor(dtype)
                copy_in(x, src[offset], count)
                q.enque(x)
            xs = [q.deque() for q in in_qs]
            y = out_q.alloc_tensor(dtype)
            if widen:
                wide = [b.get(cdtype) for b in scratch]
                for w, x in zip(wide, xs):
                    asc.cast(w, x, asc.RoundMode.CAST_NONE, count)
                body(wide[-1], wide[:-1], count)
                asc.cast(y, wide[-1], asc.RoundMode.CAST_RINT, count)
            else:
                body(y, xs, count)
            out_q.enque(y)
            for q, x in zip(in_qs, xs):
                q.free_tensor(x)
            y = out_q.deque()
            copy_out(dst[offset], y, count)
            out_q.free_tensor(y)

    kernel.__name__ = kernel.__qualname__ = name
    return kernel


def copy_in(local: asc.LocalTensor, src: asc.GlobalTensor, count: int) -> None:
    nbytes = count * local.itemsize
    if nbytes % local.core.chip.block_bytes == 0:
        asc.data_copy(local, src, count)
    else:
        asc.data_copy_pad(local, src, asc.DataCopyExtParams(1, nbytes, 0, 0))


def copy_out(dst: asc.GlobalTensor, local: asc.LocalTensor, count: int) -> None:
    nbytes = count * local.itemsize
    if nbytes % local.core.chip.block_bytes == 0:
        asc.data_copy(dst, local, count)
    else:
        asc.data_copy_pad(dst, local, asc.DataCopyExtParams(1, nbytes, 0, 0))


def same_shapes(in_descs: list[TensorDesc], attrs: dict) -> str | None:
    shapes = {d.shape for d in in_descs}
    if len(shapes) > 1:
        return "broadcasting runs on the shim until the native broadcast path exists"
    if any(d.is_padded for d in in_descs):
        return "padded storage runs on the shim"
    return None


def tile_unit(arity: int):
    def unit(spec, chip: ChipSpec) -> int:
        p = plan(arity, TensorDesc.nd(spec.shape, spec.dtype), chip)
        return p.tiling.tile * chip.aiv_cores
    return unit

