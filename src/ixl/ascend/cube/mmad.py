"""Mmad on PIPE_M: C (L0C, NZ) = A (L0A, ZZ) . B (L0B, ZN) [+ C | + bias] [MMAD].

m, n, k are the valid sizes (0 is a no-op; padding lanes are neither read nor written). A
half, bfloat16 or float input accumulates in float32, int8 in int32 (saturating). With m = 1 the
Cube runs as a GEMV: A is read as a contiguous 1 x K vector, and each 16 columns of C take a
whole 16 x 16 fractal of which only row 0 is written [GEMV]. Float32 inputs run at 4 K per
cycle, or at 8 as HF32 after set_hf32_mode(True), which rounds their mantissas to 11 bits first
[HF32][HI-ATC]. Cycles: head + ceil(m/16) ceil(n/16) ceil(k/k0) [CUBEPERF].
"""

from __future__ import annotations

from functools import partial
from typing import Any

import numpy as np

from ...intmath import round_up
from ..errors import IllegalInstruction
from ..lockstep import lockstep
from ..observe import Access, Space
from ..pipe import LocalTensor
from ..timeline import Pipe
from .operands import (
    BF16,
    F16,
    F32,
    FRACTAL,
    I8,
    I32,
    local,
    nz_offsets,
    register_write,
    zn_offsets,
    zz_offsets,
)
from .params import MmadParams, check
from .unitflag import MMAD_MODES, check_mode

# (A, B) input type -> the L0C type it accumulates in [MMAD]
_ACCUMULATOR = {F16: F32, BF16: F32, F32: F32, I8: I32}
_K0_KIND = {F16: "float16", BF16: "bfloat16", F32: "float32", I8: "int8"}
HF32_MANTISSA = 11       # HF32 on A2: float32's exponent, 11 mantissa bits [HI-ATC]


def set_hf32_mode(enable: bool) -> None:
    """SetHF32Mode: later float32 Mmads round their inputs to HF32 and run twice as fast."""
    register_write("set_hf32_mode").hf32 = bool(enable)


def set_hf32_trans_mode(round_even: bool) -> None:
    """SetHF32TransMode: NEAREST_EVEN (True) or half away from zero (False, [U] for the
    mapping of NEAREST_ZERO) [HF32][HI-HF32]."""
    register_write("set_hf32_trans_mode").hf32_round_even = bool(round_even)


def to_hf32(x: np.ndarray, round_even: bool = True) -> np.ndarray:
    """float32 -> float32 with the mantissa rounded to HF32_MANTISSA bits (inf and NaN kept)."""
    drop = 23 - HF32_MANTISSA
    u = np.ascontiguousarray(x, np.float32).view(np.uint32)
    half = np.uint32(1 << (drop - 1))
    if round_even:
        bias = half - np.uint32(1) + ((u >> np.uint32(drop)) & np.uint32(1))
    else:
        bias = half
    finite = (u & np.uint32(0x7F800000)) != np.uint32(0x7F800000)
    keep = np.uint32(~((1 << drop) - 1) & 0xFFFFFFFF)
    rounded = (u + np.where(finite, bias, np.uint32(0))) & keep
    return np.where(finite, rounded, u).view(np.float32)


def mmad(dst: LocalTensor, a: LocalTensor, b: LocalTensor, bias_or_params: Any,
         params: MmadParams | None = None) -> None:
    """Mmad(dst, a, b, MmadParams) or Mmad(dst, a, b, bias, MmadParams) (bias_or_params is
    either, checked below)."""
    what = "mmad"
    bias = None
    if params is None:
        params = bias_or_params
    else:
        bias = local(bias_or_params, (Space.BT,), what, "bias")
    if not isinstance(params, MmadParams):
        raise IllegalInstruction(f"{what} takes MmadParams, got {type(params).__name__}")
    check(params, what)
    dst = local(dst, (Space.L0C,), what, "dst")
    a = local(a, (Space.L0A,), what, "a (the left matrix)")
    b = local(b, (Space.L0B,), what, "b (the right matrix)")
    acc = _ACCUMULATOR.get(a.dtype)
    if acc is None or b.dtype != a.dtype or dst.dtype != acc:
        raise IllegalInstruction(
            f"{what} {a.dtype.name} x {b.dtype.name} -> {dst.dtype.name}: the Cube takes "
            f"float16, bfloat16 or float32 into float32, and int8 into int32 [MMAD]")
    check_mode(params.unit_flag, MMAD_MODES, what)
    use_bias = bias is not None or (params.cmatrix_source and not params.cmatrix_init_val)
    if use_bias and bias is None:
        raise IllegalInstruction(f"{what} cmatrix_source True starts C from the BiasTable: "
                                 f"pass the bias tensor, mmad(dst, a, b, bias, params)")
    if bias is not None and bias.dtype != acc:
        raise IllegalInstruction(f"{what} bias of type {bias.dtype.name}: a {a.dtype.name} "
                                 f"Mmad takes a {acc.name} bias [MMAD]")
    accumulate = not use_bias and (not params.cmatrix_init_val or params.is_bias)
    core = dst.core
    chip = core.chip
    core.check_aligned(Space.L0C, dst.offset, f"{what} dst", chip.mmad_dst_align)
    core.check_aligned(Space.L0A, a.offset, f"{what} a")
    core.check_aligned(Space.L0B, b.offset, f"{what} b")
    if bias is not None:
        core.check_aligned(Space.BT, bias.offset, f"{what} bias")
    regs, unit_flags = core.cube_state, core.unit_flags
    assert regs is not None and unit_flags is not None      # L0C is a Cube core's
    m, n, k = params.m, params.n, params.k
    hf32 = a.dtype == F32 and regs.hf32
    k0 = core.costs.mmad_k0("hf32" if hf32 else _K0_KIND[a.dtype])
    if not (m and n and k):
        core.issue(Pipe.M, what, 0)
        if core.observers:
            core.observe(Pipe.M, what, (), ())
        return
    c0 = chip.c0(a.itemsize)
    kp = round_up(k, 16 if a.dtype == F32 and params.k_direction_align else c0)
    mp, np_ = round_up(m, FRACTAL), round_up(n, FRACTAL)
    gemv = m == 1
    a_bytes = (k if gemv else mp * kp) * a.itemsize
    b_bytes = round_up(k, c0) * np_ * b.itemsize
    av = core.local_view(Space.L0A, a.offset, a_bytes, what).view(a.dtype)
    bv = core.local_view(Space.L0B, b.offset, b_bytes, what).view(b.dtype)
    cv = core.local_view(Space.L0C, dst.offset, mp * np_ * acc.itemsize, what).view(acc)
    biasv = bias.bytes(0, n * acc.itemsize, what).view(acc) if bias is not None else None
    core.execute(partial(_compute, av, bv, cv, biasv, m, n, k, kp, mp, c0, gemv, accumulate,
                         hf32, regs.hf32_round_even))
    cycles, _ = core.costs.mmad(m, n, k, k0, FRACTAL)
    flag = params.unit_flag
    if flag:
        units = mp * np_ * acc.itemsize // chip.unit_flag_bytes
        core.unit_wait(Pipe.M, dst.offset, flag)
    core.issue(Pipe.M, what, cycles)
    if flag:
        core.unit_done(Pipe.M, dst.offset, flag, units, cycles)
    core.count_flops(2 * m * n * k)
    if core.observers:
        core.observe(Pipe.M, what, *_accesses(dst, a, b, bias, m, n, k, kp, mp, c0, gemv,
                                              accumulate))
    if flag:
        unit_flags.signal(core, Pipe.M, dst.offset, flag)


@lockstep
def _compute(av, bv, cv, biasv, m, n, k, kp, mp, c0, gemv, accumulate, hf32, round_even):
    """The numbers: A from ZZ (or ND for a GEMV), B from ZN, C to NZ (16 x 16 fractals);
    leading axes: cores (lockstep.py), each core's product its own host call."""
    lead = cv.shape[:-1]
    axes = tuple(range(len(lead)))
    if gemv:
        amat = av[..., :k].reshape(*lead, 1, k)
    else:
        amat = av.reshape(*lead, mp // FRACTAL, kp // c0, FRACTAL, c0).swapaxes(-3, -2) \
            .reshape(*lead, mp, kp)[..., :m, :k]
    np_ = round_up(n, FRACTAL)
    w = len(lead)
    bmat = bv.reshape(*lead, -1, np_ // FRACTAL, FRACTAL, c0) \
        .transpose(*axes, w, w + 3, w + 1, w + 2).reshape(*lead, -1, np_)[..., :k, :n]
    integer = cv.dtype == I32
    wide = np.int64 if integer else np.float32
    # the host's product takes contiguous operands (a copy only where they are not already)
    amat, bmat = np.ascontiguousarray(amat, wide), np.ascontiguousarray(bmat, wide)
    if hf32:
        amat, bmat = to_hf32(amat, round_even), to_hf32(bmat, round_even)
    prod = _products(amat, bmat)
    # C's first m rows in NZ: (row, column block, column), a view of L0C
    rows = cv.reshape(*lead, np_ // FRACTAL, mp, FRACTAL).swapaxes(-3, -2)[..., :m, :, :]
    full, tail = divmod(n, FRACTAL)
    if accumulate:
        cmat = rows.reshape(*lead, m, np_)[..., :n]
        prod = prod + cmat.astype(wide)
    elif biasv is not None:
        prod = prod + biasv[..., None, :].astype(wide)
    if integer:
        prod = np.clip(prod, np.iinfo(np.int32).min, np.iinfo(np.int32).max)
    rows[..., :full, :] = prod[..., :full * FRACTAL].reshape(*lead, m, full, FRACTAL)
    if tail:
        rows[..., full, :tail] = prod[..., full * FRACTAL:]


def _products(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a @ b, one host call per leading index: each core's product is the call it makes alone
    (a stacked matmul could take another path through the host's BLAS)."""
    if a.ndim == 2:
        return a @ b
    out = np.empty((*a.shape[:-1], b.shape[-1]), a.dtype)
    for i in np.ndindex(a.shape[:-2]):
        out[i] = a[i] @ b[i]
    return out


def _accesses(dst, a, b, bias, m, n, k, kp, mp, c0, gemv, accumulate):
    """C (m, n) from A (m, 1, k) and B (1, n, k) (and C itself, or the bias row (n,))."""
    a_off = np.arange(k)[None, None, :] if gemv else zz_offsets(m, k, c0, kp)
    reads = [Access(Space.L0A, a.offset, a.itemsize, a_off, "a"),
             Access(Space.L0B, b.offset, b.itemsize, zn_offsets(k, n, c0), "b")]
    c_off = nz_offsets(m, n, FRACTAL, mp)
    if accumulate:
        reads.append(Access(Space.L0C, dst.offset, dst.itemsize, c_off, "acc"))
    if bias is not None:
        reads.append(Access(Space.BT, bias.offset, bias.itemsize, n, "bias"))
    return tuple(reads), (Access(Space.L0C, dst.offset, dst.itemsize, c_off, "dst"),)
