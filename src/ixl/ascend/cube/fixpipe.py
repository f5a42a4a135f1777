"""Fixpipe on PIPE_FIX: L0C out to GM (NZ -> ND, or NZ) or to L1 (NZ), converting on the way
(quantisation, casts, ReLU) [FIX][NZ2ND][QNT][FIXL1].

The source is L0C's NZ matrix of 16 x 16 fractals: row j of column block kb of matrix i is at
element i * src_nd_stride * 1024 / 4 + (kb * src_stride + j) * 16. NZ2ND writes it to
i * dst_nd_stride + j * dst_stride + 16 * kb + c; NZ writes row j of column block kb at byte
16 * j * sizeof(dst) + 32 * kb * dst_stride (int8 merges pairs of column blocks into 16 x 32
fractals; float32 with channel split halves each into two 16 x 8 fractals).

Conversion [QPY]: a value >= 0 is scaled by M1, a negative one by M2 (M1, or 0 with ReLU); the
8-bit modes round, clamp to [-256, 255], add the offset and saturate to int8 / uint8; DEQF16
rounds and saturates to half; F322F16 / F322BF16 round to nearest even. The parameter word:
bits 31:13 the scale (a float32 cut to sign, exponent and 10 mantissa bits), 35:32 a shift N,
36 the shift enable (an int32 shifted right by N and saturated to int16 first), 45:37 a 9-bit
offset, 46 int8 (1) or uint8 (0). Into GM the bytes go through the core's GM port; into L1 at
the Fixpipe's 128 B/cycle [CUBEPERF].
"""

from __future__ import annotations

from functools import lru_cache, partial
from typing import Any

import numpy as np

from ...intmath import ceil_div
from ..errors import IllegalInstruction
from ..gm import GlobalTensor
from ..lockstep import lockstep
from ..observe import Access, Space
from ..pipe import LocalTensor
from ..timeline import Pipe
from .operands import BF16, F16, F32, FRACTAL, I8, I32, U8, U64, local, register_write
from .params import CFG_ROW_MAJOR, FixpipeConfig, FixpipeParamsV220, QuantMode, check
from .unitflag import FIXPIPE_MODES, check_mode

Q = QuantMode
# (source type, quant mode) -> destination types it can produce [FIX]
_CONVERSIONS = {
    (F32, Q.NoQuant): (F32,), (F32, Q.F322F16): (F16,), (F32, Q.F322BF16): (BF16,),
    (F32, Q.QF322B8_PRE): (I8, U8), (F32, Q.VQF322B8_PRE): (I8, U8),
    (I32, Q.NoQuant): (I32,), (I32, Q.DEQF16): (F16,), (I32, Q.VDEQF16): (F16,),
    (I32, Q.REQ8): (I8, U8), (I32, Q.VREQ8): (I8, U8),
}
NZ2ND_MAX_ROWS = 8192      # m_size with NZ2ND [FIX]


def quant_word(scale: float, offset: int = 0, int8: bool = True, shift: int = 0,
               shift_enable: bool = False) -> int:
    """A Fixpipe quantisation parameter (deq_scalar, or one Fixpipe-buffer word per column):
    scale in bits 31:13, shift in 35:32, shift enable in 36, 9-bit offset in 45:37, int8 in 46."""
    bits = int(np.float32(scale).view(np.uint32)) & 0xFFFFE000
    return (bits | (shift & 0xF) << 32 | int(shift_enable) << 36 | (offset & 0x1FF) << 37
            | int(int8) << 46)


def set_fix_pipe_config(params: LocalTensor) -> None:
    """SetFixPipeConfig: the Fixpipe-buffer tensor the per-channel (V) modes read."""
    register_write("set_fix_pipe_config").fixpipe_params = \
        local(params, (Space.FB,), "set_fix_pipe_config", "params")


def fixpipe(dst: Any, src: LocalTensor, params: FixpipeParamsV220,
            config: FixpipeConfig = CFG_ROW_MAJOR) -> None:
    """Fixpipe<dstT, srcT, config>(dst, src, FixpipeParamsV220): dst a GlobalTensor or an L1
    LocalTensor (checked below)."""
    what = "fixpipe"
    src = local(src, (Space.L0C,), what, "src")
    to_gm = isinstance(dst, GlobalTensor)
    if not to_gm:
        dst = local(dst, (Space.L1,), what, "dst (GM or L1)")
    if not isinstance(params, FixpipeParamsV220):
        raise IllegalInstruction(f"{what} takes FixpipeParamsV220, got {type(params).__name__}")
    check(params, what)
    p = params
    check_mode(p.unit_flag, FIXPIPE_MODES, what)
    nz2nd = to_gm and config is CFG_ROW_MAJOR      # into L1 the output is always NZ [FIXL1]
    _check_conversion(src, dst, p, to_gm, nz2nd, what)
    core = src.core
    regs, unit_flags = core.cube_state, core.unit_flags
    assert regs is not None and unit_flags is not None      # L0C is a Cube core's
    core.check_aligned(Space.L0C, src.offset, f"{what} src")
    if not to_gm:
        core.check_aligned(Space.L1, dst.offset, f"{what} dst")
    elif not nz2nd and dst.addr % core.chip.block_bytes:
        raise IllegalInstruction(f"{what}: an NZ output into GM starts 32-byte aligned, got "
                                 f"GM {dst.addr:#x} [FIX]")
    if not (p.n_size and p.m_size and p.nd_num):
        core.issue(Pipe.FIX, what, 0)
        if core.observers:
            core.observe(Pipe.FIX, what, (), ())
        return
    if not p.dst_stride:
        raise IllegalInstruction(f"{what} dst_stride 0: it is the output's row pitch (NZ2ND) "
                                 f"or column-block pitch (NZ), never 0 [FIX]")
    words = _words(core, p, what)
    s_off = _src_offsets(p.nd_num, p.m_size, p.n_size, p.src_stride, p.src_nd_stride * 1024
                         // src.itemsize)
    d_off = _dst_offsets(nz2nd, p.nd_num, p.m_size, p.n_size, p.dst_stride, p.dst_nd_stride,
                         dst.itemsize, p.is_channel_split, core.chip.block_bytes)
    sview = core.local_view(Space.L0C, src.offset, (int(s_off.max()) + 1) * src.itemsize,
                            what).view(src.dtype)
    span = (int(d_off.max()) + 1) * dst.itemsize
    if to_gm:
        dview = dst.region(0, span, core.core_id, "writes", strict=core.mode.debug)
    else:
        dview = core.local_view(Space.L1, dst.offset, span, what)
    nbytes = p.nd_num * p.m_size * p.n_size * dst.itemsize
    if p.unit_flag:
        units = ceil_div(int(s_off.max() + 1) * src.itemsize, core.chip.unit_flag_bytes)
        core.unit_wait(Pipe.FIX, src.offset, p.unit_flag)
    if to_gm:
        grid = core.burst_grid
        rows = p.nd_num * (p.m_size if nz2nd else ceil_div(p.n_size, FRACTAL))
        pitch = p.dst_stride * (dst.itemsize if nz2nd else core.chip.block_bytes)
        aligned = dst.addr % grid == 0 and (rows == 1 or pitch % grid == 0)
        per = rows // p.nd_num        # each matrix: rows of a tile (NZ2ND) or column blocks
        core.gm_move(Pipe.FIX, what, dst, 0, per, nbytes // rows, pitch, write=True,
                     aligned=aligned, bursts=rows, outer=p.nd_num,
                     outer_pitch=p.dst_nd_stride * dst.itemsize,
                     latency=core.costs.fixpipe_head_cycles)
        cycles = None       # the move's own, which L2 decides
    else:
        cycles = core.costs.fixpipe_local(nbytes, "L1")
        core.issue(Pipe.FIX, what, cycles)

    drain = partial(_drain, sview, s_off, d_off, p.quant_pre, words, p.relu_en, dst.dtype)
    if to_gm:
        core.execute_gm(drain, dst, 0, dview)
    else:
        core.execute(partial(drain, dview))
    if p.unit_flag:
        core.unit_done(Pipe.FIX, src.offset, p.unit_flag, units, cycles)
    if core.observers:
        reads = [Access(Space.L0C, src.offset, src.itemsize, s_off, "src")]
        if p.quant_pre.per_channel:
            fb = regs.fixpipe_params
            assert fb is not None                   # _words raised without it
            reads.append(Access(Space.FB, fb.offset, 8, p.n_size, "quant"))
        out = (Access(Space.GM, dst.addr, dst.itemsize, d_off, "dst", tensor=dst) if to_gm
               else Access(Space.L1, dst.offset, dst.itemsize, d_off, "dst"))
        core.observe(Pipe.FIX, what, tuple(reads), (out,), nbytes)
    if p.unit_flag:
        unit_flags.signal(core, Pipe.FIX, src.offset, p.unit_flag)


def _check_conversion(src, dst, p, to_gm, nz2nd, what) -> None:
    allowed = _CONVERSIONS.get((src.dtype, p.quant_pre))
    if allowed is None or dst.dtype not in allowed:
        raise IllegalInstruction(
            f"{what} {src.dtype.name} -> {dst.dtype.name} with quant_pre {p.quant_pre.name}: "
            f"from {src.dtype.name} it converts "
            + "; ".join(f"{q.name} to {'/'.join(d.name for d in ds)}"
                        for (s, q), ds in _CONVERSIONS.items() if s == src.dtype) + " [FIX]")
    if not to_gm and p.quant_pre is Q.NoQuant:
        raise IllegalInstruction(f"{what} into L1 needs a conversion (NoQuant goes to GM "
                                 f"only) [FIXL1]")
    if p.is_channel_split and not (to_gm and not nz2nd and src.dtype == F32 == dst.dtype):
        raise IllegalInstruction(f"{what} channel split: float32 to float32 NZ into GM only "
                                 f"[QNT]")
    unit = 8 if p.is_channel_split else FRACTAL
    if not nz2nd and p.n_size % unit:
        raise IllegalInstruction(f"{what} n_size {p.n_size}: an NZ output takes whole "
                                 f"{unit}-column blocks [FIX]")
    if nz2nd and p.m_size > NZ2ND_MAX_ROWS:
        raise IllegalInstruction(f"{what} m_size {p.m_size} outside [0, {NZ2ND_MAX_ROWS}] "
                                 f"with NZ2ND [FIX]")
    if not nz2nd and p.nd_num != 1:
        raise IllegalInstruction(f"{what} nd_num {p.nd_num}: several matrices in one go are "
                                 f"an NZ2ND feature [NZ2ND]")


def _words(core, p: FixpipeParamsV220, what: str) -> np.ndarray:
    """The parameter word(s): deq_scalar, or one per output column from the Fixpipe buffer."""
    if not p.quant_pre.per_channel:
        return np.asarray([p.deq_scalar], np.uint64)
    fb = core.cube_state.fixpipe_params
    if fb is None:
        raise IllegalInstruction(f"{what} quant_pre {p.quant_pre.name} reads per-column words "
                                 f"from the Fixpipe buffer: set_fix_pipe_config first")
    if fb.dtype != U64:
        raise IllegalInstruction(f"{what}: the Fixpipe buffer holds uint64 words")
    return fb.bytes(0, p.n_size * 8, what).view(U64)


@lru_cache(maxsize=256)
def _src_offsets(nd_num, m, n, src_stride, nd_pitch):
    """L0C elements (nd_num * m, n) read, row by row."""
    c = np.arange(n)
    col = (c // FRACTAL) * src_stride * FRACTAL + c % FRACTAL
    rows = np.arange(nd_num)[:, None] * nd_pitch + np.arange(m)[None, :] * FRACTAL
    return (rows.reshape(-1, 1) + col).astype(np.int64)


@lru_cache(maxsize=256)
def _dst_offsets(nz2nd, nd_num, m, n, dst_stride, dst_nd_stride, isz, split, blk):
    """Destination elements (nd_num * m, n) written, lane by lane with `_src_offsets`."""
    j = np.arange(m)[:, None]
    c = np.arange(n)[None, :]
    if nz2nd:
        offs = np.arange(nd_num)[:, None, None] * dst_nd_stride + j * dst_stride + c
        return offs.reshape(-1, n).astype(np.int64)
    kb, col = c // FRACTAL, c % FRACTAL
    block = dst_stride * blk // isz                 # elements between column blocks
    if split:          # float32: each 16-column block as two 8-column fractals
        half = col // 8
        offs = (2 * kb + half) * block + j * 8 + col % 8
    elif isz == 1:     # int8: pairs of 16-column blocks merged into 16 x 32 fractals
        blocks = ceil_div(n, FRACTAL)
        odd_last = (blocks % 2 == 1) & (kb == blocks - 1)
        merged = (kb // 2) * block + j * 32 + (kb % 2) * 16 + col
        offs = np.where(odd_last, (kb // 2) * block + j * 16 + col, merged)
    else:
        offs = kb * block + j * FRACTAL + col
    return np.broadcast_to(offs, (m, n)).astype(np.int64)


@lockstep
def _drain(src: np.ndarray, s_off: np.ndarray, d_off: np.ndarray, mode: QuantMode,
           words: np.ndarray, relu: bool, dtype: np.dtype, out: np.ndarray) -> None:
    """L0C elements `s_off` converted into elements `d_off` of `out` (bytes) (leading axes:
    cores, lockstep.py)."""
    if words.ndim > 1:            # per-column words from each core's Fixpipe buffer
        words = words.reshape(*words.shape[:-1], *(1,) * (s_off.ndim - 1), words.shape[-1])
    out.view(dtype)[..., d_off] = convert(src[..., s_off], mode, words, relu, dtype)


def convert(values: np.ndarray, mode: QuantMode, words: np.ndarray, relu: bool,
            dst: np.dtype) -> np.ndarray:
    """The Fixpipe's conversion of float32 / int32 L0C values to the destination type; `words`
    is one parameter word, or one per column (the last axis)."""
    if mode is Q.NoQuant:
        return np.maximum(values, 0) if relu else values
    if mode in (Q.F322F16, Q.F322BF16):
        v = np.maximum(values, 0) if relu else values
        return v.astype(dst)
    w = words.astype(np.uint64)
    scale = (w & np.uint64(0xFFFFE000)).astype(np.uint32).view(np.float32)
    v = values
    if values.dtype == I32:
        shift = ((w >> np.uint64(32)) & np.uint64(0xF)).astype(np.int64)
        enabled = ((w >> np.uint64(36)) & np.uint64(1)).astype(bool)
        shifted = np.clip(values.astype(np.int64) >> shift, -32768, 32767)
        v = np.where(enabled, shifted, values)
    v = v.astype(np.float32)
    y = v * np.where(v >= 0, scale, np.float32(0) if relu else scale)
    if mode in (Q.DEQF16, Q.VDEQF16):
        return np.clip(y, -65504, 65504).astype(np.float16)
    off9 = ((w >> np.uint64(37)) & np.uint64(0x1FF)).astype(np.int64)
    offset = np.where(off9 >= 256, off9 - 512, off9)
    signed = ((w >> np.uint64(46)) & np.uint64(1)).astype(bool)
    if np.any(signed != (dst == I8)):
        raise IllegalInstruction(f"fixpipe: the quantisation word says "
                                 f"{'int8' if np.all(signed) else 'uint8'} (bit 46), the "
                                 f"destination is {dst.name}")
    q = np.clip(np.rint(y), -256, 255).astype(np.int64) + offset
    lo, hi = (-128, 127) if dst == I8 else (0, 255)
    return np.clip(q, lo, hi).astype(dst)

