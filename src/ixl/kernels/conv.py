"""Native Conv (1-D and 2-D: strides, dilations, pads, groups, depthwise, bias) on the Cube,
through NC1HWC0 and img2col, as one mix kernel (1 AIC + 2 AIV per block).

1. The vector cores lay the input out as NC1HWC0 and the weights as Cout x K rows, K in the
   3-D load's (C1, kh, kw, C0) order, in the GM workspace (conv_layout.py); all cores meet at
   a SyncAll.
2. Each AIC takes output tiles (base_m output channels x base_n positions of one image and
   group) as MatMul does (matmul.py: L1 and L0 double buffered, unit flags, one Fixpipe per
   tile): per L1 chunk of C1 groups it copies the tile's weight rows and the band of input
   rows its positions reach into L1, and per base_k step loads the weights into L0A (ZZ) and
   lets the 3-D load build the img2col block into L0B (ZN, transposed on the way) with the
   convolution's pads, strides, kernel and dilations [LD3D]; the Mmads accumulate
   Y (Cout x positions) in L0C and the Fixpipe writes it into y as NCHW rows (and applies
   ReLU when one follows the Conv in a fused chain).

The bias is a per-output-channel column, which the BiasTable (a row broadcast over the M
rows [MMAD]) cannot add here: it is the first Mmad of each tile instead, of k = 1: A the bias
values (one ND2NZ row of one element each, zero padded), B a row of ones (Fill).

Depthwise convolutions run here too, as groups of one channel: each group's K is one C0
group of which one channel is live, so the Cube does 1/C0 useful work (and its m of the
group's output channels, often 1, fills 1 of 16 rows). A vector kernel would suit them better
(kh x kw multiply-adds per output on 128 lanes); that is left for later, and the profile
says how far from the Cube's peak they run.

The file reads as an Ascend C sample: the kernel class (process, copy_in, split, copy_out over
MatmulKernel's queues and compute), the kernel entry, the host tiling and the registration.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from ..ascend import lang as asc
from ..ascend.chips import ChipSpec
from ..hixl.dtypes import FLOATS, to_numpy
from ..hixl.ops.conv import conv_geometry
from ..intmath import ceil_div, round_up
from ..nixl import KernelContext, KernelEntry, LaunchPlan, TensorDesc, register_kernel
from ..nixl.backend import KernelType
from ..nixl.tuning import TuningConfig
from .conv_layout import LayoutKernel, plan_layout
from .conv_tiling import ConvGeometry, ConvTiling, check_geometry, plan
from .fusion_provider import FUSION
from .matmul import FRACTAL, QUANT, TUNING_SPACE, MatmulKernel
from .version import BUILT_FOR_RUNTIME

# ---------------------------------------------------------------- the device kernel (AIC)

class ConvKernel(MatmulKernel):
    """One AIC's share of the output tiles of the img2col product."""

    def __init__(self, ctx: KernelContext, ct: ConvTiling, x_map: asc.GlobalTensor,
                 w_rows: asc.GlobalTensor, y: asc.GlobalTensor,
                 bias: asc.GlobalTensor | None = None) -> None:
        self.ct = ct
        super().__init__(ctx, ct.gemm, w_rows, x_map, y)
        self.bias_rows = bias
        if bias is not None:
            self.bias_l1 = asc.TQue(asc.TPosition.C1)
            self.pipe.init_buffer(self.bias_l1, 1, round_up(ct.gemm.base_m, FRACTAL) * self.c0
                                  * self.dtype.itemsize)

    def a1_elements(self) -> int:
        """A tile's weight rows for a chunk of C1 groups."""
        ct = self.ct
        return ct.gemm.base_m * ct.c1_step * ct.geo.taps * ct.c0

    def b1_elements(self) -> int:
        """The input band for a chunk of C1 groups."""
        ct = self.ct
        return ct.c1_step * ct.band_rows * ct.band_cols * ct.c0

    def process(self) -> Iterator[object]:
        ct, t, geo = self.ct, self.ct.gemm, self.ct.geo
        for _ in range(1 + bool(ct.layout.zero_bytes)):     # the vector cores' layout
            yield asc.sync_all()
        for i, index in enumerate(t.core_tiles(self.ctx.block_idx, self.ctx.block_num)):
            matrix, m0, p0 = t.tile(index)
            bm, bn = min(t.base_m, geo.cout - m0), min(t.base_n, geo.positions - p0)
            c = self.l0c[i % len(self.l0c)]
            rows, cols = geo.band(p0, bn)
            chunks = [] if rows[0] > rows[1] or cols[0] > cols[1] else \
                list(range(0, ct.c1, ct.c1_step))
            first = True
            if self.bias_rows is not None:
                self.bias_mmad(c, matrix % geo.groups * geo.cout + m0, bm, bn, last=not chunks)
                first = False
            for g1 in chunks:
                n1 = min(ct.c1_step, ct.c1 - g1)
                kc = n1 * geo.taps * ct.c0
                self.copy_in(matrix, m0, bm, g1, n1, rows, cols)
                for kk in range(0, kc, t.base_k):
                    bk = min(t.base_k, kc - kk)
                    self.split(bm, bn, kc, kk, bk, n1, p0, rows, cols)
                    self.compute(c, bm, bn, bk, False, first=first,
                                 last=g1 == chunks[-1] and kk + bk == kc,
                                 last_of_chunk=kk + bk == kc)
                    first = False
            if first:                       # the window sees only padding, and no bias
                self.zero(c, bm, bn, False)
            self.copy_out(c, matrix, m0, p0, bm, bn)

    def bias_mmad(self, c: asc.LocalTensor, co: int, bm: int, bn: int, last: bool) -> None:
        """C = bias (a column) x a row of ones: the tile's first Mmad, k = 1."""
        assert self.bias_rows is not None                # called for a conv with a bias
        rows = self.bias_l1.alloc_tensor(self.dtype)
        asc.data_copy(rows, self.bias_rows[co], asc.Nd2NzParams(
            n_value=bm, d_value=1, src_d_value=1, dst_nz_c0_stride=bm))
        self.bias_l1.enque(rows)
        rows = self.bias_l1.deque()
        a2 = self.a2.alloc_tensor(self.dtype)
        asc.load_data(a2, rows, asc.LoadData3DParamsV2(
            l1_h=1, l1_w=bm, channel_size=self.c0, k_extension=self.c0,
            m_extension=round_up(bm, FRACTAL)))
        self.bias_l1.free_tensor(rows)
        self.a2.enque(a2)
        b2 = self.b2.alloc_tensor(self.dtype)
        asc.fill(b2, asc.InitConstValueParams(repeat_times=1, block_num=ceil_div(bn, FRACTAL),
                                              init_value=1))
        self.b2.enque(b2)
        self.compute(c, bm, bn, 1, False, first=True, last=last, last_of_chunk=False)

    # copy_in and split take the convolution's tile (its process() calls them, not the
    # matmul's): the override's signature differs on purpose.
    def copy_in(self, matrix: int, m0: int, bm: int, g1: int, n1: int,  # type: ignore[override]
                rows: tuple[int, int, int, int], cols: tuple[int, int, int, int]) -> None:
        """GM -> L1: the tile's weight rows for C1 groups [g1, g1 + n1) (ND -> NZ) and the
        band of the NC1HWC0 map those groups' rows and columns span."""
        ct, geo = self.ct, self.ct.geo
        k, kc = ct.k, n1 * geo.taps * ct.c0
        co = matrix % geo.groups * geo.cout + m0
        a1 = self.a1.alloc_tensor(self.dtype)
        asc.data_copy(a1, self.a[co * k + g1 * geo.taps * ct.c0], asc.Nd2NzParams(
            n_value=bm, d_value=kc, src_d_value=k, dst_nz_c0_stride=bm))
        self.a1.enque(a1)
        b1 = self.b1.alloc_tensor(self.dtype)
        (r0, r1, _, _), (q0, q1, _, _) = rows, cols
        height, width = r1 - r0 + 1, q1 - q0 + 1
        first = ((matrix * ct.c1 + g1) * geo.h + r0) * geo.w + q0     # in positions of C0
        if width == geo.w:          # whole rows: one run per C1 group
            asc.data_copy(b1, self.b[first * ct.c0], asc.DataCopyParams(
                block_count=n1, block_len=height * width,
                src_stride=(geo.h - height) * geo.w, dst_stride=0))
        else:
            for j in range(n1):
                asc.data_copy(b1[j * height * width * ct.c0],
                              self.b[(first + j * geo.h * geo.w) * ct.c0], asc.DataCopyParams(
                                  block_count=height, block_len=width,
                                  src_stride=geo.w - width, dst_stride=0))
        self.b1.enque(b1)

    def split(self, bm: int, bn: int, kc: int, kk: int, bk: int,  # type: ignore[override]
              n1: int, p0: int, rows: tuple[int, int, int, int], cols: tuple[int, int, int, int]
              ) -> None:
        """L1 -> L0 for K [kk, kk + bk) of the chunk: the weights as ZZ, the img2col block of
        the tile's positions as ZN."""
        geo, c0 = self.ct.geo, self.c0
        if kk == 0:
            self.chunk = (self.a1.deque(), self.b1.deque())
        assert self.chunk is not None               # loaded at the chunk's first K step
        a1, b1 = self.chunk
        a2 = self.a2.alloc_tensor(self.dtype)
        asc.load_data(a2, a1, asc.LoadData3DParamsV2(
            l1_h=1, l1_w=bm, channel_size=kc, k_extension=round_up(bk, c0),
            m_extension=round_up(bm, FRACTAL), k_start_pt=kk))
        self.a2.enque(a2)
        (r0, r1, top, bottom), (q0, q1, left, right) = rows, cols
        out_rows = p0 // geo.wo, (p0 + bn - 1) // geo.wo
        start = p0 - out_rows[0] * geo.wo
        window = (out_rows[1] - out_rows[0] + 1) * geo.wo
        b2 = self.b2.alloc_tensor(self.dtype)
        asc.load_data(b2, b1, asc.LoadData3DParamsV2(
            pad_list=(left, right, top, bottom), l1_h=r1 - r0 + 1, l1_w=q1 - q0 + 1,
            channel_size=n1 * c0, k_extension=round_up(bk, c0),
            m_extension=min(round_up(bn, FRACTAL), round_up(window, FRACTAL) - start),
            k_start_pt=kk, m_start_pt=start, stride_w=geo.sw, stride_h=geo.sh,
            filter_w=geo.kw % 256, filter_h=geo.kh % 256, filter_size_w=geo.kw > 255,
            filter_size_h=geo.kh > 255, dilation_filter_w=geo.dw, dilation_filter_h=geo.dh))
        self.b2.enque(b2)

    def copy_out(self, c: asc.LocalTensor, matrix: int, m0: int, p0: int, bm: int, bn: int) -> None:
        """L0C -> y: output channels as NCHW rows of the image's positions."""
        geo = self.ct.geo
        image, g = divmod(matrix, geo.groups)
        first = (image * geo.m + g * geo.cout + m0) * geo.positions + p0
        asc.fixpipe(self.out[first], c, asc.FixpipeParamsV220(
            n_size=bn, m_size=bm, src_stride=round_up(bm, FRACTAL), dst_stride=geo.positions,
            quant_pre=QUANT[self.ct.dtype], relu_en=self.ct.relu, unit_flag=3))


def conv_kernel(ctx: KernelContext, x: asc.GlobalTensor, w: asc.GlobalTensor,
                *rest: asc.GlobalTensor) -> Iterator[object]:
    """x, w[, b], y: the AIVs lay out the operands, the AICs run the product."""
    ct: ConvTiling = ctx.tiling
    bias, y = (rest[0], rest[1]) if len(rest) == 2 else (None, rest[0])
    dtype = to_numpy(ct.dtype)
    x_map = ctx.planned_workspace.window(0, ct.x_bytes).reinterpret(dtype)
    w_rows = ctx.planned_workspace.window(ct.x_bytes, ct.w_bytes).reinterpret(dtype)
    if ctx.is_aic:
        return ConvKernel(ctx, ct, x_map, w_rows, y, bias).process()
    return LayoutKernel(ctx, ct.geo, ct.layout, x, w, x_map, w_rows).process()


# ---------------------------------------------------------------- host tiling

def geometry(x: TensorDesc, w: TensorDesc, attrs: dict) -> ConvGeometry:
    """ONNX Conv's attributes as the 2-D convolution the Cube runs (1-D: height 1)."""
    geo = conv_geometry(x.shape, w.shape, attrs)
    one_d = len(x.shape) == 3
    h, wd = (1, x.shape[2]) if one_d else x.shape[2:]
    kh, kw = (1, w.shape[2]) if one_d else w.shape[2:]
    ho, wo = (1, geo.out[0]) if one_d else geo.out
    (sh, sw), (dh, dw) = ((1, geo.strides[0]), (1, geo.dilations[0])) if one_d else \
        (geo.strides, geo.dilations)
    pt, pl, pb, pr = (0, geo.pads[0], 0, geo.pads[1]) if one_d else \
        (geo.pads[0], geo.pads[1], geo.pads[2], geo.pads[3])
    return ConvGeometry(x.shape[0], x.shape[1], h, wd, w.shape[0], attrs["group"], kh, kw, sh,
                        sw, dh, dw, pt, pl, pb, pr, ho, wo, h, wd)


def launch_plan(geo: ConvGeometry, ins: list, chip: ChipSpec, config: TuningConfig | None,
                relu: bool) -> LaunchPlan:
    bias = len(ins) > 2 and ins[2] is not None
    blocks, tiling = plan(geo, ins[0].dtype, chip, config, bias, relu, plan_layout)
    return LaunchPlan(blocks, tiling, workspace_bytes=tiling.x_bytes + tiling.w_bytes,
                      kind=KernelType.MIX)


def _plan(ins, outs, attrs, chip, config=None) -> LaunchPlan:
    return launch_plan(geometry(ins[0], ins[1], attrs), ins, chip, config, relu=False)


# ---------------------------------------------------------------- registration

def declines(geo: ConvGeometry | None, descs: list) -> str | None:
    if any(d is not None and d.is_padded for d in descs):
        return "padded or formatted storage runs on the shim"
    if geo is None:
        return "1-D and 2-D convolutions run natively (more spatial dims on the shim)"
    if geo.cin == 0:
        return "no input channels: the output is the bias, written by the shim"
    if geo.positions == 0:
        return "no output positions: the empty output is written by the shim"
    return check_geometry(geo)


def _declines(descs: list, attrs: dict) -> str | None:
    x, w = descs[0], descs[1]
    return declines(geometry(x, w, attrs) if len(x.shape) in (3, 4) else None, descs)


def relu_anchor(op: str, geometry_of: Callable[..., ConvGeometry]) -> Callable[..., dict]:
    """`op` as a fusion anchor that takes one following ReLU (the Fixpipe's)."""
    def build(kernel_name, program, at, args, attrs, in_descs, out) -> dict:
        relu = [s.op for s in program] == ["Relu"] and at == 0
        reason = None if relu else f"the {op} kernel fuses one following Relu (the Fixpipe's)"

        def tiling(ins, outs, _attrs, chip, config):
            own = [ins[a] for a in args if a is not None]
            return launch_plan(geometry_of(own[0], own[1], attrs), own, chip, config, True)

        def kernel(ctx, *gm):
            return conv_kernel(ctx, *(gm[a] for a in args if a is not None), gm[-1])
        kernel.__name__ = kernel.__qualname__ = kernel_name

        def refuses(descs, _attrs):
            own = [descs[a] for a in args if a is not None]
            return reason or (declines(geometry_of(own[0], own[1], attrs), own)
                              if len(own[0].shape) in (3, 4) else declines(None, own))

        return {"kernel": kernel, "tiling": tiling, "dtypes": FLOATS, "declines": refuses,
                "tuning_space": TUNING_SPACE, "kind": KernelType.MIX}
    return build


register_kernel(KernelEntry(
    op="Conv", kernel=conv_kernel, tiling=_plan, dtypes=FLOATS,
    built_for_runtime=BUILT_FOR_RUNTIME, declines=_declines, kind=KernelType.MIX,
    tuning_space=TUNING_SPACE))
FUSION.add_anchor("Conv", relu_anchor("Conv", geometry))
