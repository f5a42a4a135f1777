"""A single-core square GEMM tile loop run at the Cube's bound: C (fp16) = A . B with A and B
(B given transposed, as the vendor's basic-API example takes it) resident in L1, as a vendor
sample would write it: the tiling, its host function, the kernel class and the numpy reference.

Why it is shaped so (each choice removes a term of the loop's time over the Cube's peak; the
numbers are for size 256, see tests/sim/test_cube_timing.py):
- The Mmad head is paid per Mmad, so the Mmads are as large as L0 allows: base_m is all of M
  (256), base_n what one L0C buffer holds (256 x 128 float32 = 128 KB: all of L0C), base_k
  what half of L0A holds (256 x 64 fp16 = 32 KB), so that the next K step loads into the other
  half while the Cube works: K steps of 512 cycles, 8 of them for the two tiles.
- With base_m = 256 the MTE1 moves a K column of A (512 B at 256 B/cycle) and of B (256 B at
  128 B/cycle) in 4 cycles against the Mmad's 8 [CUBEPERF]. A step's loads wait for the Mmad
  two steps back to free their half (flag M_MTE1), take 279 cycles and flag the Cube (MTE1_M):
  with the fitted 127-cycle flag, 534 cycles against the 532.5 of the Mmad in between, so
  the last K steps wait a cycle or two each (with the earlier fit's 77-cycle flag they hid).
- The first Mmad can start only once its A and B are in L0 (one after the other: both loads
  are MTE1's) and a flag has passed. So the first L0 half is filled in parts (`first_parts`:
  16, 32 and 16 of K): the first Mmad waits for 16 columns only, and each part's loads hide
  under the Mmad before it (a part may be twice the one before: 4 load cycles per column
  against 8 Mmad cycles, as long as a flag is shorter than the Mmad of the first part: the
  fitted 127 cycles leave the 32-column part 2.5 cycles late). The cost is a head for each
  extra Mmad: 10 Mmads instead of 8.
- L0C is one buffer handed between the Mmads and the Fixpipe by unit flags: the Fixpipe drains
  a tile while its last Mmad runs and the next tile's first Mmad refills L0C behind it [UF].
  The tile whose rows start off the 512-byte burst grid (columns 128..255: 256-byte rows at a
  256-byte offset) goes first, so its slower Fixpipe hides under the next tile's Mmads and
  the last Fixpipe (aligned) is what trails the last Mmad.
- A and B come whole into L1 before the loop. One core's GM port (about 44 B/cycle from HBM)
  takes some 6000 cycles for their 256 KB, more than the Cube's 4096: fed from GM in K slices
  the loop would run at the port's pace, not the Cube's.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ixl.ascend import lang as asc

F16, F32 = np.dtype(np.float16), np.dtype(np.float32)
P = asc.TPosition
K0 = 16                         # K of one fp16 fractal: the smallest Mmad step [CUBEPERF]


@dataclass(frozen=True)
class TileLoopTiling:
    """size: M = N = K. One Mmad: base_m x base_n x base_k (the first L0 buffer's K in the
    parts `first_parts`). Tiles: size x base_n column blocks, the last one first."""

    size: int
    base_m: int
    base_n: int
    base_k: int
    first_parts: tuple[int, ...]

    def l0_fills(self, first_tile: bool) -> list[list[tuple[int, int]]]:
        """A tile's K as fills of one L0 half, each a list of (k0, k) parts, one Mmad each:
        the first tile's first fill in `first_parts`, every other fill one part of base_k."""
        fills, k0 = [], 0
        if first_tile:
            fills.append([])
            for part in self.first_parts:
                fills[-1].append((k0, part))
                k0 += part
        fills.extend([(k, self.base_k)] for k in range(k0, self.size, self.base_k))
        return fills

    def column_tiles(self) -> list[int]:
        """The first column of each output tile, the last tile first."""
        return list(range(self.size - self.base_n, -1, -self.base_n))


def tile_loop_tiling(size: int = 256, l0ab_bytes: int = 64 * 1024,
                     l0c_bytes: int = 128 * 1024) -> TileLoopTiling:
    """Host tiling for one AIC: base_m = M; base_n as much of N as one L0C buffer holds
    (base_m x 4 B per column), base_k as much of K as half of L0A holds (base_m x 2 B per
    column), each a multiple of 16 dividing the size; the first base_k in parts doubling from
    one fractal."""
    if size % K0:
        raise ValueError(f"size {size}: a multiple of {K0}")
    base_m = size
    base_n = _divisor(size, l0c_bytes // (base_m * F32.itemsize))
    base_k = _divisor(size, l0ab_bytes // 2 // (base_m * F16.itemsize))
    parts, left, part = [], base_k, K0
    while left:
        parts.append(min(part, left))
        left -= parts[-1]
        part *= 2
    return TileLoopTiling(size, base_m, base_n, base_k, tuple(parts))


def _divisor(size: int, cap: int) -> int:
    """The largest multiple of 16 up to `cap` that divides `size`."""
    for d in range(cap - cap % K0, 0, -K0):
        if size % d == 0:
            return d
    raise ValueError(f"size {size}: no multiple of {K0} up to {cap} divides it")


class TileLoopKernel:
    """One AIC: copy_in A and B^T whole into L1 (ND -> NZ), then per output tile compute its
    K steps through the L0 halves and copy_out by a Fixpipe under unit flags."""

    def __init__(self, t: TileLoopTiling, a, bt, c):
        self.t, self.a, self.bt, self.c = t, a, bt, c

    def init(self) -> None:
        t = self.t
        self.pipe = pipe = asc.TPipe()
        self.qa1, self.qb1 = asc.TQue(P.A1), asc.TQue(P.B1)
        pipe.init_buffer(self.qa1, 1, t.size * t.size * F16.itemsize)
        pipe.init_buffer(self.qb1, 1, t.size * t.size * F16.itemsize)
        # L0A / L0B: two halves each, ordered by flags (the basic API's ping-pong [BPB])
        l0a, l0b, l0c = asc.TBuf(P.A2), asc.TBuf(P.B2), asc.TBuf(P.CO1)
        self.a_half = t.base_m * t.base_k
        self.b_half = t.base_k * t.base_n
        pipe.init_buffer(l0a, 2 * self.a_half * F16.itemsize)
        pipe.init_buffer(l0b, 2 * self.b_half * F16.itemsize)
        pipe.init_buffer(l0c, t.base_m * t.base_n * F32.itemsize)
        self.l0a, self.l0b, self.l0c = l0a.get(F16), l0b.get(F16), l0c.get(F32)
        self.loaded = pipe.alloc_event_id(asc.HardEvent.MTE1_M)
        self.free = [pipe.alloc_event_id(asc.HardEvent.M_MTE1) for _ in range(2)]
        for half in range(2):           # both halves start free
            asc.set_flag(asc.HardEvent.M_MTE1, self.free[half])
        self.half = 0                   # the L0 half the next fill goes into

    def process(self) -> None:
        self.copy_in()
        a1, b1 = self.qa1.deque(), self.qb1.deque()
        for i, n0 in enumerate(self.t.column_tiles()):
            self.compute(a1, b1, n0, first_tile=i == 0)
            self.copy_out(n0)
        self.qa1.free_tensor(a1)
        self.qb1.free_tensor(b1)
        for half in range(2):
            asc.wait_flag(asc.HardEvent.M_MTE1, self.free[half])

    def copy_in(self) -> None:
        """GM -> L1: A as an NC1HWC0 map one row high (size positions of size channels), B^T
        likewise, so that one 3-D load cuts any K range of either."""
        s = self.t.size
        for que, gm in ((self.qa1, self.a), (self.qb1, self.bt)):
            l1 = que.alloc_tensor(F16)
            asc.data_copy(l1, gm, asc.Nd2NzParams(n_value=s, d_value=s, src_d_value=s,
                                                  dst_nz_c0_stride=s))
            que.enque(l1)

    def compute(self, a1, b1, n0: int, first_tile: bool) -> None:
        """The tile's K: per fill of an L0 half, wait until the Cube has freed it; per part,
        load A (ZZ) and B (ZN) into it, flag the Cube and Mmad into L0C (unit flag 2, 3 on
        the tile's last); free the half after its last part."""
        t = self.t
        for parts in t.l0_fills(first_tile):
            half = self.half
            asc.wait_flag(asc.HardEvent.M_MTE1, self.free[half])
            at = 0                      # K columns of this half already filled
            for k0, k in parts:
                a2 = self.l0a[half * self.a_half + at * t.base_m]
                b2 = self.l0b[half * self.b_half + at * t.base_n]
                at += k
                for l0, l1, rows, row0 in ((a2, a1, t.base_m, 0), (b2, b1, t.base_n, n0)):
                    asc.load_data(l0, l1, asc.LoadData3DParamsV2(
                        l1_h=1, l1_w=t.size, channel_size=t.size, k_extension=k,
                        m_extension=rows, k_start_pt=k0, m_start_pt=row0))
                asc.set_flag(asc.HardEvent.MTE1_M, self.loaded)
                asc.wait_flag(asc.HardEvent.MTE1_M, self.loaded)
                asc.mmad(self.l0c, a2, b2, asc.MmadParams(
                    m=t.base_m, n=t.base_n, k=k, cmatrix_init_val=k0 == 0,
                    unit_flag=3 if k0 + k == t.size else 2))
            asc.set_flag(asc.HardEvent.M_MTE1, self.free[half])
            self.half ^= 1

    def copy_out(self, n0: int) -> None:
        """L0C -> GM: NZ -> ND, float32 -> fp16, streaming behind the tile's last Mmad."""
        t = self.t
        asc.fixpipe(self.c[n0], self.l0c, asc.FixpipeParamsV220(
            n_size=t.base_n, m_size=t.base_m, src_stride=t.base_m, dst_stride=t.size,
            quant_pre=asc.QuantMode.F322F16, unit_flag=3))


def tile_loop(t: TileLoopTiling, a, bt, c):
    """The kernel entry: C = A . B on one AIC, from A and B^T in GM."""
    def body(core):
        kernel = TileLoopKernel(t, a, bt, c)
        kernel.init()
        kernel.process()
    return body


def tile_loop_golden(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The numpy reference: float32 products and sums, rounded to fp16 once."""
    return (a.astype(np.float32) @ b.astype(np.float32)).astype(np.float16)
