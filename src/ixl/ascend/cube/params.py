"""The Cube instructions' parameter structs, field for field as Ascend C has them, each with the
documented range of every field ([ND2NZ], [GM2L1], [LD2D], [LDT], [LD3D], [MMAD], [FIX], [FILL],
[BT], [FB] in docs/chip-facts.md). `check(params, what)` refuses a value outside its range with
the chip's "illegal instruction" error, naming the field and the range.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from ..errors import IllegalInstruction

if TYPE_CHECKING:
    from ..pipe import LocalTensor

class Ranged(Protocol):
    """A parameter struct whose fields have ranges: RANGES maps a field to [lo, hi]."""

    @property
    def RANGES(self) -> dict[str, tuple[int, int]]: ...


U16 = (0, 65535)
U8 = (0, 255)


def check(params: Ranged, what: str) -> None:
    """Every field of `params` inside the range its `RANGES` entry gives ([lo, hi])."""
    for name, (lo, hi) in params.RANGES.items():
        value = getattr(params, name)
        if isinstance(value, (tuple, list)):
            bad = [v for v in value if not lo <= v <= hi]
            if bad:
                raise IllegalInstruction(f"{what} {name} {tuple(value)}: each must lie in "
                                         f"[{lo}, {hi}]")
        elif not lo <= value <= hi:
            raise IllegalInstruction(f"{what} {name} {value} outside [{lo}, {hi}]")


@dataclass(frozen=True)
class Nd2NzParams:
    """DataCopy(L1, GM, Nd2NzParams): ND rows in GM to NZ fractals in L1 [ND2NZ].

    For each of `nd_num` matrices, `n_value` rows of `d_value` elements are read (a row every
    `src_d_value` elements, a matrix every `src_nd_matrix_stride`), each row zero-padded to
    whole 32-byte blocks; block k of row j lands at (j * dst_nz_n_stride + k * dst_nz_c0_stride)
    blocks of 32 bytes from the matrix's start, matrix i at i * dst_nz_matrix_stride elements.
    """

    nd_num: int = 1
    n_value: int = 0
    d_value: int = 0
    src_nd_matrix_stride: int = 0
    src_d_value: int = 1
    dst_nz_c0_stride: int = 1
    dst_nz_n_stride: int = 1
    dst_nz_matrix_stride: int = 0

    RANGES = {"nd_num": (0, 4095), "n_value": (0, 16384), "d_value": U16,
              "src_nd_matrix_stride": U16, "src_d_value": (1, 65535),
              "dst_nz_c0_stride": (1, 16384), "dst_nz_n_stride": (1, 16384),
              "dst_nz_matrix_stride": (0, 16384)}


@dataclass(frozen=True)
class LoadData2DParams:
    """LoadData(dst, src, LoadData2DParams): whole fractals from L1 to L0A/L0B [LD2D].

    Repeat i reads fractal start_index + i * src_stride (addr_mode 1: minus, GM->L1 only) and
    writes fractal i * (dst_gap + 1); with if_transpose (16-bit, L1 -> L0) each fractal is
    transposed (destination row j = source column j)."""

    start_index: int = 0
    repeat_times: int = 1
    src_stride: int = 1
    sid: int = 0
    dst_gap: int = 0
    if_transpose: bool = False
    addr_mode: int = 0

    RANGES = {"start_index": U16, "repeat_times": U8, "src_stride": U16, "sid": (0, 0),
              "dst_gap": U16, "addr_mode": (0, 1)}


@dataclass(frozen=True)
class LoadData2dTransposeParams:
    """LoadDataWithTranspose(dst, src, LoadData2dTransposeParams) [LDT]: each repeat joins the
    fractals of one square (b16: one 16x16; b32: two 16x8; b8: two 16x32), transposes it and
    splits it again. start_index and src_stride count squares; dst_gap counts fractals between
    repeats' first fractals, dst_frac_gap between the fractals of one repeat (b8, b32)."""

    start_index: int = 0
    repeat_times: int = 1
    src_stride: int = 1
    dst_gap: int = 0
    dst_frac_gap: int = 0
    addr_mode: int = 0

    RANGES = {"start_index": U16, "repeat_times": U8, "src_stride": U16, "dst_gap": U16,
              "dst_frac_gap": U16, "addr_mode": (0, 0)}


@dataclass(frozen=True)
class LoadData3DParamsV2:
    """LoadData(dst, src, LoadData3DParamsV2): img2col of an NC1HWC0 feature map in L1 into a
    ZZ (L0A) or ZN (L0B) matrix [LD3D]. The matrix has one row per output position (m) and one
    column per (kernel position, channel) (k): window [m_start_pt, + m_extension) x
    [k_start_pt, + k_extension)."""

    pad_list: tuple[int, int, int, int] = (0, 0, 0, 0)   # left, right, top, bottom
    l1_h: int = 1
    l1_w: int = 1
    channel_size: int = 0
    k_extension: int = 0
    m_extension: int = 0
    k_start_pt: int = 0
    m_start_pt: int = 0
    stride_w: int = 1
    stride_h: int = 1
    filter_w: int = 1
    filter_h: int = 1
    dilation_filter_w: int = 1
    dilation_filter_h: int = 1
    en_transpose: bool = False
    en_small_k: bool = False
    pad_value: float = 0
    filter_size_w: bool = False
    filter_size_h: bool = False
    f_matrix_ctrl: bool = False

    RANGES = {"pad_list": U8, "l1_h": (0, 32767), "l1_w": (0, 32767), "channel_size": U16,
              "k_extension": U16, "m_extension": U16, "k_start_pt": U16, "m_start_pt": U16,
              "stride_w": (1, 63), "stride_h": (1, 63), "filter_w": U8, "filter_h": U8,
              "dilation_filter_w": (1, 255), "dilation_filter_h": (1, 255)}

    @property
    def kernel_w(self) -> int:
        return self.filter_w + 256 * self.filter_size_w

    @property
    def kernel_h(self) -> int:
        return self.filter_h + 256 * self.filter_size_h


@dataclass(frozen=True)
class MmadParams:
    """Mmad(dst, a, b[, bias], MmadParams): C (m x n, L0C) = A (m x k, L0A) . B (k x n, L0B),
    plus C (cmatrix_init_val False, cmatrix_source False) or the bias (cmatrix_source True, or
    the bias overload) [MMAD]. m, n, k 0 is a no-op; unit_flag 0, 2 or 3 [UF]."""

    m: int = 0
    n: int = 0
    k: int = 0
    is_bias: bool = False
    fm_offset: int = 0
    en_ssparse: bool = False
    en_winograd_a: bool = False
    en_winograd_b: bool = False
    unit_flag: int = 0
    k_direction_align: bool = False
    cmatrix_source: bool = False
    cmatrix_init_val: bool = True

    RANGES = {"m": (0, 4095), "n": (0, 4095), "k": (0, 4095), "unit_flag": (0, 3)}


class QuantMode(enum.Enum):
    """Fixpipe's conversion on the way out (QuantMode_t) [FIX][QNT]. The V forms read one
    parameter word per output column from the Fixpipe buffer, the others `deq_scalar`."""

    NoQuant = "NoQuant"
    F322F16 = "F322F16"
    F322BF16 = "F322BF16"
    DEQF16 = "DEQF16"
    VDEQF16 = "VDEQF16"
    QF322B8_PRE = "QF322B8_PRE"
    VQF322B8_PRE = "VQF322B8_PRE"
    REQ8 = "REQ8"
    VREQ8 = "VREQ8"

    __hash__ = object.__hash__

    @property
    def per_channel(self) -> bool:
        return self.value.startswith("V")


class FixpipeConfig(enum.Enum):
    """Fixpipe's format template argument: CFG_ROW_MAJOR (NZ2ND into GM) or CFG_NZ."""

    CFG_ROW_MAJOR = "row_major"
    CFG_NZ = "nz"

    __hash__ = object.__hash__


CFG_ROW_MAJOR = FixpipeConfig.CFG_ROW_MAJOR
CFG_NZ = FixpipeConfig.CFG_NZ


@dataclass(frozen=True)
class FixpipeParamsV220:
    """Fixpipe(dst, src L0C, FixpipeParamsV220) [FIX][NZ2ND].

    n_size columns and m_size rows of the L0C matrix (NZ of 16 x 16 fractals; src_stride: rows
    between its column blocks, normally ceil16(m_size)) go out converted by `quant_pre`;
    dst_stride is the row pitch in elements (NZ2ND) or the column-block pitch in 32-byte blocks
    (NZ). nd_num matrices, src_nd_stride KB and dst_nd_stride elements apart, in one go."""

    n_size: int = 0
    m_size: int = 0
    src_stride: int = 0
    dst_stride: int = 0
    quant_pre: QuantMode = QuantMode.NoQuant
    deq_scalar: int = 0
    nd_num: int = 1
    src_nd_stride: int = 0
    dst_nd_stride: int = 0
    relu_en: bool = False
    unit_flag: int = 0
    is_channel_split: bool = False

    RANGES = {"n_size": (0, 4095), "m_size": U16, "src_stride": U16, "dst_stride": (0, 2**32 - 1),
              "nd_num": U16, "src_nd_stride": (0, 512), "dst_nd_stride": U16,
              "unit_flag": (0, 3)}


@dataclass(frozen=True)
class InitConstValueParams:
    """Fill(dst, InitConstValueParams): `repeat_times` runs of `block_num` blocks set to
    `init_value`, `dst_gap` blocks between runs; a block is 32 bytes in L1, 512 in L0 [FILL]."""

    repeat_times: int = 1
    block_num: int = 0
    dst_gap: int = 0
    init_value: float = 0

    RANGES = {"repeat_times": (0, 32767), "block_num": (0, 32767), "dst_gap": (0, 32767)}


@dataclass
class CubeRegisters:
    """A Cube core's configuration registers, set by scalar instructions and read by later
    loads, Mmads and Fixpipes (reset at each launch)."""

    hf32: bool = False                     # SetHF32Mode
    hf32_round_even: bool = True           # SetHF32TransMode: NEAREST_EVEN or NEAREST_ZERO
    fmatrix: tuple | None = None           # SetFmatrix: (l1_h, l1_w, pad_list)
    padding_value: float = 0               # SetLoadDataPaddingValue
    fixpipe_params: LocalTensor | None = None         # SetFixPipeConfig: the Fixpipe buffer tensor
