"""Native MatMul on the Cube: float16, bfloat16 and float32 (float32 accumulation), any M, N, K
(1, and sizes that are no multiple of 16, included; K of 0 gives zeros), batch dims broadcast
as numpy.matmul does, 1-D operands; the kernel every matrix product of the library runs
(Gemm, the fused MatMul chains, Conv's img2col product).

The structure of the vendor's basic-API best practice [BPB]: the output is cut into base_m x
base_n tiles dealt to the AIC cores (matmul_tiling.py). Per tile, K is walked in L1 chunks
(A's rows and B's columns for k_l1 of K, ND -> NZ on the way in, double buffered in L1) and
each chunk in base_k steps: A into L0A as ZZ (one 3-D load), B into L0B as ZN, both double
buffered, then one Mmad accumulating into L0C. After the last step one Fixpipe writes the
tile out (NZ -> ND, float32 -> the output type, ReLU if asked) while the next tile's Mmads
fill the other half of L0C: the Mmads and the Fixpipe hand L0C over by unit flags (2 on every
Mmad of a tile but the last, 3 on the last and on the Fixpipe).

Layouts by case: A as stored (M x K) lands in L1 as an NC1HWC0 map one row high and a 3-D load
turns it into ZZ; A stored transposed (Gemm's transA) lands as NZ(A^T) and the same load with
en_transpose gives ZZ(A). B stored transposed (transB, a Linear layer's weight) lands as
NZ(B^T) and a 3-D load into L0B (always transposed) gives ZN(B); B as stored (K x N) lands as
NZ(B): 16-bit fractals are transposed by a 2-D load each, float32 squares by
LoadDataWithTranspose from 16-row blocks (each k-block of B copied as its own NZ matrix, so a
square's two fractals lie side by side) [MVIN][LDT]. Tails are the Cube's own: valid sizes in
the Mmad and the Fixpipe, zero padding from the ND2NZ copies and the 3-D loads. A one-row tile
runs its Mmad with m = 2 over A's zero padding: m = 1 would switch the Cube to GEMV, which
reads A as a contiguous vector [GEMV], at the same cost. K of 0: L0A and L0B are filled with
zeros and one Mmad of k = 1 writes the tile (and its bias).

float32 runs at k0 = 4 per cycle, exact products accumulated in float32; with the tuning field
hf32 (set_hf32_mode) at twice that rate, each input rounded to 11 mantissa bits first [HF32].

The file reads as an Ascend C sample: the kernel class (init, process, copy_in, split,
compute, copy_out) over a base that sets up the Cube's queues (CubeQueues), split-K as a
subclass with its own process, the kernel entry, the host tiling entry and the registration.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

import numpy as np

from ..ascend import lang as asc
from ..ascend.chips import ChipSpec
from ..hixl.dtypes import FLOATS, to_numpy
from ..intmath import ceil_div, round_up
from ..nixl import KernelContext, KernelEntry, LaunchPlan, TensorDesc, register_kernel
from ..nixl.backend import KernelType
from ..nixl.tuning import TuningConfig, TuningSpace
from .matmul_epilogue import CREDITS, FREE, READY, Epilogue, EpilogueKernel, plan_vector_side
from .matmul_tiling import ND2NZ_MAX_PITCH, MatmulShape, MatmulTiling, matmul_shape, plan
from .version import BUILT_FOR_RUNTIME

FRACTAL = 16
F32 = np.dtype(np.float32)
QUANT = {"float16": asc.QuantMode.F322F16, "bfloat16": asc.QuantMode.F322BF16,
         "float32": asc.QuantMode.NoQuant}
MATRIX_STRIDE_MAX = 16384       # Nd2NzParams.dst_nz_matrix_stride, elements [ND2NZ]
SMALL_MMAD = 10                 # (m/16)(n/16) below this, accumulating Mmads need a barrier [MMAD]


# ---------------------------------------------------------------- the device kernel

class CubeQueues:
    """The Cube's memories of one AIC as queues, and the steps every matrix product on them
    shares: L1 chunks of A and B (A1, B1), L0A and L0B (A2, B2), the L0C tiles and the bias
    path (L1 -> BiasTable); one Mmad, from the bias row or not."""

    def __init__(self, ctx: KernelContext, t: MatmulTiling, a: asc.GlobalTensor,
                 b: asc.GlobalTensor, out: asc.GlobalTensor,
                 bias: asc.GlobalTensor | None = None) -> None:
        self.t, self.ctx, self.a, self.b, self.out, self.bias_gm = t, ctx, a, b, out, bias
        self.shape = t.shape
        self.dtype = to_numpy(t.shape.dtype)
        isz = self.dtype.itemsize
        self.c0 = ctx.chip.c0(isz)
        self.mix = t.epilogue.vector
        self.pipe = pipe = asc.TPipe()
        self.a1, self.b1 = asc.TQue(asc.TPosition.A1), asc.TQue(asc.TPosition.B1)
        self.a2, self.b2 = asc.TQue(asc.TPosition.A2), asc.TQue(asc.TPosition.B2)
        pipe.init_buffer(self.a1, t.l1_buffers, self.a1_elements() * isz)
        pipe.init_buffer(self.b1, t.l1_buffers, self.b1_elements() * isz)
        bm16, bn16, bk16 = (round_up(v, FRACTAL) for v in (t.base_m, t.base_n, t.base_k))
        pipe.init_buffer(self.a2, t.l0_buffers, bm16 * bk16 * isz)
        pipe.init_buffer(self.b2, t.l0_buffers, bk16 * bn16 * isz)
        l0c = asc.TBuf(asc.TPosition.CO1)        # unit flags order it: no queue
        tile = bm16 * bn16
        pipe.init_buffer(l0c, t.l0c_buffers * tile * F32.itemsize)
        self.l0c = [l0c.get(F32)[i * tile] for i in range(t.l0c_buffers)]
        if t.epilogue.bias is not None:
            self.bias_l1, self.bias_bt = asc.TQue(asc.TPosition.C1), asc.TQue(asc.TPosition.C2)
            pipe.init_buffer(self.bias_l1, 1, bn16 * isz)
            pipe.init_buffer(self.bias_bt, 1, bn16 * F32.itemsize)
        if t.hf32:
            asc.set_hf32_mode(True)
            asc.set_hf32_trans_mode(True)
        # the L1 chunk the loads read: (a1, b1)
        self.chunk: tuple[asc.LocalTensor, asc.LocalTensor] | None = None

    def a1_elements(self) -> int:
        """A's L1 chunk: bm positions of K (NC1HWC0), or K positions of bm (NZ(A^T))."""
        t = self.t
        if self.shape.trans_a:
            return round_up(t.k_l1, FRACTAL) * round_up(t.base_m, self.c0)
        return t.base_m * round_up(t.k_l1, self.c0)

    def b1_elements(self) -> int:
        return round_up(self.t.k_l1, FRACTAL) * round_up(self.t.base_n, FRACTAL)

    def load_bias(self, n0: int, bn: int) -> None:
        """The tile's bias row: GM -> L1 (one ND2NZ row, zero padded) -> BiasTable (float32,
        half widened on the way) [BT]."""
        assert self.bias_gm is not None                  # called for a product with a bias
        staged = self.bias_l1.alloc_tensor(self.dtype)
        asc.data_copy(staged, self.bias_gm[n0], asc.Nd2NzParams(n_value=1, d_value=bn,
                                                                src_d_value=bn))
        self.bias_l1.enque(staged)
        staged = self.bias_l1.deque()
        bias = self.bias_bt.alloc_tensor(F32)
        unit = self.ctx.chip.bias_table_align
        asc.data_copy(bias, staged, asc.DataCopyParams(
            block_count=1, block_len=ceil_div(bn * F32.itemsize, unit)))
        self.bias_l1.free_tensor(staged)
        self.bias_bt.enque(bias)

    def mmad(self, c: asc.LocalTensor, a2: asc.LocalTensor, b2: asc.LocalTensor,
             params: asc.MmadParams, bias: bool) -> None:
        """One Mmad, starting from the BiasTable's row when `bias`."""
        if bias:
            row = self.bias_bt.deque()
            asc.mmad(c, a2, b2, row, params)
            self.bias_bt.free_tensor(row)
        else:
            asc.mmad(c, a2, b2, params)


class MatmulKernel(CubeQueues):
    """One AIC's share of the output tiles, written to `out` (y, or a mix kernel's
    workspace)."""

    def process(self) -> Iterator[object]:
        """Every tile of this core; in a mix kernel, a flag to the vector cores after each
        and at most CREDITS tiles ahead of them (a generator: the flags are waited on)."""
        t, sh = self.t, self.shape
        tiles = t.core_tiles(self.ctx.block_idx, self.ctx.block_num)
        for i, index in enumerate(tiles):
            if self.mix and i >= CREDITS:
                yield asc.cross_core_wait_flag(FREE)
            matrix, m0, n0 = t.tile(index)
            bm, bn = min(t.base_m, sh.m - m0), min(t.base_n, sh.n - n0)
            c = self.l0c[i % len(self.l0c)]
            self.tile_product(c, matrix, m0, n0, bm, bn, 0, sh.k, self.bias_gm is not None)
            self.copy_out(c, matrix, m0, n0, bm, bn)
            if self.mix:
                asc.cross_core_set_flag(2, asc.Pipe.FIX, READY)
        if self.mix:
            for _ in range(min(len(tiles), CREDITS)):
                yield asc.cross_core_wait_flag(FREE)

    def tile_product(self, c: asc.LocalTensor, matrix: int, m0: int, n0: int, bm: int, bn: int,
                     k_lo: int, k_hi: int, bias: bool) -> None:
        """C (L0C) = the tile's product over K [k_lo, k_hi) (+ its bias row): L1 chunks of
        k_l1, base_k steps in each; zeros (or the bias) for an empty K."""
        t = self.t
        a_off, b_off = self.shape.offsets(matrix)
        if bias:
            self.load_bias(n0, bn)
        if k_hi == k_lo:
            self.zero(c, bm, bn, bias)
        for k0 in range(k_lo, k_hi, t.k_l1):
            kc = min(t.k_l1, k_hi - k0)
            self.copy_in(a_off, b_off, m0, n0, bm, bn, k0, kc)
            for kk in range(0, kc, t.base_k):
                bk = min(t.base_k, kc - kk)
                self.split(bm, bn, kc, kk, bk)
                self.compute(c, bm, bn, bk, bias and k0 + kk == k_lo, first=k0 + kk == k_lo,
                             last=k0 + kk + bk == k_hi, last_of_chunk=kk + bk == kc)

    def zero(self, c: asc.LocalTensor, bm: int, bn: int, bias: bool) -> None:
        """K of 0: one Mmad of k = 1 over zero-filled L0A and L0B (16 of K each) gives zeros
        (or the bias)."""
        a2, b2 = self.a2.alloc_tensor(self.dtype), self.b2.alloc_tensor(self.dtype)
        frac = self.ctx.chip.fractal_bytes
        for dst, rows in ((a2, bm), (b2, bn)):
            blocks = round_up(rows, FRACTAL) * FRACTAL * self.dtype.itemsize // frac
            asc.fill(dst, asc.InitConstValueParams(repeat_times=1, block_num=blocks,
                                                   init_value=0))
        self.a2.enque(a2)
        self.b2.enque(b2)
        self.compute(c, bm, bn, 1, bias, first=True, last=True, last_of_chunk=False)

    def copy_in(self, a_off: int, b_off: int, m0: int, n0: int, bm: int, bn: int, k0: int,
                kc: int) -> None:
        """GM -> L1: A's bm rows and B's bn columns for K [k0, k0 + kc), ND -> NZ."""
        sh = self.shape
        a1 = self.a1.alloc_tensor(self.dtype)
        if sh.trans_a:        # NZ(A^T): kc positions of bm channels for a transposing load
            asc.data_copy(a1, self.a[a_off + k0 * sh.m + m0], asc.Nd2NzParams(
                n_value=kc, d_value=bm, src_d_value=sh.m, dst_nz_c0_stride=kc))
        else:                 # an NC1HWC0 map one row high: bm positions of kc channels
            asc.data_copy(a1, self.a[a_off + m0 * sh.k + k0], asc.Nd2NzParams(
                n_value=bm, d_value=kc, src_d_value=sh.k, dst_nz_c0_stride=bm))
        self.a1.enque(a1)
        b1 = self.b1.alloc_tensor(self.dtype)
        ldb = sh.ldb
        if sh.trans_b:        # NZ(B^T): bn positions of kc channels
            asc.data_copy(b1, self.b[b_off + n0 * ldb + k0], asc.Nd2NzParams(
                n_value=bn, d_value=kc, src_d_value=ldb, dst_nz_c0_stride=bn))
        elif self.dtype.itemsize == 4:
            copy_f32_blocks(b1, self.b[b_off + k0 * ldb + n0], bn, kc, ldb)
        else:                 # NZ(B), rows padded to whole fractals for 2-D loads
            asc.data_copy(b1, self.b[b_off + k0 * ldb + n0], asc.Nd2NzParams(
                n_value=kc, d_value=bn, src_d_value=ldb,
                dst_nz_c0_stride=round_up(kc, FRACTAL)))
        self.b1.enque(b1)

    def split(self, bm: int, bn: int, kc: int, kk: int, bk: int) -> None:
        """L1 -> L0 for K [kk, kk + bk) of the chunk: A as ZZ, B as ZN."""
        sh, c0 = self.shape, self.c0
        if kk == 0:
            self.chunk = (self.a1.deque(), self.b1.deque())
        assert self.chunk is not None               # loaded at the chunk's first K step
        a1, b1 = self.chunk
        a2 = self.a2.alloc_tensor(self.dtype)
        if sh.trans_a:
            asc.load_data(a2, a1, asc.LoadData3DParamsV2(
                l1_h=1, l1_w=kc, channel_size=round_up(bm, c0), k_extension=round_up(bm, c0),
                m_extension=round_up(bk, FRACTAL), m_start_pt=kk, en_transpose=True))
        else:
            asc.load_data(a2, a1, asc.LoadData3DParamsV2(
                l1_h=1, l1_w=bm, channel_size=round_up(kc, c0), k_extension=round_up(bk, c0),
                m_extension=round_up(bm, FRACTAL), k_start_pt=kk))
        self.a2.enque(a2)
        b2 = self.b2.alloc_tensor(self.dtype)
        n_fractals = ceil_div(bn, FRACTAL)
        if sh.trans_b:
            asc.load_data(b2, b1, asc.LoadData3DParamsV2(
                l1_h=1, l1_w=bn, channel_size=round_up(kc, c0), k_extension=round_up(bk, c0),
                m_extension=round_up(bn, FRACTAL), k_start_pt=kk))
        elif self.dtype.itemsize == 4:
            load_f32_blocks(b2, b1, bn, kk, bk)
        else:                                 # each 16 x 16 fractal of NZ(B) transposed
            for ki in range(ceil_div(bk, FRACTAL)):
                asc.load_data(b2[ki * n_fractals * FRACTAL * FRACTAL], b1, asc.LoadData2DParams(
                    start_index=kk // FRACTAL + ki, repeat_times=n_fractals,
                    src_stride=round_up(kc, FRACTAL) // FRACTAL, if_transpose=True))
        self.b2.enque(b2)

    def compute(self, c: asc.LocalTensor, bm: int, bn: int, bk: int, bias: bool, first: bool,
                last: bool, last_of_chunk: bool) -> None:
        """One Mmad: C = A . B (+ the bias row) on the tile's first step, C += A . B after;
        its unit flag hands the tile to the Fixpipe after the last step."""
        a2, b2 = self.a2.deque(), self.b2.deque()
        if not first and ceil_div(bm, FRACTAL) * ceil_div(bn, FRACTAL) < SMALL_MMAD:
            asc.pipe_barrier(asc.Pipe.M)
        # A tile of one row still has A in ZZ fractals: an Mmad of m = 1 would run as a GEMV
        # reading A as a 1 x K ND vector [GEMV], so it runs as m = 2 (the same cycles) over
        # A's padding, and the Fixpipe takes row 0 of C.
        params = asc.MmadParams(m=max(bm, 2), n=bn, k=bk, cmatrix_init_val=first,
                                unit_flag=3 if last else 2,
                                k_direction_align=self.shape.trans_a and self.c0 == 8)
        self.mmad(c, a2, b2, params, bias)
        self.a2.free_tensor(a2)
        self.b2.free_tensor(b2)
        if last_of_chunk:           # the chunk's loads are done: L1 may be refilled
            assert self.chunk is not None
            a1, b1 = self.chunk
            self.a1.free_tensor(a1)
            self.b1.free_tensor(b1)

    def copy_out(self, c: asc.LocalTensor, matrix: int, m0: int, n0: int, bm: int, bn: int) -> None:
        """L0C -> GM: one Fixpipe, float32 -> the output type, NZ -> ND, reading the tile as
        its last Mmad's unit flags release it."""
        t, sh = self.t, self.shape
        asc.fixpipe(self.out[(matrix * sh.m + m0) * sh.n + n0], c, asc.FixpipeParamsV220(
            n_size=bn, m_size=bm, src_stride=round_up(bm, FRACTAL), dst_stride=sh.n,
            quant_pre=QUANT[t.out_dtype], relu_en=t.epilogue.relu, unit_flag=3))


class SplitKMatmulKernel(MatmulKernel):
    """A product cut along K (the tiling's k_splits > 1): units of (tile, part of K), their
    float32 partial rows summed after a SyncAll."""

    def __init__(self, ctx: KernelContext, t: MatmulTiling, a: asc.GlobalTensor,
                 b: asc.GlobalTensor, out: asc.GlobalTensor,
                 bias: asc.GlobalTensor | None = None) -> None:
        super().__init__(ctx, t, a, b, out, bias)
        self.partials = ctx.planned_workspace.reinterpret(F32)

    def process(self) -> Iterator[object]:
        """Split-K: each unit is a tile's product over one part of K, written as float32
        partial rows to the workspace ([m][part][n]); after a SyncAll each core sums the
        parts of its tiles' rows, one GEMV each: a row of ones times the parts (k = parts),
        the bias row from the BiasTable, ReLU and the output type in the Fixpipe."""
        t, sh, ctx = self.t, self.shape, self.ctx
        parts, part = t.k_splits, t.split_k
        for i, unit in enumerate(range(ctx.block_idx, t.tiles * parts, ctx.block_num)):
            index, s = divmod(unit, parts)
            _, m0, n0 = t.tile(index)
            bm, bn = min(t.base_m, sh.m - m0), min(t.base_n, sh.n - n0)
            c = self.l0c[i % len(self.l0c)]
            k_lo = min(s * part, sh.k)
            self.tile_product(c, 0, m0, n0, bm, bn, k_lo, min(k_lo + part, sh.k), False)
            asc.fixpipe(self.partials[(m0 * parts + s) * sh.n + n0], c, asc.FixpipeParamsV220(
                n_size=bn, m_size=bm, src_stride=round_up(bm, FRACTAL), dst_stride=parts * sh.n,
                quant_pre=asc.QuantMode.NoQuant, unit_flag=3))
        yield asc.sync_all()
        ones = self.a2.alloc_tensor(F32)          # the GEMV's A: a row of ones, once
        asc.fill(ones, asc.InitConstValueParams(repeat_times=1, block_num=1, init_value=1))
        self.a2.enque(ones)
        ones = self.a2.deque()
        rows = 0
        for index in t.core_tiles(ctx.block_idx, ctx.block_num):
            _, m0, n0 = t.tile(index)
            bm, bn = min(t.base_m, sh.m - m0), min(t.base_n, sh.n - n0)
            for m in range(m0, m0 + bm):
                self.sum_parts(self.l0c[rows % len(self.l0c)], ones, m, n0, bn)
                rows += 1
        self.a2.free_tensor(ones)

    def sum_parts(self, c: asc.LocalTensor, ones: asc.LocalTensor, m: int, n0: int,
                  bn: int) -> None:
        """Row m of y, columns [n0, n0 + bn): the sum of its parts."""
        t, sh = self.t, self.shape
        parts = t.k_splits
        b1 = self.b1.alloc_tensor(F32)
        copy_f32_blocks(b1, self.partials[m * parts * sh.n + n0], bn, parts, sh.n)
        self.b1.enque(b1)
        b1 = self.b1.deque()
        b2 = self.b2.alloc_tensor(F32)
        load_f32_blocks(b2, b1, bn, 0, parts)
        self.b1.free_tensor(b1)
        self.b2.enque(b2)
        if self.bias_gm is not None:
            self.load_bias(n0, bn)
        b2 = self.b2.deque()
        self.mmad(c, ones, b2, asc.MmadParams(m=1, n=bn, k=parts, unit_flag=3),
                  self.bias_gm is not None)
        self.b2.free_tensor(b2)
        asc.fixpipe(self.out[m * sh.n + n0], c, asc.FixpipeParamsV220(
            n_size=bn, m_size=1, src_stride=FRACTAL, dst_stride=sh.n,
            quant_pre=QUANT[t.out_dtype], relu_en=t.epilogue.relu, unit_flag=3))


def copy_f32_blocks(b1: asc.LocalTensor, src: asc.GlobalTensor, bn: int, rows: int,
                    pitch: int) -> None:
    """GM -> L1 of a float32 right matrix as stored (rows x bn, `pitch` elements a row): each
    16 rows of K an NZ matrix of their own (its fractals side by side, as
    LoadDataWithTranspose takes a square), in one ND2NZ when the strides allow."""
    l1_pitch = FRACTAL * round_up(bn, FRACTAL)       # elements per 16-row block in L1
    blocks, tail = divmod(rows, FRACTAL)
    one_go = FRACTAL * pitch <= ND2NZ_MAX_PITCH and l1_pitch <= MATRIX_STRIDE_MAX
    runs = [(0, blocks, FRACTAL)] if one_go else [(i, 1, FRACTAL) for i in range(blocks)]
    runs += [(blocks, 1, tail)] if tail else []
    for first, count, n_rows in runs:
        if count:
            asc.data_copy(b1[first * l1_pitch], src[first * FRACTAL * pitch],
                          asc.Nd2NzParams(nd_num=count, n_value=n_rows, d_value=bn,
                                          src_nd_matrix_stride=FRACTAL * pitch * (count > 1),
                                          src_d_value=pitch,
                                          dst_nz_c0_stride=FRACTAL,
                                          dst_nz_matrix_stride=l1_pitch))


def load_f32_blocks(b2: asc.LocalTensor, b1: asc.LocalTensor, bn: int, kk: int, bk: int
                    ) -> None:
    """L1 -> L0B (ZN) of K [kk, kk + bk) of a float32 matrix laid out by copy_f32_blocks: each
    16-row block's squares of two 16 x 8 fractals, transposed [LDT]."""
    n_fractals = ceil_div(bn, FRACTAL)
    c0 = FRACTAL // 2                                 # float32's C0: 8 of K a fractal
    pitch = FRACTAL * n_fractals * FRACTAL
    for j, kb in enumerate(range(kk // FRACTAL, ceil_div(kk + bk, FRACTAL))):
        asc.load_data_with_transpose(
            b2[2 * j * n_fractals * FRACTAL * c0], b1[kb * pitch],
            asc.LoadData2dTransposeParams(repeat_times=n_fractals,
                                          dst_frac_gap=n_fractals - 1))


def matmul_kernel(ctx: KernelContext, *gm: asc.GlobalTensor) -> Iterator[object]:
    """Every matrix-product entry: gm = the kernel inputs, then y. On a cube kernel the AIC
    writes y; in a mix kernel it writes float32 tiles to the workspace and the AIVs run the
    epilogue's program into y."""
    t: MatmulTiling = ctx.tiling
    ins, y = gm[:-1], gm[-1]
    epi: Epilogue = t.epilogue

    def given(i):
        return ins[i] if i is not None and i < len(ins) else None

    a, b = given(epi.operands[0]), given(epi.operands[1])
    bias = given(epi.bias)
    kernel = SplitKMatmulKernel if t.k_splits > 1 else MatmulKernel
    if not epi.vector:
        return kernel(ctx, t, a, b, y, bias).process()
    acc = ctx.planned_workspace.reinterpret(F32)
    if ctx.is_aic:
        return kernel(ctx, t, a, b, acc, bias).process()
    return EpilogueKernel(ctx, t, [acc] + [given(i) for i in epi.inputs], y).process()


# ---------------------------------------------------------------- host tiling

def launch_plan(shape: MatmulShape, epilogue: Epilogue, ins: list, out: TensorDesc,
                chip: ChipSpec, config: TuningConfig | None) -> LaunchPlan:
    """The plan of a product and its epilogue: a cube kernel when the Cube finishes it, a
    mix kernel with a float32 workspace of the output when the vector cores take part."""
    out_dtype = "float32" if epilogue.vector else out.dtype
    block_dim, tiling = plan(shape, chip, config, epilogue, out_dtype)
    if not epilogue.vector:       # split-K: the float32 parts of every row in the workspace
        partials = shape.m * tiling.k_splits * shape.n * F32.itemsize if tiling.k_splits > 1 \
            else 0
        return LaunchPlan(block_dim, tiling, workspace_bytes=partials, kind=KernelType.CUBE)
    tiling = replace(tiling, vector=plan_vector_side(epilogue, ins, out, tiling, chip))
    return LaunchPlan(block_dim, tiling, workspace_bytes=out.size * F32.itemsize,
                      kind=KernelType.MIX)


def _plan(ins: list[TensorDesc], outs: list[TensorDesc], attrs: dict, chip: ChipSpec,
          config=None) -> LaunchPlan:
    return launch_plan(matmul_shape(*ins), Epilogue(), ins, outs[0], chip, config)


# ---------------------------------------------------------------- registration

def declines(shape: MatmulShape, descs: list) -> str | None:
    """What the Cube kernel does not take: padded or fractal storage (B may be a transposed
    view: matmul_shape reads its strides), rows longer than an ND2NZ copy's source pitch."""
    if any(d is not None and d.is_padded and (i != 1 or d.perm is None)
           for i, d in enumerate(descs)):
        return "padded or fractal storage runs on the shim"
    pitch = max(shape.lda, shape.ldb)
    if pitch > ND2NZ_MAX_PITCH:
        return f"rows of {pitch} elements exceed an ND2NZ copy's source pitch of " \
               f"{ND2NZ_MAX_PITCH} [ND2NZ]"
    return None


# What `ixl tune` sweeps: L1 and L0 buffering and the base block (the ladder shows the
# buffering steps at the default base block).
TUNING_SPACE = TuningSpace(
    buffer_num=(1, 2), l0_buffers=(1, 2), base_m=(64, 128, 256), base_n=(128, 256),
    base_k=(32, 64), tile_div=(), core_div=(), core_kind="aic",
    ladder=(("single buffer", {"buffer_num": 1, "l0_buffers": 1}),
            ("double buffer L0", {"buffer_num": 1, "l0_buffers": 2}),
            ("double buffer L1 and L0", {"buffer_num": 2, "l0_buffers": 2})))

register_kernel(KernelEntry(
    op="MatMul", kernel=matmul_kernel, tiling=_plan, dtypes=FLOATS,
    built_for_runtime=BUILT_FOR_RUNTIME, kind=KernelType.CUBE, tuning_space=TUNING_SPACE,
    declines=lambda descs, attrs: declines(matmul_shape(*descs), descs)))
