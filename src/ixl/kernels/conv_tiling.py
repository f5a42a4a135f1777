"""Host tiling of Conv and ConvTranspose on the Cube: the geometry (`ConvGeometry`, every case
seen as a 2-D convolution of an NC1HWC0 map), the img2col product it is (`ConvTiling`: per
image and group, Y (Cout x positions) = W (Cout x K) . img2col(X)^T (K x positions), K in
the (C1, kh, kw, C0) order of the 3-D load), and the sizes, all from the chip (R11).

- 1-D is 2-D with a height of 1. A ConvTranspose is the convolution of its input dilated by
  its strides (zeros between the samples, laid out by the vector cores) with its kernel
  flipped and its channel dims swapped, at stride 1 and padded by (k - 1) x dilation less its
  own pads (negative pads crop).
- The output tile is base_m output channels x base_n positions, one L0C accumulator. Its A
  block (weights) is bm x K and its B block only the band of input rows the positions reach
  (the 3-D load expands it kh x kw fold on the way into L0B), so the tile moves
  bm K + (band of C) bytes for bm bn K multiply-adds: the tile chosen moves the fewest
  bytes through the busiest core, its tiles dealt round robin [LD3D].
- The L1 chunk is a run of whole C1 groups (K = groups x kh x kw x C0) whose weights and input
  band fit L1 at the L1 buffering.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..ascend.chips import ChipSpec
from ..intmath import ceil_div, round_up
from ..nixl.tuning import DoesNotFit, TuningConfig
from .matmul_epilogue import Epilogue
from .matmul_tiling import (
    ACCUMULATOR_BYTES,
    TUNING_FIELDS,
    MatmulShape,
    MatmulTiling,
    base_k,
    candidates,
    itemsize,
    l0_fits,
)
from .tiling import Tiling

if TYPE_CHECKING:
    from .conv_layout import LayoutPlan

PAD_MAX = 255              # LoadData3DParamsV2.padList [LD3D]
STRIDE_MAX = 63            # strideW / strideH
DILATION_MAX = 255
FILTER_MAX = 511           # filterW/H with filterSizeW/H (+256)


@dataclass(frozen=True)
class ConvGeometry:
    """A 2-D convolution of the NC1HWC0 map the vector cores lay out: `h` x `w` positions
    (for a ConvTranspose its input dilated: (rows - 1) x stride + 1 of them), pads possibly
    negative (a crop)."""

    n: int                 # images
    c: int                 # input channels
    h: int                 # map height and width (as the Cube sees it)
    w: int
    m: int                 # output channels
    groups: int
    kh: int
    kw: int
    sh: int                # strides and dilations of the convolution the Cube runs
    sw: int
    dh: int
    dw: int
    pt: int                # pads: top, left, bottom, right
    pl: int
    pb: int
    pr: int
    ho: int
    wo: int
    in_h: int = 0          # the input as stored (differs from h, w for a ConvTranspose)
    in_w: int = 0
    dilate_h: int = 1      # input dilation (a ConvTranspose's strides)
    dilate_w: int = 1
    flip: bool = False     # the kernel flipped and its channel dims swapped (ConvTranspose)

    @property
    def cin(self) -> int:
        return self.c // self.groups

    @property
    def cout(self) -> int:
        return self.m // self.groups

    @property
    def taps(self) -> int:
        return self.kh * self.kw

    @property
    def positions(self) -> int:
        return self.ho * self.wo

    def window(self, lo: int, hi: int, size: int, stride: int, dil: int, k: int,
               pad: int) -> tuple[int, int, int, int]:
        """Input rows (or columns) [first, last] real and the pads before and after, for
        outputs lo..hi along one dim; first > last when they see only padding."""
        r_a, r_b = lo * stride - pad, hi * stride - pad + (k - 1) * dil
        first, last = max(r_a, 0), min(r_b, size - 1)
        return first, last, first - r_a, r_b - last

    def band(self, p0: int, count: int) -> tuple[tuple, tuple]:
        """The input band of output positions [p0, p0 + count): (first row, last row, pad
        top, pad bottom) and (first column, last column, pad left, pad right)."""
        ho_a, ho_b = p0 // self.wo, (p0 + count - 1) // self.wo
        rows = self.window(ho_a, ho_b, self.h, self.sh, self.dh, self.kh, self.pt)
        cols = self.window(0, self.wo - 1, self.w, self.sw, self.dw, self.kw, self.pl)
        return rows, cols

    def max_band_rows(self, bn: int) -> int:
        """Input rows the band of any bn positions spans at most."""
        out_rows = min(self.ho, ceil_div(bn - 1, self.wo) + 1 if bn > 1 else 1)
        return min(self.h, (out_rows - 1) * self.sh + (self.kh - 1) * self.dh + 1)


@dataclass(frozen=True)
class ConvTiling(Tiling):
    geo: ConvGeometry
    dtype: str
    c0: int
    c1: int                # C0 groups of a group's input channels
    gemm: MatmulTiling     # the img2col product: tiles, base sizes, buffering
    c1_step: int           # C1 groups per L1 chunk
    band_rows: int         # input rows an L1 band holds at most
    band_cols: int
    x_bytes: int           # the workspace: the NC1HWC0 map, then the weights (Cout x K)
    w_bytes: int
    bias: bool
    relu: bool
    layout: LayoutPlan     # the vector cores' layout work
    config: TuningConfig

    @property
    def k(self) -> int:
        """K of one group: C1 x kh x kw x C0."""
        return self.c1 * self.geo.taps * self.c0


def check_geometry(geo: ConvGeometry) -> str | None:
    """What the 3-D load cannot take, in its words [LD3D]."""
    if max(geo.sh, geo.sw) > STRIDE_MAX:
        return f"strides {geo.sh}, {geo.sw}: the 3-D load steps at most {STRIDE_MAX}"
    if max(geo.dh, geo.dw) > DILATION_MAX:
        return f"dilations {geo.dh}, {geo.dw}: the 3-D load dilates at most {DILATION_MAX}"
    if max(geo.kh, geo.kw) > FILTER_MAX:
        return f"a {geo.kh} x {geo.kw} kernel: the 3-D load takes at most {FILTER_MAX} taps a dim"
    if max(geo.pt, geo.pl, geo.pb, geo.pr) > PAD_MAX:
        return f"pads {geo.pt, geo.pl, geo.pb, geo.pr}: the 3-D load pads at most {PAD_MAX}"
    return None


def plan(geo: ConvGeometry, dtype: str, chip: ChipSpec, config: TuningConfig | None,
         bias: bool, relu: bool, layout_plan: Callable[..., LayoutPlan]) -> tuple[int, ConvTiling]:
    """(block_dim, tiling): groups of 1 AIC + 2 AIV, at most the AIC count."""
    config = (config or TuningConfig()).only(TUNING_FIELDS, "the Conv kernels")
    if config.buffers > 2:
        raise DoesNotFit(f"buffer_num {config.buffers}: L1 is single or double buffered")
    if config.hf32 and dtype != "float32":
        raise DoesNotFit(f"hf32 is a float32 mode; these operands are {dtype}")
    isz = itemsize(dtype)
    c0 = chip.c0(isz)
    c1 = ceil_div(geo.cin, c0)
    k = c1 * geo.taps * c0
    shape = MatmulShape(geo.cout, k, geo.positions, dtype, batch=(geo.n, geo.groups))
    cores = min(config.block_dim or chip.aic_cores, chip.aic_cores)
    bm, bn = _output_tile(geo, shape, chip, config, cores)
    l0_buffers = config.l0_buffers or 2
    bk = base_k(shape, chip, config, bm, bn, l0_buffers)
    band_rows = geo.max_band_rows(bn)
    c1_step = _c1_step(geo, chip, config, bm, c1, band_rows, isz, bias)
    gemm = MatmulTiling(shape, bm, bn, bk, c1_step * geo.taps * c0, l0_buffers,
                        2 if 2 * bm * bn * ACCUMULATOR_BYTES <= chip.l0c_bytes else 1,
                        ceil_div(geo.cout, bm), ceil_div(geo.positions, bn),
                        ceil_div(geo.cout, bm), dtype, Epilogue(relu=relu), bool(config.hf32),
                        config=config)
    x_bytes = round_up(geo.n * geo.groups * c1 * geo.h * geo.w * c0 * isz, chip.gm_alloc_align)
    w_bytes = round_up(geo.m * k * isz, chip.gm_alloc_align)
    blocks = min(gemm.tiles, cores) if geo.n and geo.m and geo.positions else 0
    layout = layout_plan(geo, dtype, c1, chip, 2 * blocks)
    return blocks, ConvTiling(geo, dtype, c0, c1, gemm, c1_step, band_rows, geo.w, x_bytes,
                              w_bytes, bias, relu, layout, config)


def _output_tile(geo: ConvGeometry, shape: MatmulShape, chip: ChipSpec, config: TuningConfig,
                 cores: int) -> tuple[int, int]:
    """Output channels x positions: the fewest bytes through the busiest core's GM port, A
    being bm x K and B a band of input rows (about bn positions of C channels and the
    kernel's halo), with the tiles dealt round robin over the cores."""
    unit = chip.fractal_rows
    cap = chip.mmad_max_mnk // unit * unit
    accumulators = chip.l0c_bytes // ACCUMULATOR_BYTES
    best = None
    for bm in [config.base_m] if config.base_m else candidates(geo.cout, cap, unit):
        for bn in [config.base_n] if config.base_n else candidates(geo.positions, cap, unit):
            if bm * bn > accumulators or not l0_fits(shape, chip, config, bm, bn):
                continue
            tiles = shape.batches * ceil_div(geo.cout, bm) * ceil_div(geo.positions, bn)
            moved = bm * shape.k + geo.max_band_rows(bn) * geo.w * geo.cin
            score = (ceil_div(tiles, cores) * moved, -bm * bn)
            if best is None or score < best[0]:
                best = (score, bm, bn)
    if best is None:
        raise DoesNotFit(f"no output tile fits L0C ({chip.l0c_bytes} bytes) with the base sizes "
                         f"given")
    bm, bn = (max(unit, v // config.divisor // unit * unit) for v in best[1:])
    return bm, bn


def l1_bytes(geo: ConvGeometry, chip: ChipSpec, bm: int, c1_step: int, band_rows: int,
             isz: int, bias: bool, buffers: int) -> int:
    """L1 for a chunk of C1 groups: the weights (bm x K chunk) and the input band, each at
    the L1 buffering, and the bias rows."""
    c0 = chip.c0(isz)
    weights = bm * c1_step * geo.taps * c0 * isz
    band = c1_step * band_rows * geo.w * c0 * isz
    extra = round_up(bm, chip.fractal_rows) * c0 * isz if bias else 0
    return buffers * (round_up(weights, chip.l1_align) + round_up(band, chip.l1_align)) + extra


def _c1_step(geo: ConvGeometry, chip: ChipSpec, config: TuningConfig, bm: int, c1: int,
             band_rows: int, isz: int, bias: bool) -> int:
    fits = [s for s in range(1, c1 + 1)
            if l1_bytes(geo, chip, bm, s, band_rows, isz, bias, config.buffers) <= chip.l1_bytes]
    if config.step_k:
        if config.step_k not in fits:
            raise DoesNotFit(f"step_k {config.step_k}: C1 groups per L1 chunk must fit L1 "
                             f"({chip.l1_bytes} bytes) at {config.buffers} buffers; "
                             f"{fits[-1] if fits else 0} do")
        return config.step_k
    if not fits:
        raise DoesNotFit(f"one C1 group of weights and an input band of {band_rows} x {geo.w} "
                         f"do not fit L1 ({chip.l1_bytes} bytes) at {config.buffers} buffers")
    steps = math.ceil(c1 / fits[-1])
    return ceil_div(c1, steps)            # as even as the chunks can be
