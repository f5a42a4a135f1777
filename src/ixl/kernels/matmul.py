"""Native MatMul on the Cube: 2-D float16 / bfloat16, float32 accumulation, any M, N, K.

The structure of the vendor's basic-API best practice [BPB]: the output is cut into base_m x
base_n tiles spread over the AIC cores; per tile, K is walked in L1 chunks (A's rows and B's
columns for k_l1 of K, ND -> NZ on the way in, double buffered in L1), and each chunk in
base_k steps: A into L0A (ZZ, one 3-D load), B into L0B (ZN, one transposing 2-D load per
16 rows of K), both double buffered, then one Mmad accumulating into L0C; after the last
step one Fixpipe writes the tile out, float32 -> float16 / bfloat16 and NZ -> ND in flight.
L0C holds two tiles, and the Mmads and the Fixpipe hand them over by unit flags (2 on every
Mmad of a tile but the last, 3 on the last and on the Fixpipe): a tile streams out while its
last Mmad still runs, and the next tile's Mmads overlap its Fixpipe. Tails (M, N, K not
multiples of 16 or of the base sizes) are the Cube's own: valid sizes in the Mmad and the
Fixpipe, zero padding from the ND2NZ copies and the 3-D load.

The host tiling derives every size from the chip (R11): the output tile from L0C (the largest
square of 16-multiples whose float32 block fits L0C / buffers), base_k from L0A and L0B, the L1
chunk from L1. Batched, 1-D and float32 MatMuls, Gemm, epilogues and tuning of base sizes are
tier B's (a later kernel builds on this one).

The file reads as an Ascend C sample: the tiling data, the host tiling function, the kernel
class (init, process, copy_in, split, compute, copy_out) and the kernel entry.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..ascend import lang as asc
from ..ascend.chips import ChipSpec
from ..hixl.dtypes import to_numpy
from ..intmath import ceil_div, round_up
from ..nixl import KernelContext, KernelEntry, LaunchPlan, TensorDesc, register_kernel
from ..nixl.backend import KernelType
from ..nixl.tuning import DoesNotFit, TuningConfig, TuningSpace
from .tiling import Tiling
from .version import BUILT_FOR_RUNTIME

FRACTAL = 16
ACCUMULATOR = np.dtype(np.float32)
QUANT = {"float16": asc.QuantMode.F322F16, "bfloat16": asc.QuantMode.F322BF16}
ND2NZ_MAX_COLUMNS = 65535    # Nd2NzParams.d_value and src_d_value [ND2NZ]


# ---------------------------------------------------------------- tiling data

@dataclass(frozen=True)
class MatmulTiling(Tiling):
    m: int
    k: int
    n: int
    base_m: int            # one Mmad's (and one output tile's) rows
    base_n: int            # ... and columns
    base_k: int            # one Mmad's K
    k_l1: int              # K per L1 chunk (a multiple of base_k)
    m_tiles: int
    n_tiles: int
    dtype: str
    config: TuningConfig   # buffer_num: single or double buffering of L1 and L0


# ---------------------------------------------------------------- host tiling

def plan(ins: list[TensorDesc], outs: list[TensorDesc], attrs: dict, chip: ChipSpec,
         config: TuningConfig | None = None) -> LaunchPlan:
    config = (config or TuningConfig()).only(("buffer_num", "tile_div", "block_dim"),
                                             "the MatMul kernel")
    a, b = ins
    m, k = a.shape
    n = b.shape[1]
    db = config.buffers
    if db > 2:
        raise DoesNotFit(f"buffer_num {db}: the Cube's L1 and L0 buffers are single or double")
    isz = a.itemsize
    side = math.isqrt(chip.l0c_bytes // db // ACCUMULATOR.itemsize) // FRACTAL * FRACTAL
    cap = chip.mmad_max_mnk // FRACTAL * FRACTAL
    base_m = _fit(min(side, round_up(m, FRACTAL)), config.divisor)
    base_n = _fit(min(chip.l0c_bytes // db // ACCUMULATOR.itemsize // base_m // FRACTAL * FRACTAL,
                      round_up(n, FRACTAL), cap), config.divisor)
    base_k = min(chip.l0a_bytes // db // (base_m * isz), chip.l0b_bytes // db // (base_n * isz),
                 cap) // FRACTAL * FRACTAL
    base_k = min(base_k, round_up(k, FRACTAL))
    k_l1 = chip.l1_bytes // db // ((base_m + base_n) * isz) // base_k * base_k
    if base_k == 0 or k_l1 == 0:
        raise DoesNotFit(f"no base block fits the Cube's buffers at {db} buffers")
    k_l1 = min(k_l1, round_up(k, base_k))
    m_tiles, n_tiles = ceil_div(m, base_m), ceil_div(n, base_n)
    cores = min(config.block_dim or chip.aic_cores, chip.aic_cores)
    block_dim = min(m_tiles * n_tiles, cores) if m and n else 0
    return LaunchPlan(block_dim, MatmulTiling(m, k, n, base_m, base_n, base_k, k_l1, m_tiles,
                                              n_tiles, a.dtype, config))


def _fit(size: int, divisor: int) -> int:
    """A base size divided by the tuning divisor, a whole number of fractals."""
    return max(FRACTAL, size // divisor // FRACTAL * FRACTAL)


# ---------------------------------------------------------------- the device kernel

class MatmulKernel:
    def __init__(self, ctx: KernelContext, a, b, y):
        t: MatmulTiling = ctx.tiling
        self.t, self.a, self.b, self.y = t, a, b, y
        self.ctx = ctx
        self.dtype = to_numpy(t.dtype)
        isz, db = self.dtype.itemsize, t.config.buffers
        pipe = asc.TPipe()
        self.a1, self.b1 = asc.TQue(asc.TPosition.A1), asc.TQue(asc.TPosition.B1)
        self.a2, self.b2 = asc.TQue(asc.TPosition.A2), asc.TQue(asc.TPosition.B2)
        pipe.init_buffer(self.a1, db, t.base_m * t.k_l1 * isz)
        pipe.init_buffer(self.b1, db, t.k_l1 * t.base_n * isz)
        pipe.init_buffer(self.a2, db, t.base_m * t.base_k * isz)
        pipe.init_buffer(self.b2, db, t.base_k * t.base_n * isz)
        l0c = asc.TBuf(asc.TPosition.CO1)        # unit flags order it: no queue
        tile = t.base_m * t.base_n
        pipe.init_buffer(l0c, db * tile * ACCUMULATOR.itemsize)
        self.l0c = [l0c.get(ACCUMULATOR)[i * tile] for i in range(db)]
        self.chunk = None          # the L1 chunk the loads read: (a1, b1)

    def process(self) -> None:
        t = self.t
        tiles = range(self.ctx.block_idx, t.m_tiles * t.n_tiles, self.ctx.block_num)
        for i, tile in enumerate(tiles):
            m0 = (tile % t.m_tiles) * t.base_m
            n0 = (tile // t.m_tiles) * t.base_n
            bm, bn = min(t.base_m, t.m - m0), min(t.base_n, t.n - n0)
            c = self.l0c[i % len(self.l0c)]
            for k0 in range(0, t.k, t.k_l1):
                kc = min(t.k_l1, t.k - k0)
                self.copy_in(m0, n0, bm, bn, k0, kc)
                for kk in range(0, kc, t.base_k):
                    bk = min(t.base_k, kc - kk)
                    self.split(bm, bn, kc, kk, bk)
                    self.compute(c, bm, bn, bk, first=k0 == 0 and kk == 0,
                                 last=k0 + kk + bk == t.k, last_of_chunk=kk + bk == kc)
            self.copy_out(c, m0, n0, bm, bn)

    def copy_in(self, m0: int, n0: int, bm: int, bn: int, k0: int, kc: int) -> None:
        """GM -> L1: A's bm rows and B's bn columns for K [k0, k0 + kc), ND -> NZ. A's column
        blocks are bm rows apart (an NC1HWC0 map of width bm for the 3-D load); B's are kc
        rounded to fractals apart (whole fractals for the 2-D load)."""
        t = self.t
        a1 = self.a1.alloc_tensor(self.dtype)
        asc.data_copy(a1, self.a[m0 * t.k + k0], asc.Nd2NzParams(
            n_value=bm, d_value=kc, src_d_value=t.k, dst_nz_c0_stride=bm))
        self.a1.enque(a1)
        b1 = self.b1.alloc_tensor(self.dtype)
        asc.data_copy(b1, self.b[k0 * t.n + n0], asc.Nd2NzParams(
            n_value=kc, d_value=bn, src_d_value=t.n, dst_nz_c0_stride=round_up(kc, FRACTAL)))
        self.b1.enque(b1)

    def split(self, bm: int, bn: int, kc: int, kk: int, bk: int) -> None:
        """L1 -> L0 for K [kk, kk + bk) of the chunk: A as ZZ in one 3-D load (a 1 x 1
        img2col), B as ZN, each 16 x 16 fractal of NZ(B) transposed."""
        if kk == 0:
            self.chunk = (self.a1.deque(), self.b1.deque())
        a1, b1 = self.chunk
        a2 = self.a2.alloc_tensor(self.dtype)
        asc.load_data(a2, a1, asc.LoadData3DParamsV2(
            l1_h=1, l1_w=bm, channel_size=round_up(kc, FRACTAL), k_extension=round_up(bk, FRACTAL),
            m_extension=round_up(bm, FRACTAL), k_start_pt=kk))
        self.a2.enque(a2)
        b2 = self.b2.alloc_tensor(self.dtype)
        n_fractals = ceil_div(bn, FRACTAL)
        for ki in range(ceil_div(bk, FRACTAL)):
            asc.load_data(b2[ki * n_fractals * FRACTAL * FRACTAL], b1, asc.LoadData2DParams(
                start_index=kk // FRACTAL + ki, repeat_times=n_fractals,
                src_stride=round_up(kc, FRACTAL) // FRACTAL, if_transpose=True))
        self.b2.enque(b2)

    def compute(self, c, bm: int, bn: int, bk: int, first: bool, last: bool,
                last_of_chunk: bool) -> None:
        """One Mmad: C = A . B on the tile's first step, C += A . B after; its unit flag
        hands the tile to the Fixpipe after the last step."""
        a2, b2 = self.a2.deque(), self.b2.deque()
        # A tile of one row still has A in ZZ fractals (zero rows below it): an Mmad of m = 1
        # would run as a GEMV reading A as a 1 x K ND vector, so it runs as m = 16, at the
        # same cycle count, and row 0 of C is the result.
        m = FRACTAL if bm == 1 else bm
        asc.mmad(c, a2, b2, asc.MmadParams(m=m, n=bn, k=bk, cmatrix_init_val=first,
                                           unit_flag=3 if last else 2))
        self.a2.free_tensor(a2)
        self.b2.free_tensor(b2)
        if last_of_chunk:           # the chunk's loads are done: L1 may be refilled
            a1, b1 = self.chunk
            self.a1.free_tensor(a1)
            self.b1.free_tensor(b1)

    def copy_out(self, c, m0: int, n0: int, bm: int, bn: int) -> None:
        """L0C -> GM: one Fixpipe, float32 -> the output type, NZ -> ND, reading the tile as
        its last Mmad's unit flags release it."""
        t = self.t
        asc.fixpipe(self.y[m0 * t.n + n0], c, asc.FixpipeParamsV220(
            n_size=bn, m_size=bm, src_stride=round_up(bm, FRACTAL), dst_stride=t.n,
            quant_pre=QUANT[t.dtype], unit_flag=3))


def matmul_kernel(ctx: KernelContext, a, b, y) -> None:
    MatmulKernel(ctx, a, b, y).process()


# ---------------------------------------------------------------- registration

def _declines(in_descs: list[TensorDesc], attrs: dict) -> str | None:
    a, b = in_descs
    if len(a.shape) != 2 or len(b.shape) != 2:
        return "the native MatMul takes 2-D matrices (batched and 1-D are the shim's for now)"
    if a.is_padded or b.is_padded:
        return "padded or fractal storage runs on the shim"
    if a.shape[1] == 0:
        return "K of 0: the product is zeros, written by the shim"
    if max(a.shape[1], b.shape[1]) > ND2NZ_MAX_COLUMNS:
        return f"rows longer than {ND2NZ_MAX_COLUMNS} elements (an ND2NZ copy's limit)"
    return None


register_kernel(KernelEntry(
    op="MatMul", kernel=matmul_kernel, tiling=plan, dtypes=("float16", "bfloat16"),
    built_for_runtime=BUILT_FOR_RUNTIME, declines=_declines, kind=KernelType.CUBE,
    tuning_space=TuningSpace(buffer_num=(1, 2), tile_div=(1, 2), core_div=(1, 2))))
