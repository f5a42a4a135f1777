"""Host tiling of the Cube's matrix products (MatMul, Gemm and the fused kernels around them):
what the kernel walks (`MatmulShape`) and how (`MatmulTiling`), every size derived from the
chip's buffers (R11) and open to `ixl tune` through the TuningConfig.

- The output tile (base_m x base_n, one L0C accumulator) is the one that moves the fewest
  bytes of A and B per multiply-add: the largest bm * bn / (bm + bn) whose float32 block fits
  L0C, in whole fractals, columns a whole 512-byte burst where the matrix is that wide [BPH];
  a problem with fewer tiles than AIC cores gets smaller tiles until every core has one. L0C
  holds two tiles (the Fixpipe drains one while the Mmads fill the other) when two fit.
- base_k from L0A and L0B at the L0 buffering (double by default [BPH]); the L1 chunk of K
  (step_k base_k steps) from L1 at the L1 buffering, a multiple of a 512-byte burst of K where
  it can be.
- Tiles are dealt to the cores round robin, in rounds of M-tile rows sized so that B and the
  round's rows of A and of the output stay in L2; inside a round the M tiles of one column of
  B come together, so the cores running at one time share B's columns [BPH][L2S].
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from ..ascend.chips import ChipSpec
from ..hixl import broadcast_shapes
from ..intmath import ceil_div, round_up
from ..nixl import TensorDesc
from ..nixl.tuning import DoesNotFit, TuningConfig
from .tiling import Tiling

if TYPE_CHECKING:
    from .matmul_epilogue import Epilogue

ACCUMULATOR_BYTES = 4            # L0C holds float32 (int32) [MMAD]
FRACTAL_ROWS = 16                # a fractal's rows: the most rows split-K sums with GEMVs
UNALIGNED_SHARE = 0.7            # bandwidth of GM rows off the 512-byte grid [MEMOPT]
ND2NZ_MAX_PITCH = 65535          # Nd2NzParams.src_d_value and src_nd_matrix_stride [ND2NZ]
TUNING_FIELDS = ("buffer_num", "l0_buffers", "base_m", "base_n", "base_k", "step_k",
                 "tile_div", "block_dim", "hf32")


# ---------------------------------------------------------------- what is multiplied

@dataclass(frozen=True)
class MatmulShape:
    """out[i] (m x n) = op(A)[i] (m x k) . op(B)[i] (k x n) for every index i of the output's
    batch dims. A is stored m x k (k x m when trans_a), B k x n (n x k when trans_b); the
    strides say how far apart (in elements) the matrices of A and B lie along each batch dim,
    0 where that operand is broadcast. B's rows may lie further apart than packed (`b_pitch`:
    a transposed view of a tensor whose other dims sit between them)."""

    m: int
    k: int
    n: int
    dtype: str
    batch: tuple[int, ...] = ()
    a_strides: tuple[int, ...] = ()
    b_strides: tuple[int, ...] = ()
    trans_a: bool = False
    trans_b: bool = False
    b_pitch: int = 0           # elements from one stored row of B to the next; 0: packed

    @property
    def batches(self) -> int:
        return math.prod(self.batch)

    def offsets(self, index: int) -> tuple[int, int]:
        """Element offsets of A's and B's matrices for output matrix `index`."""
        a_off = b_off = 0
        for dim, a_stride, b_stride in zip(reversed(self.batch), reversed(self.a_strides),
                                           reversed(self.b_strides)):
            index, i = divmod(index, dim)
            a_off += i * a_stride
            b_off += i * b_stride
        return a_off, b_off

    @property
    def lda(self) -> int:
        """A's row pitch as stored."""
        return self.m if self.trans_a else self.k

    @property
    def ldb(self) -> int:
        """B's row pitch as stored."""
        return self.b_pitch or (self.k if self.trans_b else self.n)


def _batch_strides(dims: tuple[int, ...], batch: tuple[int, ...], matrix: int) -> tuple:
    """Element strides of an operand's matrices along the output's batch dims (0: broadcast)."""
    padded = (1,) * (len(batch) - len(dims)) + tuple(dims)
    strides, step = [], matrix
    for d in reversed(padded):
        strides.append(0 if d == 1 else step)
        step *= d
    return tuple(reversed(strides))


def matmul_shape(a: TensorDesc, b: TensorDesc) -> MatmulShape:
    """numpy.matmul's product of a and b: a 1-D a is one row, a 1-D b one column; batch dims
    broadcast. When B is the same matrix for every batch and A's matrices lie one after the
    other, the batch folds into M (one taller product: larger tiles, B read once per tile)."""
    m, k = (1, a.shape[0]) if len(a.shape) == 1 else a.shape[-2:]
    n = 1 if len(b.shape) == 1 else b.shape[-1]
    a_batch, b_batch = a.shape[:-2], b.shape[:-2]
    batch = broadcast_shapes("MatMul", [a_batch, b_batch])
    a_strides = _batch_strides(a_batch, batch, m * k)
    b_strides, trans_b, pitch = _b_layout(b, batch, k * n)
    if batch and not any(b_strides) and a_batch == batch:
        return _normal(MatmulShape(m * math.prod(batch), k, n, a.dtype, trans_b=trans_b,
                                   b_pitch=pitch))
    return _normal(MatmulShape(m, k, n, a.dtype, batch, a_strides, b_strides, trans_b=trans_b,
                               b_pitch=pitch))


def _b_layout(b: TensorDesc, batch: tuple[int, ...], matrix: int
              ) -> tuple[tuple[int, ...], bool, int]:
    """B's batch strides, whether it lies transposed and its row pitch (0: packed). A
    transposed view (TensorDesc.transposed) lies at its own strides: a contiguous N is B as
    stored with a row pitch, a contiguous K is B^T (transB) with one; ValueError when
    neither is."""
    b_batch = b.shape[:-2]
    if b.perm is None:
        return _batch_strides(b_batch, batch, matrix), False, 0
    lead = (1,) * (len(batch) - len(b_batch))
    strides = tuple(0 if d == 1 else s for d, s in zip(lead + b_batch, lead + b.strides[:-2]))
    stride_k, stride_n = b.strides[-2:]
    if stride_n != 1 and stride_k != 1:
        raise ValueError(f"a transposed B {b} has neither K nor N contiguous")
    return strides, stride_n != 1, stride_k if stride_n == 1 else stride_n


def gemm_shape(a: TensorDesc, b: TensorDesc, trans_a: int, trans_b: int) -> MatmulShape:
    m, k = a.shape[::-1] if trans_a else a.shape
    n = b.shape[0] if trans_b else b.shape[1]
    return _normal(MatmulShape(m, k, n, a.dtype, trans_a=bool(trans_a), trans_b=bool(trans_b)))


def _normal(shape: MatmulShape) -> MatmulShape:
    """A one-row A or one-column B lies the same in memory transposed or not: take it as not
    (one ND2NZ row instead of a column of single elements); such a B's rows are then its
    single elements, packed."""
    flip_b = shape.trans_b and shape.n == 1
    return replace(shape, trans_a=shape.trans_a and shape.m > 1,
                   trans_b=shape.trans_b and not flip_b,
                   b_pitch=0 if flip_b else shape.b_pitch)


# ---------------------------------------------------------------- tiling data

@dataclass(frozen=True)
class MatmulTiling(Tiling):
    shape: MatmulShape
    base_m: int            # one Mmad's m: rows of an output tile
    base_n: int            # ... n: its columns
    base_k: int            # ... k
    k_l1: int              # K per L1 chunk (step_k x base_k)
    l0_buffers: int        # L0A / L0B slots
    l0c_buffers: int       # output tiles L0C holds
    m_tiles: int
    n_tiles: int
    round_rows: int        # M-tile rows per L2 round
    out_dtype: str         # what the Fixpipe writes (float32 into a mix kernel's workspace)
    epilogue: Any          # what follows the product (matmul_epilogue.Epilogue)
    hf32: bool = False     # float32 as HF32 (set_hf32_mode)
    vector: Any = None     # a mix kernel's vector side: its row layout (ElementwiseTiling)
    k_splits: int = 1      # K cut into this many parts, each a unit of work (split-K)
    config: TuningConfig = TuningConfig()

    @property
    def l1_buffers(self) -> int:
        return self.config.buffers

    @property
    def tiles(self) -> int:
        return self.shape.batches * self.m_tiles * self.n_tiles

    def tile(self, t: int) -> tuple[int, int, int]:
        """(output matrix, m0, n0) of tile t: rounds of `round_rows` M-tile rows, in each the
        M tiles of one column of B after another."""
        matrix, rest = divmod(t, self.m_tiles * self.n_tiles)
        per_round = self.round_rows * self.n_tiles
        r, within = divmod(rest, per_round)
        rows = min(self.round_rows, self.m_tiles - r * self.round_rows)
        nt, mt = divmod(within, rows)
        return matrix, (r * self.round_rows + mt) * self.base_m, nt * self.base_n

    def core_tiles(self, block_idx: int, block_num: int) -> range:
        """The tiles of one core: dealt round robin, so cores running at one time hold
        neighbouring tiles."""
        return range(block_idx, self.tiles, block_num)

    def describe(self) -> str:
        sh = self.shape
        grid = f"{self.m_tiles} x {self.n_tiles}" + (f" x {sh.batches}" if sh.batch else "")
        parts = [f"base block {self.base_m} x {self.base_n} x {self.base_k}",
                 f"L1 chunk of K {self.k_l1}",
                 f"{self.tiles} tile{'s' if self.tiles != 1 else ''} ({grid})",
                 f"split-K: {self.k_splits} parts of K {self.split_k}, summed by GEMVs"
                 if self.k_splits > 1 else "no split-K"]
        if sh.m == 1:
            parts.append("one-row tiles (Mmad m = 2 over A's padding)")
        if sh.trans_a or sh.trans_b:
            parts.append("A^T" if not sh.trans_b else "B^T" if not sh.trans_a else "A^T, B^T")
        parts.append("epilogue on the vector cores (mix)" if self.vector else "cube only")
        return ", ".join(parts) + f", buffers L1 {self.l1_buffers} L0 {self.l0_buffers}"

    @property
    def split_k(self) -> int:
        """K of one split-K part: whole base_k steps."""
        return round_up(ceil_div(self.shape.k, self.k_splits), self.base_k)


# ---------------------------------------------------------------- host tiling

def plan(shape: MatmulShape, chip: ChipSpec, config: TuningConfig | None, epilogue: Epilogue,
         out_dtype: str) -> tuple[int, MatmulTiling]:
    """(block_dim, tiling) of `shape` followed by `epilogue` (a bias row limits base_n to the
    BiasTable) on `chip` at `config`, the Fixpipe writing `out_dtype`; DoesNotFit when no
    base block fits the Cube's buffers at the configuration."""
    bias = epilogue.bias is not None
    config = (config or TuningConfig()).only(TUNING_FIELDS, "the Cube's matrix kernels")
    if config.buffers > 2:
        raise DoesNotFit(f"buffer_num {config.buffers}: L1 is single or double buffered")
    if config.hf32 and shape.dtype != "float32":
        raise DoesNotFit(f"hf32 is a float32 mode; these operands are {shape.dtype}")
    cores = min(config.block_dim or chip.aic_cores, chip.aic_cores)
    bm, bn = _output_tile(shape, chip, config, bias, cores)
    splits = 1
    if _splittable(shape, epilogue):
        bm, bn, splits = _split_k(shape, chip, config, bias, cores, (bm, bn))
    l0c_buffers = 2 if 2 * bm * bn * ACCUMULATOR_BYTES <= chip.l0c_bytes else 1
    l0_buffers = config.l0_buffers or 2
    part = shape
    if splits > 1:      # K of one part, at least the GEMV's float32 rows of the parts in L0B
        gemv_k = round_up(splits, FRACTAL_ROWS) * ACCUMULATOR_BYTES // itemsize(shape.dtype)
        part = replace(shape, k=max(ceil_div(shape.k, splits), gemv_k))
    bk = base_k(part, chip, config, bm, bn, l0_buffers)
    splits = ceil_div(shape.k, round_up(part.k, bk)) if splits > 1 else 1   # none empty
    k_l1 = _l1_chunk(shape, chip, config, bm, bn, bk, bias)
    m_tiles, n_tiles = ceil_div(shape.m, bm), ceil_div(shape.n, bn)
    tiling = MatmulTiling(shape, bm, bn, bk, k_l1, l0_buffers, l0c_buffers, m_tiles, n_tiles,
                          _round_rows(shape, chip, bm, m_tiles, out_dtype), out_dtype,
                          epilogue, bool(config.hf32), k_splits=splits, config=config)
    return min(tiling.tiles * splits, cores), tiling


def _splittable(shape: MatmulShape, epilogue) -> bool:
    """Split-K takes a product of one M tile (a decode step's few rows) that the Cube
    finishes alone (its partial sums meet on the Cube, not on the vector cores)."""
    return shape.batches == 1 and shape.k > 0 and 0 < shape.m <= FRACTAL_ROWS \
        and not epilogue.vector


def _split_k(shape: MatmulShape, chip: ChipSpec, config: TuningConfig, bias: bool,
             cores: int, occupied: tuple[int, int]) -> tuple[int, int, int]:
    """(bm, bn, parts) for few rows: columns in whole 512-byte bursts, K cut so that the
    column tiles times the parts spread evenly over the cores. The estimate is the busiest
    core's bytes: its parts of B and their float32 partial rows out, then the rows it sums
    back in; rows off the 512-byte grid count at the 70% they reach [MEMOPT]."""
    if config.base_n or shape.k < 2 * FRACTAL_ROWS:
        return (*occupied, 1)
    isz = itemsize(shape.dtype)
    bm = round_up(shape.m, chip.fractal_rows)
    bn = min(chip.gm_alloc_align // isz, round_up(shape.n, chip.fractal_rows))
    tiles = ceil_div(shape.n, bn)
    partial = shape.m * bn * ACCUMULATOR_BYTES

    def cost(parts: int) -> float:
        units = ceil_div(tiles * parts, cores)
        return units * (ceil_div(shape.k, parts) * bn * isz + partial) \
            + ceil_div(tiles, cores) * parts * partial

    occ_n = occupied[1]
    share = 1 if occ_n * isz % chip.gm_alloc_align == 0 else UNALIGNED_SHARE
    unsplit = ceil_div(ceil_div(shape.n, occ_n), cores) * shape.k * occ_n * isz / share
    best = min(range(2, min(cores, shape.k // FRACTAL_ROWS) + 1), key=cost, default=None)
    if best is None or cost(best) >= unsplit:
        return (*occupied, 1)
    return bm, bn, best


def itemsize(dtype: str) -> int:
    return 2 if dtype in ("float16", "bfloat16") else 4


def candidates(size: int, cap: int, unit: int) -> list[int]:
    """Powers of two times a fractal up to the padded size (and the padded size itself)."""
    padded = round_up(max(size, 1), unit)
    out, c = [], unit
    while c <= min(padded, cap):
        out.append(c)
        c *= 2
    if padded <= cap and padded not in out:
        out.append(padded)
    return out


def _output_tile(shape: MatmulShape, chip: ChipSpec, config: TuningConfig, bias: bool,
                 cores: int) -> tuple[int, int]:
    unit = chip.fractal_rows
    cap = chip.mmad_max_mnk // unit * unit
    accumulators = chip.l0c_bytes // ACCUMULATOR_BYTES
    n_cap = min(cap, chip.bias_table_bytes // ACCUMULATOR_BYTES) if bias else cap
    burst = chip.gm_alloc_align // itemsize(shape.dtype)        # a 512-byte row of B
    if config.base_m and config.base_n:
        bm, bn = config.base_m, config.base_n
    else:
        best = None
        for bm in [config.base_m] if config.base_m else candidates(shape.m, cap, unit):
            for bn in [config.base_n] if config.base_n else candidates(shape.n, n_cap, unit):
                if bm * bn > accumulators or not l0_fits(shape, chip, config, bm, bn):
                    continue
                aligned = bn % burst == 0 or bn >= shape.n
                score = (bm * bn / (bm + bn), aligned, bm)
                if best is None or score > best[0]:
                    best = (score, bm, bn)
        if best is None:
            raise DoesNotFit("no output tile fits L0C with the base sizes given")
        _, bm, bn = best
        bm, bn = (max(unit, v // config.divisor // unit * unit) for v in (bm, bn))
        bm, bn = occupy(shape, bm, bn, cores, unit, config)
    if bm * bn > accumulators:
        raise DoesNotFit(f"a {bm} x {bn} float32 tile needs {bm * bn * ACCUMULATOR_BYTES} "
                         f"bytes of L0C; {chip.l0c_bytes} on {chip.name}")
    if bn > n_cap:
        raise DoesNotFit(f"base_n {bn}: a bias row of {bn} floats exceeds the BiasTable's "
                         f"{chip.bias_table_bytes} bytes")
    return bm, bn


def l0_fits(shape: MatmulShape, chip: ChipSpec, config: TuningConfig, bm: int, bn: int
            ) -> bool:
    """A K step of one fractal of A and B fits L0A and L0B at the L0 buffering."""
    step = chip.fractal_rows * itemsize(shape.dtype) * (config.l0_buffers or 2)
    return round_up(bm, chip.fractal_rows) * step <= chip.l0a_bytes and \
        round_up(bn, chip.fractal_rows) * step <= chip.l0b_bytes


def occupy(shape: MatmulShape, bm: int, bn: int, cores: int, unit: int,
            config: TuningConfig) -> tuple[int, int]:
    """Halve the tile (its longer side first; never a side the config fixes) while there are
    fewer tiles than cores and halving makes more, so a small product still spreads over the
    Cube cores."""
    def tiles(m, n):
        return shape.batches * ceil_div(shape.m, m) * ceil_div(shape.n, n)
    while tiles(bm, bn) < cores:
        options = []
        if not config.base_n and bn > unit:
            options.append((bn, bm, round_up(bn // 2, unit)))
        if not config.base_m and bm > unit:
            options.append((bm, round_up(bm // 2, unit), bn))
        options = [(side, m, n) for side, m, n in options if tiles(m, n) > tiles(bm, bn)]
        if not options:
            break
        _, bm, bn = max(options)
    return bm, bn


def base_k(shape: MatmulShape, chip: ChipSpec, config: TuningConfig, bm: int, bn: int,
            l0_buffers: int) -> int:
    isz = itemsize(shape.dtype)
    unit = chip.fractal_rows
    fits = min(chip.l0a_bytes // l0_buffers // (round_up(bm, unit) * isz),
               chip.l0b_bytes // l0_buffers // (round_up(bn, chip.fractal_rows) * isz),
               chip.mmad_max_mnk)
    bk = config.base_k or min(fits // unit * unit, round_up(max(shape.k, 1), unit))
    if bk == 0 or bk % unit or bk > fits:
        raise DoesNotFit(f"base_k {bk or '(none)'}: a {bm} x {bn} tile's K step must be a "
                         f"multiple of {unit} with {l0_buffers} x its A and B blocks in L0A "
                         f"({chip.l0a_bytes} bytes) and L0B ({chip.l0b_bytes})")
    return bk


def l1_bytes(shape: MatmulShape, chip: ChipSpec, bm: int, bn: int, k_l1: int,
             bias: bool, buffers: int) -> int:
    """L1 taken by the A and B chunks (`buffers` each), the bias row and, with trans_a, A's
    columns padded to C0."""
    isz = itemsize(shape.dtype)
    c0, unit = chip.c0(isz), chip.fractal_rows
    if shape.trans_a:
        a = round_up(k_l1, unit) * round_up(bm, c0) * isz
    else:
        a = bm * round_up(k_l1, c0) * isz
    b = round_up(k_l1, unit) * round_up(bn, unit) * isz
    extra = round_up(bn * isz, chip.l1_align) if bias else 0
    return buffers * (round_up(a, chip.l1_align) + round_up(b, chip.l1_align)) + extra


def _l1_chunk(shape: MatmulShape, chip: ChipSpec, config: TuningConfig, bm: int, bn: int,
              bk: int, bias: bool) -> int:
    buffers = config.buffers
    most = round_up(max(shape.k, 1), bk) // bk
    fits = [s for s in range(1, most + 1)
            if l1_bytes(shape, chip, bm, bn, s * bk, bias, buffers) <= chip.l1_bytes]
    if config.step_k:
        if config.step_k not in fits and config.step_k <= most:
            raise DoesNotFit(f"step_k {config.step_k}: {config.step_k} x {bk} of K for A and B "
                             f"at {buffers} buffers exceeds L1 ({chip.l1_bytes} bytes)")
        return min(config.step_k, most) * bk
    if not fits:
        raise DoesNotFit(f"no L1 chunk of A and B fits {chip.l1_bytes} bytes of L1 at "
                         f"{buffers} buffers ({bm} x {bn} x {bk} base block)")
    step = fits[-1]
    burst = chip.gm_alloc_align // itemsize(shape.dtype)
    aligned = [s for s in fits if s * bk % burst == 0]
    if step * bk > burst and aligned:        # chunks starting on 512-byte bursts of K
        step = aligned[-1]
    return step * bk


def _round_rows(shape: MatmulShape, chip: ChipSpec, bm: int, m_tiles: int,
                out_dtype: str) -> int:
    """M-tile rows per round: B, the round's rows of A and of the output in L2 [BPH][L2S]."""
    isz, osz = itemsize(shape.dtype), itemsize(out_dtype)
    b_bytes = shape.k * shape.n * isz
    per_row = bm * (shape.k * isz + shape.n * osz)
    if b_bytes + m_tiles * per_row <= chip.l2_bytes:
        return m_tiles
    return max(1, min(m_tiles, (chip.l2_bytes - b_bytes) // per_row))
