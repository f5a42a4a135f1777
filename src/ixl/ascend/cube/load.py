"""LoadData: whole fractals into L0A / L0B (MTE1 from L1; MTE2 from GM), with and without a
transpose, and the 3-D form that builds an img2col matrix from an NC1HWC0 feature map.

[LD2D]: repeat i copies fractal start_index + i * src_stride (start to start; 0 re-reads the
first) to fractal i * (dst_gap + 1) (dst_gap is end to start); with if_transpose (16-bit, L1 ->
L0) each 16 x 16 fractal lands transposed. [LDT]: each repeat transposes one square (16-bit:
one 16 x 16 fractal; 32-bit: two 16 x 8 fractals side by side; 8-bit: two 16 x 32 fractals one
above the other) and writes its fractals dst_frac_gap apart, repeats dst_gap apart (first
fractal to first fractal, end to start [U]). [LD3D]: see `_img2col`.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache, partial

import numpy as np

from ...intmath import round_up
from ..errors import IllegalInstruction
from ..gm import GlobalTensor
from ..lockstep import lockstep
from ..observe import Access, Space
from ..pipe import LocalTensor
from ..timeline import Pipe
from .operands import BF16, F16, F32, I8, U8, dtype_in, local, register_write, strided
from .params import LoadData2DParams, LoadData2dTransposeParams, LoadData3DParamsV2, check

_L0 = (Space.L0A, Space.L0B)


@dataclass(frozen=True)
class IsResetLoad3dConfig:
    """Whether a 3-D load takes its feature-map shape and padding from its params (True) or
    from the registers set_fmatrix / set_load_data_padding_value set (False)."""

    is_set_fmatrix: bool = True
    is_set_padding: bool = True


def load_data(dst: LocalTensor, src: LocalTensor | GlobalTensor,
              params: LoadData2DParams | LoadData3DParamsV2,
              config: IsResetLoad3dConfig | None = None) -> None:
    """LoadData(dst, src, LoadData2DParams | LoadData3DParamsV2)."""
    if isinstance(params, LoadData2DParams):
        _load_2d(dst, src, params)
    elif isinstance(params, LoadData3DParamsV2):
        _load_3d(dst, src, params, config or IsResetLoad3dConfig())
    else:
        raise IllegalInstruction(f"load_data takes LoadData2DParams or LoadData3DParamsV2, got "
                                 f"{type(params).__name__}")


# ---------------------------------------------------------------- 2-D

def _load_2d(dst, src, p: LoadData2DParams) -> None:
    what = "load_data"
    check(p, what)
    from_gm = isinstance(src, GlobalTensor)
    dst = local(dst, (Space.L1, *_L0) if from_gm else _L0, what, "dst")
    if not from_gm:
        src = local(src, (Space.L1,), what, "src")
    core = dst.core
    if src.itemsize != dst.itemsize:
        raise IllegalInstruction(f"{what}: {src.dtype.name} into {dst.dtype.name}: fractals "
                                 f"are copied, not converted")
    if p.if_transpose and (from_gm or dst.itemsize != 2):
        raise IllegalInstruction(f"{what} if_transpose: only 16-bit data from L1 to L0A/L0B "
                                 f"transposes (use load_data_with_transpose for 8- and "
                                 f"32-bit) [LD2D]")
    if p.addr_mode and not (from_gm and dst.space is Space.L1):
        raise IllegalInstruction(f"{what} addr_mode 1 (decreasing) is for GM -> L1 only [MVIN]")
    frac = core.chip.fractal_bytes
    elems = frac // dst.itemsize
    step = -p.src_stride if p.addr_mode else p.src_stride
    first, last = p.start_index, p.start_index + (p.repeat_times - 1) * step
    if p.repeat_times and min(first, last) < 0:
        raise IllegalInstruction(f"{what}: addr_mode 1 walks below the source start "
                                 f"(start_index {p.start_index}, src_stride {p.src_stride})")
    core.check_aligned(dst.space, dst.offset, f"{what} dst")
    if not from_gm:
        core.check_aligned(Space.L1, src.offset, f"{what} src")
    pipe = Pipe.MTE2 if from_gm else Pipe.MTE1
    n = p.repeat_times
    nbytes = n * frac
    if n:
        src_frac = p.start_index + np.arange(n) * step
        dst_frac = np.arange(n) * (p.dst_gap + 1)
        span_src = (int(src_frac.max()) + 1) * frac
        span_dst = (int(dst_frac[-1]) + 1) * frac
        if from_gm:
            sbytes = src.region(0, span_src, core.core_id, "reads", strict=core.mode.debug)
        else:
            sbytes = core.local_view(Space.L1, src.offset, span_src, what)
        dbytes = core.local_view(dst.space, dst.offset, span_dst, what)
    if from_gm:
        grid = core.burst_grid
        aligned = src.addr % grid == 0
        core.gm_move(pipe, what, src, p.start_index * frac, n, frac, step * frac,
                     write=False, aligned=aligned, bursts=1 if p.src_stride == 1 else n)
    else:
        core.issue(pipe, what, core.costs.mte1(nbytes, dst.space.value) if n else 0)
    if n:
        load = partial(_load_fractals, dbytes.reshape(-1, frac), dst_frac, src_frac, frac,
                       p.if_transpose)
        if from_gm:
            core.execute_gm(load, src, 0, sbytes)
        else:
            core.execute(partial(load, sbytes))
    if core.observers:
        reads: tuple[Access, ...] = ()
        writes: tuple[Access, ...] = ()
        if n:
            perm = _transpose16() if p.if_transpose else np.arange(elems)
            s_off = (p.start_index + np.arange(n)[:, None] * step) * elems + perm
            d_off = np.arange(n)[:, None] * (p.dst_gap + 1) * elems + np.arange(elems)
            reads = (_operand(src, dst.itemsize, s_off, "src"),)
            writes = (Access(dst.space, dst.offset, dst.itemsize, d_off, "dst"),)
        core.observe(pipe, what, reads, writes, nbytes)


def _operand(t, itemsize: int, offs: np.ndarray, role: str) -> Access:
    if isinstance(t, GlobalTensor):
        return Access(Space.GM, t.addr, itemsize, offs, role, tensor=t)
    return Access(t.space, t.offset, itemsize, offs, role)


@lru_cache(maxsize=1)
def _transpose16() -> np.ndarray:
    """Destination element j of a transposed 16 x 16 fractal reads source element perm[j]."""
    return np.arange(256).reshape(16, 16).T.reshape(-1)


# ---------------------------------------------------------------- with transpose

def load_data_with_transpose(dst: LocalTensor, src: LocalTensor,
                             params: LoadData2dTransposeParams) -> None:
    """LoadDataWithTranspose: squares of fractals transposed from L1 into L0A / L0B [LDT]."""
    what = "load_data_with_transpose"
    check(params, what)
    dst = local(dst, _L0, what, "dst")
    src = local(src, (Space.L1,), what, "src")
    if src.dtype != dst.dtype:
        raise IllegalInstruction(f"{what}: {src.dtype.name} into {dst.dtype.name}")
    dtype_in(dst, (F16, BF16, F32, I8, U8, np.dtype(np.int32), np.dtype(np.uint32),
                   np.dtype(np.int16), np.dtype(np.uint16)), what, "dst")
    core = dst.core
    core.check_aligned(Space.L1, src.offset, f"{what} src")
    core.check_aligned(dst.space, dst.offset, f"{what} dst")
    frac = core.chip.fractal_bytes
    isz = dst.itemsize
    src_map, dst_map = _square(isz)
    per = len(src_map) // (frac // isz)            # fractals per square: 1 or 2
    n = params.repeat_times
    nbytes = n * per * frac
    if n:
        sq = frac * per
        # repeat i reads square start_index + i * src_stride; fractal f of repeat i lands
        # (i * (dst_gap + 1) + f * (dst_frac_gap + 1)) fractals on
        src_step, rep_step, frac_step = (params.src_stride * sq, (params.dst_gap + 1) * frac,
                                         (params.dst_frac_gap + 1) * frac)
        first = params.start_index * sq
        sbytes = core.local_view(Space.L1, src.offset, first + (n - 1) * src_step + sq, what)
        dbytes = core.local_view(dst.space, dst.offset,
                                 (n - 1) * rep_step + (per - 1) * frac_step + frac, what)
        if not core.mode.timing_only:
            squares = strided(sbytes, src.dtype, (n, len(src_map)), (src_step, isz), first)
            fractals = strided(dbytes, dst.dtype, (n, per, frac // isz),
                               (rep_step, frac_step, isz))
            core.execute(partial(_land, fractals, squares, isz))
    core.issue(Pipe.MTE1, what, core.costs.mte1(nbytes, dst.space.value) if n else 0)
    if core.observers:
        ops: tuple[tuple[Access, ...], tuple[Access, ...]] = ((), ())
        if n:
            first_src = (params.start_index + np.arange(n) * params.src_stride) * sq
            first_dst = np.arange(n) * rep_step
            frac_dst = np.arange(per) * frac_step
            s_el = (first_src[:, None] // isz + src_map)            # (n, square elements)
            d_el = (first_dst[:, None, None] + frac_dst[None, :, None]) // isz \
                + np.arange(frac // isz)                             # (n, per, fractal elements)
            d_el = d_el.reshape(n, -1)[:, dst_map]                   # lane j of the square
            ops = ((Access(Space.L1, src.offset, isz, s_el, "src"),),
                   (Access(dst.space, dst.offset, isz, d_el, "dst"),))
        core.observe(Pipe.MTE1, what, *ops, nbytes)


# `_square`'s lane maps as views, per element size: a repeat's destination fractals (laid end
# to end) split into axes, the source square split into axes, and the order of the square's
# axes that lines them up with the destination's (so a repeat's move is one strided copy)
_LANDINGS = {2: ((16, 16), (16, 16), (1, 0)),                # (c, r) <- (r, c)
             4: ((2, 2, 8, 8), (2, 2, 8, 8), (1, 0, 3, 2)),  # (r//8, c//8, c%8, r%8)
             1: ((2, 16, 32), (32, 2, 16), (1, 2, 0))}       # (c//16, c%16, r)


@lru_cache(maxsize=4)
def _square(itemsize: int) -> tuple[np.ndarray, np.ndarray]:
    """For one square: the source element of each square lane (row-major (r, c)) and the
    destination element (within the repeat's fractals, laid end to end) it lands on.

    16-bit: one 16 x 16 fractal. 32-bit: two 16 x 8 fractals side by side (an NZ with 16 rows),
    the transpose again as two 16 x 8. 8-bit: two 16 x 32 fractals one above the other (32 x
    32), the transpose again as two 16 x 32."""
    if itemsize == 2:
        r, c = np.divmod(np.arange(256), 16)
        return r * 16 + c, c * 16 + r
    if itemsize == 4:
        r, c = np.divmod(np.arange(256), 16)
        src = (c // 8) * 128 + r * 8 + c % 8
        dst = (r // 8) * 128 + c * 8 + r % 8          # T(c, r) as two 16 x 8 fractals
        return src, dst
    if itemsize == 1:
        r, c = np.divmod(np.arange(1024), 32)
        src = (r // 16) * 512 + (r % 16) * 32 + c
        dst = (c // 16) * 512 + (c % 16) * 32 + r     # T(c, r) as two 16 x 32 fractals
        return src, dst
    raise IllegalInstruction(f"load_data_with_transpose: no {itemsize}-byte form")


# ---------------------------------------------------------------- 3-D (img2col)

def set_fmatrix(l1_h: int, l1_w: int, pad_list: tuple[int, int, int, int]) -> None:
    """SetFmatrix: the feature map's height, width and padding for later 3-D loads that do
    not reset them."""
    register_write("set_fmatrix").fmatrix = (l1_h, l1_w, tuple(pad_list))


def set_load_data_padding_value(value: float) -> None:
    """SetLoadDataPaddingValue: the value padding positions take in later 3-D loads."""
    register_write("set_load_data_padding_value").padding_value = value


# channel_size values the chip takes that are not whole C0 groups (small-channel forms);
# this model keeps the feature map as whole C0 groups and refuses them [LD3D].
_SMALL_CHANNELS = {1: (8, 16), 2: (4, 8), 4: (4,)}


def _load_3d(dst, src, p: LoadData3DParamsV2, config: IsResetLoad3dConfig) -> None:
    what = "load_data(LoadData3DParamsV2)"
    check(p, what)
    dst = local(dst, _L0, what, "dst")
    src = local(src, (Space.L1,), what, "src")
    core = dst.core
    if src.dtype != dst.dtype:
        raise IllegalInstruction(f"{what}: {src.dtype.name} into {dst.dtype.name}")
    dtype_in(dst, (F16, BF16, F32, I8, U8), what, "dst")
    isz = dst.itemsize
    if dst.space is Space.L0B and isz == 1:
        raise IllegalInstruction(f"{what}: 8-bit data does not load into L0B [LD3D]")
    if p.en_transpose and (dst.space is not Space.L0A or isz == 1):
        raise IllegalInstruction(f"{what}: en_transpose is for 16- and 32-bit data into L0A "
                                 f"(an L0B destination is always transposed) [LD3D]")
    c0 = core.chip.c0(isz)
    if p.channel_size % c0:
        raise IllegalInstruction(
            f"{what} channel_size {p.channel_size}: this model takes whole groups of C0 = {c0} "
            f"channels (the chip also has small-channel forms for "
            f"{_SMALL_CHANNELS.get(isz, ())}, which are not modeled) [LD3D]")
    core.check_aligned(Space.L1, src.offset, f"{what} src")
    core.check_aligned(dst.space, dst.offset, f"{what} dst")
    state = core.cube_state
    l1_h, l1_w, pads = (p.l1_h, p.l1_w, p.pad_list) if config.is_set_fmatrix else \
        _fmatrix(state, what)
    pad_value = p.pad_value if config.is_set_padding else state.padding_value
    mext, kext = p.m_extension, p.k_extension
    if not (l1_h and l1_w and p.channel_size and mext and kext):
        core.issue(Pipe.MTE1, "load_data", 0)
        if core.observers:
            core.observe(Pipe.MTE1, "load_data", (), ())
        return
    geo = _Img2Col(l1_h, l1_w, tuple(pads), p.channel_size // c0, c0, p.stride_h, p.stride_w,
                   p.kernel_h, p.kernel_w, p.dilation_filter_h, p.dilation_filter_w)
    if p.k_start_pt + kext > geo.k or (p.m_start_pt + mext > round_up(geo.m, 16)):
        raise IllegalInstruction(
            f"{what}: window rows [{p.m_start_pt}, {p.m_start_pt + mext}) x columns "
            f"[{p.k_start_pt}, {p.k_start_pt + kext}) outside the img2col matrix of "
            f"{geo.m} x {geo.k}")
    zz_t = dst.space is Space.L0A and p.en_transpose      # ZZ of the (k x m) transpose
    zn = dst.space is Space.L0B
    mp, kp = round_up(mext, 16), round_up(kext, 16 if zz_t else c0)
    src_off, dst_off, valid = _img2col_offsets(geo, p.m_start_pt, mext, p.k_start_pt, kext,
                                               zn, zz_t)
    fmap_bytes = geo.c1 * l1_h * l1_w * c0 * isz
    sbytes = core.local_view(Space.L1, src.offset, fmap_bytes, what)
    dbytes = core.local_view(dst.space, dst.offset, mp * kp * isz, what)
    if not core.mode.timing_only:
        pad = np.asarray(pad_value).astype(dst.dtype)
        if geo.is_matrix and not (zn or zz_t) and p.k_start_pt % c0 == 0:
            # the map is already the img2col matrix (positions x channels): views, no gather
            positions = geo.h * geo.w      # (the window's channels are inside the map)
            rows = min(max(positions - p.m_start_pt, 0), mp)
            window = strided(sbytes, src.dtype, (kp // c0, rows, c0),
                             (positions * c0 * isz, c0 * isz, isz),
                             (p.k_start_pt * positions + p.m_start_pt * c0) * isz if rows else 0)
            zz = strided(dbytes, dst.dtype, (mp // 16, kp // c0, 16, c0),
                         (kp * 16 * isz, 16 * c0 * isz, c0 * isz, isz))
            core.execute(partial(_img2col_matrix, zz, window, pad))
        else:
            core.execute(partial(_img2col, dbytes.view(dst.dtype), dst_off[valid],
                                 sbytes.view(src.dtype), src_off[valid], dst_off[~valid], pad))
    nbytes = mp * kp * isz
    core.issue(Pipe.MTE1, "load_data", core.costs.mte1(nbytes, dst.space.value))
    if core.observers:
        writes = [Access(dst.space, dst.offset, isz, dst_off[valid], "dst")]
        if (~valid).any():
            writes.append(Access(dst.space, dst.offset, isz, dst_off[~valid], "pad", const=True))
        core.observe(Pipe.MTE1, "load_data",
                     (Access(Space.L1, src.offset, isz, src_off[valid], "src"),),
                     tuple(writes), nbytes)


@lockstep
def _load_fractals(dst: np.ndarray, dst_frac: np.ndarray, src_frac: np.ndarray, frac: int,
                   transpose: bool, src: np.ndarray) -> None:
    """Fractals of `frac` bytes from `src` (bytes) into rows of `dst`, each transposed as a
    16 x 16 square of 16-bit elements when `transpose` (leading axes: cores, lockstep.py)."""
    lead = src.shape[:-1]
    data = src.reshape(*lead, -1, frac)[..., src_frac, :]
    if transpose:
        n = len(src_frac)
        data = data.view(np.uint16).reshape(*lead, n, 16, 16).swapaxes(-1, -2) \
            .reshape(*lead, n, -1).view(np.uint8)
    dst[..., dst_frac, :] = data


@lockstep
def _land(fractals: np.ndarray, squares: np.ndarray, itemsize: int) -> None:
    """Each square (rows of `squares`) transposed into its repeat's fractals (`fractals`:
    repeats x fractals x elements; leading axes: cores, lockstep.py)."""
    into, split, axes = _LANDINGS[itemsize]
    lead = squares.shape[:-1]
    dst = np.reshape(fractals, (*lead, *into), copy=False)   # splits axes only: a view
    src = np.reshape(squares, (*lead, *split), copy=False)
    np.copyto(dst, src.transpose(*range(len(lead)), *(len(lead) + a for a in axes)))


def _img2col(dst: np.ndarray, dst_at: np.ndarray, src: np.ndarray, src_at: np.ndarray,
             pad_at: np.ndarray, pad: np.ndarray) -> None:
    dst[dst_at] = src[src_at]
    dst[pad_at] = pad


@lockstep
def _img2col_matrix(zz: np.ndarray, window: np.ndarray, pad: np.ndarray) -> None:
    """A 1 x 1 img2col window that is a block of the map itself: `window` (channel blocks,
    positions, C0) into the ZZ fractals `zz` (row blocks, column blocks, 16, C0), the rows
    past the map's positions padding (leading axes: cores, lockstep.py)."""
    by_col = zz.swapaxes(-4, -3)                 # (column blocks, row blocks, 16, C0)
    whole, tail = divmod(window.shape[-2], 16)
    by_col[..., :whole, :, :] = window[..., :whole * 16, :].reshape(
        *window.shape[:-2], whole, 16, window.shape[-1])
    if tail:
        by_col[..., whole, :tail, :] = window[..., whole * 16:, :]
        by_col[..., whole, tail:, :] = pad
    by_col[..., whole + (tail > 0):, :, :] = pad


def _fmatrix(state, what: str):
    if state.fmatrix is None:
        raise IllegalInstruction(f"{what} with is_set_fmatrix False: no set_fmatrix before it")
    return state.fmatrix


@dataclass(frozen=True)
class _Img2Col:
    """The img2col matrix of an NC1HWC0 feature map (one batch): one row per output position
    (ho, wo), one column per (c1, kh, kw, c0) (the FRACTAL_Z weight order)."""

    h: int
    w: int
    pads: tuple
    c1: int
    c0: int
    stride_h: int
    stride_w: int
    kh: int
    kw: int
    dil_h: int
    dil_w: int

    @property
    def ho(self) -> int:
        return (self.h + self.pads[2] + self.pads[3] - self.dil_h * (self.kh - 1) - 1) \
            // self.stride_h + 1

    @property
    def wo(self) -> int:
        return (self.w + self.pads[0] + self.pads[1] - self.dil_w * (self.kw - 1) - 1) \
            // self.stride_w + 1

    @property
    def m(self) -> int:
        return max(self.ho, 0) * max(self.wo, 0)

    @property
    def k(self) -> int:
        return self.c1 * self.kh * self.kw * self.c0

    @property
    def is_matrix(self) -> bool:
        """A 1 x 1 kernel at stride 1 with no padding: row p of the img2col matrix is map
        position p's channels, as the map already lays them out."""
        return (self.kh, self.kw, self.stride_h, self.stride_w, self.dil_h, self.dil_w) == \
            (1, 1, 1, 1, 1, 1) and not any(self.pads)


@lru_cache(maxsize=64)
def _img2col_offsets(g: _Img2Col, m0: int, mext: int, k0: int, kext: int, zn: bool,
                     zz_t: bool):
    """For each element of the window: its source element in the feature map, its destination
    element in L0 (ZZ; ZN of the transpose for L0B; ZZ of the transpose for a transposed L0A)
    and whether it is inside the feature map (else padding)."""
    m = m0 + np.arange(round_up(mext, 16))[:, None]
    k = k0 + np.arange(round_up(kext, g.c0))[None, :]
    c0 = k % g.c0
    rest = k // g.c0
    kw_i = rest % g.kw
    kh_i = (rest // g.kw) % g.kh
    c1 = rest // (g.kw * g.kh)
    wo_n = max(g.wo, 1)
    ho, wo = m // wo_n, m % wo_n
    hi = ho * g.stride_h - g.pads[2] + kh_i * g.dil_h
    wi = wo * g.stride_w - g.pads[0] + kw_i * g.dil_w
    valid = (hi >= 0) & (hi < g.h) & (wi >= 0) & (wi < g.w) & (ho < g.ho) & (c1 < g.c1)
    src = ((c1 * g.h + np.clip(hi, 0, g.h - 1)) * g.w + np.clip(wi, 0, g.w - 1)) * g.c0 + c0
    r, c = m - m0, k - k0
    mp, kp = round_up(mext, 16), round_up(kext, g.c0)
    if zn:      # ZN of the (k x m) transpose: column blocks of C0 along k, m rows each
        dst = (c // g.c0) * mp * g.c0 + r * g.c0 + c % g.c0
    elif zz_t:  # ZZ of the transpose (k x m)
        dst = (c // 16) * 16 * mp + (r // g.c0) * 16 * g.c0 + (c % 16) * g.c0 + r % g.c0
    else:       # ZZ (m x k)
        dst = (r // 16) * 16 * kp + (c // g.c0) * 16 * g.c0 + (r % 16) * g.c0 + c % g.c0
    shape = np.broadcast(src, dst).shape
    return (np.broadcast_to(src, shape).reshape(-1), np.broadcast_to(dst, shape).reshape(-1),
            np.broadcast_to(valid, shape).reshape(-1))
