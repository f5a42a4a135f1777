"""Hand-written Cube kernels for the simulator's tests, and a harness that runs a kernel on a
fresh chip with its GM tensors.

`gemm` is a small tiled GEMM in the basic-API style: per output tile, A's rows and B's columns
(all of K) into L1 with ND2NZ copies, then per K step A into L0A (ZZ) and B into L0B (ZN)
with LoadData, an Mmad accumulating in L0C, and one Fixpipe NZ2ND per tile, every hand-off a
TQue.
"""

from __future__ import annotations

from dataclasses import dataclass

import ml_dtypes
import numpy as np

from ixl.ascend import KernelType, Mode, SimulatedChip, get_chip
from ixl.ascend import lang as asc
from ixl.ascend.observe import GmRole

BF16 = np.dtype(ml_dtypes.bfloat16)
BASE = 0x4000_0000


def ceil(n: int, k: int) -> int:
    return -(-n // k)


def round_up(n: int, k: int) -> int:
    return ceil(n, k) * k


class Harness:
    """A chip with GM tensors mapped at fixed addresses: `tensor(array)`, `empty(shape, dtype)`,
    then `launch(body, ...)` runs a kernel over them."""

    def __init__(self, chip: str = "910B1"):
        self.chip = SimulatedChip(get_chip(chip))
        self.next = BASE
        self.roles: list = []

    def tensor(self, array: np.ndarray, name: str = "x", role: GmRole = GmRole.INPUT):
        array = np.ascontiguousarray(array)
        t = self.empty(array.shape, array.dtype, name, role)
        self.chip.write(t.addr, array)
        return t

    def empty(self, shape, dtype, name: str = "y", role: GmRole = GmRole.OUTPUT):
        dtype = np.dtype(dtype)
        count = int(np.prod(shape))
        nbytes = max(count * dtype.itemsize, 1)
        self.chip.map(self.next, nbytes)
        t = self.chip.window(self.next, dtype, count, name)
        self.next += round_up(nbytes, 4096) + 4096
        self.roles.append((t, role))
        return t

    def read(self, t, shape) -> np.ndarray:
        return self.chip.read(t.addr, t.nbytes).view(t.dtype).reshape(shape)

    def launch(self, body, block_num: int = 1, kind: KernelType = KernelType.CUBE,
               debug: bool = True, timing_only: bool = False, record: bool = False):
        return self.chip.launch("k", body, block_num, Mode(debug=debug, timing_only=timing_only,
                                                          record=record),
                                self.roles, kind)


@dataclass(frozen=True)
class GemmTiling:
    m: int
    k: int
    n: int
    base_m: int = 128
    base_n: int = 128
    base_k: int = 64


def gemm(a, b, c, t: GemmTiling, dtype, out_dtype):
    """C (m x n, out_dtype) = A (m x k) . B (k x n) on the cores of the launch (tiles split
    over blocks). float16/bfloat16 B fractals are transposed by LoadData; float32 B goes
    through LoadDataWithTranspose from 16-row groups."""
    dtype = np.dtype(dtype)
    isz = dtype.itemsize
    c0 = 32 // isz
    m_tiles, n_tiles = ceil(t.m, t.base_m), ceil(t.n, t.base_n)
    kp = round_up(t.k, 16)
    quant = {np.dtype(np.float16): asc.QuantMode.F322F16, BF16: asc.QuantMode.F322BF16,
             np.dtype(np.float32): asc.QuantMode.NoQuant}[np.dtype(out_dtype)]

    def body(core):
        pipe = asc.TPipe()
        qa1, qb1 = asc.TQue(asc.TPosition.A1), asc.TQue(asc.TPosition.B1)
        qa2, qb2 = asc.TQue(asc.TPosition.A2), asc.TQue(asc.TPosition.B2)
        qc = asc.TQue(asc.TPosition.CO1)
        pipe.init_buffer(qa1, 1, t.base_m * kp * isz)
        pipe.init_buffer(qb1, 1, kp * round_up(t.base_n, 16) * isz)
        pipe.init_buffer(qa2, 2, t.base_m * t.base_k * isz)
        pipe.init_buffer(qb2, 2, t.base_k * t.base_n * isz)
        pipe.init_buffer(qc, 1, t.base_m * t.base_n * 4)
        for tile in range(asc.get_block_idx(), m_tiles * n_tiles, asc.get_block_num()):
            m0, n0 = (tile % m_tiles) * t.base_m, (tile // m_tiles) * t.base_n
            bm, bn = min(t.base_m, t.m - m0), min(t.base_n, t.n - n0)
            mp, np_ = round_up(bm, 16), round_up(bn, 16)
            a1 = qa1.alloc_tensor(dtype)
            asc.data_copy(a1, a[m0 * t.k], asc.Nd2NzParams(
                n_value=bm, d_value=t.k, src_d_value=t.k, dst_nz_c0_stride=mp))
            qa1.enque(a1)
            b1 = qb1.alloc_tensor(dtype)
            if isz == 4:     # 16-row groups, so that LoadDataWithTranspose sees 16 x 16 squares
                groups, tail = divmod(t.k, 16)
                group = 16 * round_up(bn, 16)
                if groups:
                    asc.data_copy(b1, b[n0], asc.Nd2NzParams(
                        nd_num=groups, n_value=16, d_value=bn, src_nd_matrix_stride=16 * t.n,
                        src_d_value=t.n, dst_nz_c0_stride=16, dst_nz_matrix_stride=group))
                if tail:
                    asc.data_copy(b1[groups * group], b[groups * 16 * t.n + n0], asc.Nd2NzParams(
                        n_value=tail, d_value=bn, src_d_value=t.n, dst_nz_c0_stride=16))
            else:
                asc.data_copy(b1, b[n0], asc.Nd2NzParams(
                    n_value=t.k, d_value=bn, src_d_value=t.n, dst_nz_c0_stride=kp))
            qb1.enque(b1)
            a1, b1 = qa1.deque(), qb1.deque()
            c1 = qc.alloc_tensor(np.float32)
            for k0 in range(0, t.k, t.base_k):
                bk = min(t.base_k, t.k - k0)
                a2 = qa2.alloc_tensor(dtype)
                kf = ceil(bk, c0)
                for mi in range(mp // 16):      # ZZ: fractal row mi, all of this K step
                    asc.load_data(a2[mi * 16 * kf * c0], a1, asc.LoadData2DParams(
                        start_index=(k0 // c0) * (mp // 16) + mi, repeat_times=kf,
                        src_stride=mp // 16))
                qa2.enque(a2)
                b2 = qb2.alloc_tensor(dtype)
                _load_b(b2, b1, k0, bk, np_, kp, isz)
                qb2.enque(b2)
                a2, b2 = qa2.deque(), qb2.deque()
                asc.mmad(c1, a2, b2, asc.MmadParams(m=bm, n=bn, k=bk, cmatrix_init_val=k0 == 0))
                qa2.free_tensor(a2)
                qb2.free_tensor(b2)
            qa1.free_tensor(a1)
            qb1.free_tensor(b1)
            qc.enque(c1)
            c1 = qc.deque()
            asc.fixpipe(c[m0 * t.n + n0], c1, asc.FixpipeParamsV220(
                n_size=bn, m_size=bm, src_stride=mp, dst_stride=t.n, quant_pre=quant))
            qc.free_tensor(c1)
    return body


def _load_b(b2, b1, k0: int, bk: int, np_: int, kp: int, isz: int) -> None:
    """B's K step [k0, k0 + bk) from L1 (NZ of B) into L0B as ZN."""
    n1 = np_ // 16
    if isz == 2:        # fractal (k1, n1) of ZN is fractal (n1, k1) of NZ(B), transposed
        k_blocks = ceil(bk, 16)
        for ki in range(k_blocks):
            asc.load_data(b2[ki * n1 * 256], b1, asc.LoadData2DParams(
                start_index=k0 // 16 + ki, repeat_times=n1, src_stride=kp // 16,
                if_transpose=True))
        return
    # float32: each 16-row group of B holds 16 x 16 squares of two 16 x 8 fractals
    for g in range(ceil(bk, 16)):
        group = (k0 // 16 + g)
        asc.load_data_with_transpose(b2[2 * g * n1 * 128], b1, asc.LoadData2dTransposeParams(
            start_index=group * n1, repeat_times=n1, src_stride=1, dst_gap=0,
            dst_frac_gap=n1 - 1))


def gemm_golden(a: np.ndarray, b: np.ndarray, out_dtype) -> np.ndarray:
    return (a.astype(np.float32) @ b.astype(np.float32)).astype(out_dtype)


def load_tile(a, b, m: int, k: int, n: int, dtype, *, a_zz: bool = True, b_zn: bool = True,
              flags: bool = True, load_b: bool = True, l1_b: int = 256 * 1024):
    """A (m x k) and B (k x n), ND in GM, into L1 by ND2NZ copies (A at L1 0, B at `l1_b`),
    then into L0A as ZZ and L0B as ZN (each fractal of NZ(B) transposed), with the MTE2_MTE1
    and MTE1_M flags between; returns (a2, b2). The knobs plant bugs: `a_zz` False loads A's
    NZ fractals in NZ order, `b_zn` False leaves B's fractals untransposed, `flags` False
    drops the MTE2_MTE1 flag, `load_b` False never fills B's L1."""
    mp, kp, np_ = round_up(m, 16), round_up(k, 16), round_up(n, 16)
    a1 = asc.local_tensor(asc.TPosition.A1, dtype, 0, mp * kp)
    b1 = asc.local_tensor(asc.TPosition.B1, dtype, l1_b, kp * np_)
    asc.data_copy(a1, a, asc.Nd2NzParams(n_value=m, d_value=k, src_d_value=k,
                                         dst_nz_c0_stride=mp))
    if load_b:
        asc.data_copy(b1, b, asc.Nd2NzParams(n_value=k, d_value=n, src_d_value=n,
                                             dst_nz_c0_stride=kp))
    if flags:
        asc.set_flag(asc.HardEvent.MTE2_MTE1, 0)
        asc.wait_flag(asc.HardEvent.MTE2_MTE1, 0)
    a2 = asc.local_tensor(asc.TPosition.A2, dtype, 0, mp * kp)
    b2 = asc.local_tensor(asc.TPosition.B2, dtype, 0, kp * np_)
    if a_zz:                 # ZZ: per fractal row, its fractals across K
        for mi in range(mp // 16):
            asc.load_data(a2[mi * 16 * kp], a1, asc.LoadData2DParams(
                start_index=mi, repeat_times=kp // 16, src_stride=mp // 16))
    else:                    # the NZ fractals as they are: the wrong order for L0A
        asc.load_data(a2, a1, asc.LoadData2DParams(repeat_times=mp * kp // 256))
    for ki in range(kp // 16):
        asc.load_data(b2[ki * np_ * 16], b1, asc.LoadData2DParams(
            start_index=ki, repeat_times=np_ // 16, src_stride=kp // 16, if_transpose=b_zn))
    asc.set_flag(asc.HardEvent.MTE1_M, 0)
    asc.wait_flag(asc.HardEvent.MTE1_M, 0)
    return a2, b2
