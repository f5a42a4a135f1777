"""Vector instructions on the V pipe, in count form and in mask / repeat / stride form.

The rules ([VEC] in ascend-facts): one repeat covers 256 bytes as 8 blocks of 32 bytes;
repeat_times is at most 255 and 0 is a no-op (that still costs issue time); the mask selects
lanes of each repeat, continuous (a count) or bitwise (two 64-bit words, LSB first), and
masked-off destination lanes keep their value; strides count 32-byte blocks. Count form
(`add(dst, a, b, count)`) is the counter mode the API overloads use.

Data types are the A2 vector unit's: float16 and float32 arithmetic (ints where the ISA has
them). bfloat16 is only a storage type there: kernels cast it to float32 to compute. Halves are
computed in float32 and rounded once, which is bit-identical for add, sub, mul, div and sqrt.
"""

from __future__ import annotations

import builtins
import enum
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache, partial

import ml_dtypes
import numpy as np

from .errors import AicoreOutOfBound, IllegalInstruction
from .lockstep import lockstep
from .pipe import LocalTensor
from .timeline import Pipe
from .ubbanks import Operand

# A vector instruction's lanes: a count (the count form), or a mask (an int in continuous
# mode, [low, high] 64-bit words in bitwise mode) with repeat_times.
CountOrMask = int | Sequence[int]

F16, F32, I16, I32 = (np.dtype(t) for t in (np.float16, np.float32, np.int16, np.int32))
BF16 = np.dtype(ml_dtypes.bfloat16)
_ARITH = frozenset({F16, F32, I16, I32})
_FLOAT = frozenset({F16, F32})


@dataclass(frozen=True)
class BinaryRepeatParams:
    dst_blk_stride: int = 1
    src0_blk_stride: int = 1
    src1_blk_stride: int = 1
    dst_rep_stride: int = 8
    src0_rep_stride: int = 8
    src1_rep_stride: int = 8


@dataclass(frozen=True)
class UnaryRepeatParams:
    dst_blk_stride: int = 1
    src_blk_stride: int = 1
    dst_rep_stride: int = 8
    src_rep_stride: int = 8


class RoundMode(enum.Enum):
    CAST_NONE = "none"
    CAST_RINT = "rint"
    CAST_FLOOR = "floor"
    CAST_CEIL = "ceil"
    CAST_ROUND = "round"
    CAST_TRUNC = "trunc"
    CAST_ODD = "odd"


# ---------------------------------------------------------------- operand checks and indexing

def _check_dtype(op: str, tensor: LocalTensor, allowed: frozenset) -> None:
    if tensor.dtype not in allowed:
        names = ", ".join(sorted(d.name for d in allowed))
        hint = "; bfloat16 is a storage type on this chip: cast to float32 first" \
            if tensor.dtype == BF16 else ""
        raise IllegalInstruction(
            f"{op} does not support {tensor.dtype.name} on {tensor.core.chip.arch} "
            f"(supported: {names}){hint}")


def _check_aligned(op: str, *operands) -> None:
    """Every operand, (tensor, role), of a vector instruction starts on a 32-byte UB boundary
    ([S2201]): the chip faults on any other address, whatever the form or the count."""
    for t, role in operands:
        t.core.check_ub_aligned(t.offset, f"{op} {role}")


def _check_extent(op: str, tensor: LocalTensor, last: int, role: str) -> None:
    """Element index `last` (exclusive end) must stay in UB, and in debug mode in the tensor."""
    core = tensor.core
    end_byte = tensor.offset + last * tensor.itemsize
    if end_byte > core.chip.ub_bytes:
        raise AicoreOutOfBound(
            f"aicore memory out of bound: VEC instruction error: the ub address out of bounds: "
            f"core {core.core_id} {op} {role} reaches UB {end_byte:#x}, "
            f"UB holds {core.chip.ub_bytes} bytes")
    if core.mode.debug and last > tensor.count:
        raise AicoreOutOfBound(
            f"aicore memory out of bound: core {core.core_id} {op} {role} touches elements "
            f"[0, {last}) of {tensor} (local buffer overrun)")


@lru_cache(maxsize=512)
def _lane_mask(mask_key, lanes: int) -> np.ndarray:
    if isinstance(mask_key, int):
        if not 0 <= mask_key <= lanes:
            raise IllegalInstruction(f"continuous mask {mask_key} outside [0, {lanes}]")
        return np.arange(lanes) < mask_key
    lo, hi = mask_key
    bits = np.array([(lo >> i) & 1 for i in range(64)] + [(hi >> i) & 1 for i in range(64)], bool)
    if bits[lanes:].any():
        raise IllegalInstruction(f"bitwise mask sets lanes past the {lanes} lanes of this dtype")
    return bits[:lanes]


@lru_cache(maxsize=1024)
def _indices(repeat: int, blk_stride: int, rep_stride: int, blk_elems: int, mask_key,
             lanes: int) -> np.ndarray:
    """Element offsets (repeat, active lanes) that a strided, masked instruction touches (kept
    read-only: the cache hands the same array to every instruction of this layout)."""
    lane = np.arange(lanes)
    block, within = lane // blk_elems, lane % blk_elems
    per_lane = block * blk_stride * blk_elems + within
    idx = np.arange(repeat)[:, None] * (rep_stride * blk_elems) + per_lane[None, :]
    idx = idx[:, _lane_mask(mask_key, lanes)]
    idx.flags.writeable = False
    return idx


@lru_cache(maxsize=1024)
def _indices_end(repeat: int, blk_stride: int, rep_stride: int, blk_elems: int, mask_key,
                 lanes: int) -> int:
    """One past the highest offset `_indices` gives (what the extent checks need)."""
    return int(_indices(repeat, blk_stride, rep_stride, blk_elems, mask_key, lanes).max()) + 1


def _mask_key(mask):
    if isinstance(mask, (int, np.integer)):
        return int(mask)
    lo, hi = (int(m) for m in mask)
    return (lo, hi)


def _check_repeat(op: str, tensor: LocalTensor, repeat: int) -> None:
    limit = tensor.core.chip.max_repeat
    if not 0 <= repeat <= limit:
        raise IllegalInstruction(f"{op} repeat_times {repeat} outside [0, {limit}]")


def _strided(op, operands, mask, repeat, pipe_name=None):
    """Index arrays per (tensor, blk_stride, rep_stride) operand, or None when nothing runs."""
    first = operands[0][0]
    _check_repeat(op, first, repeat)
    key = _mask_key(mask)
    lanes = first.core.chip.repeat_bytes // first.itemsize
    if repeat == 0 or key == 0 or key == (0, 0):
        return None, lanes
    result = []
    blk_elems = first.core.chip.block_elems(first.itemsize)
    for tensor, blk, rep, role in operands:
        if role == "dst" and blk == 0:
            raise IllegalInstruction(f"{op}: a dst block stride of 0 is undefined on the chip")
        layout = (repeat, blk, rep, blk_elems, key, lanes)
        _check_extent(op, tensor, _indices_end(*layout), role)
        result.append(_indices(*layout))
    return result, lanes


@lru_cache(maxsize=1024)
def _box(repeat: int, blk_stride: int, rep_stride: int, blk_elems: int, mask_key, lanes: int,
         writes: bool) -> tuple | None:
    """(shape, element strides) of the (repeat, block, element) box a strided instruction
    touches when every lane is active, else None (a partial mask, or, for the operand written,
    repeats whose blocks overlap: the index arrays then decide which write lands last)."""
    blocks = lanes // blk_elems
    if not _lane_mask(mask_key, lanes).all() or blk_stride < 0 or rep_stride < 0:
        return None
    if writes and repeat > 1 and rep_stride < (blocks - 1) * blk_stride + 1:
        return None
    return (repeat, blocks, blk_elems), (rep_stride * blk_elems, blk_stride * blk_elems, 1)


def _strided_effect(operands, idx, mask, repeat: int, lanes: int, compute):
    """The effect of a strided instruction that runs (`operands` and `idx` as for
    `_strided_operands`): dst's elements = compute(*the sources' elements). Under a full mask
    they are strided views of UB (no index array gathered or scattered); otherwise the index
    arrays' gathers and scatter."""
    first = operands[0][0]
    blk_elems = first.core.chip.block_elems(first.itemsize)
    key = _mask_key(mask)
    boxes = [_box(repeat, blk, rep, blk_elems, key, lanes, role == "dst")
             for _, blk, rep, role in operands]
    full = [b for b in boxes if b is not None]
    if len(full) == len(boxes):
        dst, *sources = [np.ndarray(shape, t.dtype, buffer=t.core.memories[t.space],
                                    offset=t.offset, strides=tuple(s * t.itemsize for s in steps))
                         for (t, *_), (shape, steps) in zip(operands, full)]

        return partial(_store, dst, compute, *sources)
    whole = first.view()
    gathered = [(t.view(), i) for (t, *_), i in zip(operands[1:], idx[1:])]

    def scatter() -> None:
        whole[idx[0]] = compute(*(v[i] for v, i in gathered))
    return scatter


def _strided_operands(operands, idx) -> tuple[tuple, tuple]:
    """(reads, writes) of a strided instruction for its observers: `operands` as given to
    `_strided`, `idx` what it returned (None when nothing ran)."""
    if idx is None:
        return (), ()
    reads = tuple(t.access(i, role) for (t, _, _, role), i in zip(operands, idx) if role != "dst")
    dst = operands[0][0].access(idx[0], "dst", const=not reads)
    return reads, (dst,)


def _count_operands(count: int, dst: LocalTensor, srcs) -> tuple[tuple, tuple]:
    """(reads, writes) of a count-form instruction: the first `count` elements of each."""
    if not count:
        return (), ()
    return (tuple(t.access(count, role) for t, role in srcs),
            (dst.access(count, "dst", const=not srcs),))


def _issue_count(op: str, cycles: float, count: int, dst: LocalTensor, srcs) -> None:
    """Issue a count-form instruction: its operands are contiguous from their starts, in
    repeats of 256 bytes of the widest (UB banks: ubbanks.py)."""
    widest = builtins.max((dst.itemsize, *(t.itemsize for t in srcs)))
    repeats = -(-count * widest // dst.core.chip.repeat_bytes)
    dst.core.vector_issue(op, cycles, tuple(Operand.contiguous(t.offset, count * t.itemsize)
                                            for t in srcs),
                          (Operand.contiguous(dst.offset, count * dst.itemsize),), repeats)


def _issue_elements(op: str, cycles: float, count: int, reads: tuple[LocalTensor, ...],
                    writes: tuple[LocalTensor, ...]) -> None:
    """Issue an instruction whose element operands are contiguous from their starts, in
    repeats of 256 bytes of the first (UB banks: ubbanks.py; a compare's or select's bitmask,
    a few bytes a repeat, is left out [U])."""
    first = (*reads, *writes)[0]
    repeats = -(-count * first.itemsize // first.core.chip.repeat_bytes)
    first.core.vector_issue(op, cycles, tuple(Operand.contiguous(t.offset, count * t.itemsize)
                                              for t in reads),
                            tuple(Operand.contiguous(t.offset, count * t.itemsize)
                                  for t in writes), repeats)


def _issue_strided(op: str, cycles: float, operands, repeats: int) -> None:
    """Issue a mask/repeat-form instruction: `operands` as given to `_strided` (dst first)."""
    core = operands[0][0].core
    ops = [Operand(t.offset, blk, rep) for t, blk, rep, _ in operands]
    core.vector_issue(op, cycles, tuple(ops[1:]), (ops[0],), repeats)


def _compute_dtype(dtype: np.dtype) -> np.dtype:
    return F32 if dtype in (F16, BF16) else dtype


# ---------------------------------------------------------------- elementwise families

def _binary(op: str, fn, allowed=_ARITH):
    def instr(dst: LocalTensor, src0: LocalTensor, src1: LocalTensor, count_or_mask,
              repeat_times: int | None = None, params: BinaryRepeatParams | None = None) -> None:
        for t in (dst, src0, src1):
            _check_dtype(op, t, allowed)
        _check_aligned(op, (dst, "dst"), (src0, "src0"), (src1, "src1"))
        core = dst.core
        if repeat_times is None:
            count = int(count_or_mask)
            if count < 0:
                raise IllegalInstruction(f"{op} count {count} is negative")
            for t, role in ((dst, "dst"), (src0, "src0"), (src1, "src1")):
                _check_extent(op, t, count, role)
            if count:
                # numpy's float16 ufuncs also compute in float32 and round once: same bits,
                # without the extra conversion passes.
                cd = (None if dst.dtype == F16 == src0.dtype == src1.dtype
                      else _compute_dtype(dst.dtype))
                core.execute(partial(fn, src0.view(count), src1.view(count), out=dst.view(count),
                                     dtype=cd, casting="unsafe"))
            _issue_count(op, core.costs.vector(op, dst.itemsize, count), count, dst, (src0, src1))
            if core.observers:
                core.observe(Pipe.V, op, *_count_operands(count, dst, ((src0, "src0"),
                                                                      (src1, "src1"))))
            return
        p = params or BinaryRepeatParams()
        operands = [(dst, p.dst_blk_stride, p.dst_rep_stride, "dst"),
                    (src0, p.src0_blk_stride, p.src0_rep_stride, "src0"),
                    (src1, p.src1_blk_stride, p.src1_rep_stride, "src1")]
        idx, lanes = _strided(op, operands, count_or_mask, repeat_times)
        if idx is not None:
            core.execute(_strided_effect(operands, idx, count_or_mask, repeat_times, lanes,
                                         partial(fn, dtype=_compute_dtype(dst.dtype))))
        _issue_strided(op, core.costs.vector(op, dst.itemsize, repeat_times * lanes), operands,
                       repeat_times if idx is not None else 0)
        if core.observers:
            core.observe(Pipe.V, op, *_strided_operands(operands, idx))
    instr.__name__ = op
    instr.__doc__ = (f"{op}(dst, src0, src1, count) or "
                     f"{op}(dst, src0, src1, mask, repeat_times, params)")
    return instr


def _unary(op: str, fn, allowed=_FLOAT):
    """`fn(x, compute_dtype)` returns the result in the compute dtype."""
    def instr(dst: LocalTensor, src: LocalTensor, count_or_mask,
              repeat_times: int | None = None, params: UnaryRepeatParams | None = None) -> None:
        _check_dtype(op, dst, allowed)
        _check_dtype(op, src, allowed)
        _apply_unary(op, dst, src, count_or_mask, repeat_times, params,
                     partial(_in_dtype, fn, _compute_dtype(dst.dtype)))
    instr.__name__ = op
    instr.__doc__ = f"{op}(dst, src, count) or {op}(dst, src, mask, repeat_times, params)"
    return instr


def _apply_unary(op, dst, src, count_or_mask, repeat_times, params, compute,
                 reads_src: bool = True):
    """dst = compute(src) in count or mask/repeat form; `reads_src` is False for an
    instruction that only writes (duplicate passes dst as a stand-in src)."""
    _check_aligned(op, (dst, "dst"), *(((src, "src"),) if reads_src else ()))
    core = dst.core
    cost_size = builtins.max(dst.itemsize, src.itemsize)
    if repeat_times is None:
        count = int(count_or_mask)
        if count < 0:
            raise IllegalInstruction(f"{op} count {count} is negative")
        _check_extent(op, dst, count, "dst")
        _check_extent(op, src, count, "src")
        if count:
            core.execute(partial(_store, dst.view(count), compute, src.view(count)),
                         self_contained=not reads_src)
        _issue_count(op, core.costs.vector(op, cost_size, count), count, dst,
                     (src,) if reads_src else ())
        if core.observers:
            core.observe(Pipe.V, op,
                         *_count_operands(count, dst, ((src, "src"),) if reads_src else ()))
        return
    p = params or UnaryRepeatParams()
    operands = [(dst, p.dst_blk_stride, p.dst_rep_stride, "dst"),
                (src, p.src_blk_stride, p.src_rep_stride, "src")]
    idx, lanes = _strided(op, operands, count_or_mask, repeat_times)
    if idx is not None:
        core.execute(_strided_effect(operands, idx, count_or_mask, repeat_times, lanes, compute),
                     self_contained=not reads_src)
    used = operands if reads_src else operands[:1]
    _issue_strided(op, core.costs.vector(op, cost_size, repeat_times * lanes), used,
                   repeat_times if idx is not None else 0)
    if core.observers:
        core.observe(Pipe.V, op, *_strided_operands(used, idx))


@lockstep
def _store(out: np.ndarray, compute, *sources) -> None:
    """out = compute(sources): element by element, so on a stack of cores' views too when
    `compute` is one of the exact functions (lockstep.py)."""
    out[...] = compute(*sources)


@lockstep
def _in_dtype(fn, cd: np.dtype, x: np.ndarray) -> np.ndarray:
    return fn(x, cd)


@lockstep
def _with_scalar(fn, s, cd: np.dtype, x: np.ndarray) -> np.ndarray:
    return fn(x, s, dtype=cd, casting="unsafe")


@lockstep
def _filled(value, dtype: np.dtype, x: np.ndarray) -> np.ndarray:
    return np.full(x.shape, value, dtype)


@lockstep
def _unchanged(x: np.ndarray) -> np.ndarray:
    return x


@lockstep
def _rounded(dtype: np.dtype, mode: RoundMode, x: np.ndarray) -> np.ndarray:
    return round_to(x, dtype, mode)


def _scalar_op(op: str, fn, allowed=_ARITH):
    def instr(dst: LocalTensor, src: LocalTensor, scalar, count_or_mask,
              repeat_times: int | None = None, params: UnaryRepeatParams | None = None) -> None:
        _check_dtype(op, dst, allowed)
        _check_dtype(op, src, allowed)
        cd = _compute_dtype(dst.dtype)
        s = cd.type(dst.dtype.type(scalar))   # the scalar register holds a T
        _apply_unary(op, dst, src, count_or_mask, repeat_times, params,
                     partial(_with_scalar, fn, s, cd))
    instr.__name__ = op
    instr.__doc__ = (f"{op}(dst, src, scalar, count) or "
                     f"{op}(dst, src, scalar, mask, repeat_times, params)")
    return instr


def _float_fn(ufunc):
    def fn(x, cd):
        with np.errstate(all="ignore"):
            return ufunc(x, dtype=cd)
    return fn


@lockstep
def _rsqrt(x, cd):
    with np.errstate(all="ignore"):
        return cd.type(1) / np.sqrt(x, dtype=cd)


@lockstep
def _reciprocal(x, cd):
    with np.errstate(all="ignore"):
        return np.divide(cd.type(1), x, dtype=cd)


@lockstep
def _divide(a, b, **kw):
    with np.errstate(all="ignore"):
        return np.divide(a, b, **kw)


add = _binary("add", np.add)
sub = _binary("sub", np.subtract)
mul = _binary("mul", np.multiply)
div = _binary("div", _divide, _FLOAT)
max = _binary("max", np.maximum)  # noqa: A001 - Ascend C's name
min = _binary("min", np.minimum)  # noqa: A001 - Ascend C's name

adds = _scalar_op("adds", np.add)
muls = _scalar_op("muls", np.multiply)
maxs = _scalar_op("maxs", np.maximum)
mins = _scalar_op("mins", np.minimum)

exp = _unary("exp", _float_fn(np.exp))
ln = _unary("ln", _float_fn(np.log))
sqrt = _unary("sqrt", lockstep(_float_fn(np.sqrt)))      # correctly rounded: exact
abs = _unary("abs", lockstep(_float_fn(np.abs)))  # noqa: A001 - Ascend C's name
reciprocal = _unary("reciprocal", _reciprocal)
rsqrt = _unary("rsqrt", _rsqrt)
relu = _unary("relu", lockstep(lambda x, cd: np.maximum(x, cd.type(0), dtype=cd)),
               _FLOAT | {I32})


def duplicate(dst: LocalTensor, scalar: float, count_or_mask: CountOrMask,
              repeat_times: int | None = None, dst_blk_stride: int = 1,
              dst_rep_stride: int = 8) -> None:
    """Duplicate: fill with a scalar (count form, or mask/repeat form with dst strides)."""
    _check_dtype("duplicate", dst, _ARITH)
    value = dst.dtype.type(scalar)
    params = UnaryRepeatParams(dst_blk_stride, 1, dst_rep_stride, 0)
    _apply_unary("duplicate", dst, dst, count_or_mask, repeat_times, params,
                 partial(_filled, value, dst.dtype), reads_src=False)


# ---------------------------------------------------------------- cast

# The A2 Cast support table ([U]: from the Ascend C Cast API documentation, not ascend-facts).
_ALL_ROUND = frozenset(RoundMode) - {RoundMode.CAST_NONE, RoundMode.CAST_ODD}
_NONE = frozenset({RoundMode.CAST_NONE})
CAST_PATHS: dict[tuple[np.dtype, np.dtype], frozenset] = {
    (F16, F32): _NONE,
    (BF16, F32): _NONE,
    (F32, F16): frozenset(RoundMode),
    (F32, BF16): _ALL_ROUND,
    (F32, F32): _ALL_ROUND,
    (F16, I32): _ALL_ROUND,
    (F32, I32): _ALL_ROUND,
    (BF16, I32): _ALL_ROUND,
    (I32, F32): _NONE | {RoundMode.CAST_RINT},
    (I16, F16): _NONE,
    (np.dtype(np.uint8), F16): _NONE,
    (F16, np.dtype(np.uint8)): _NONE | _ALL_ROUND,
    (F16, I16): _ALL_ROUND,
}


def _integral(x: np.ndarray, mode: RoundMode) -> np.ndarray:
    if mode in (RoundMode.CAST_RINT, RoundMode.CAST_NONE):
        return np.rint(x)
    if mode is RoundMode.CAST_FLOOR:
        return np.floor(x)
    if mode is RoundMode.CAST_CEIL:
        return np.ceil(x)
    if mode is RoundMode.CAST_TRUNC:
        return np.trunc(x)
    if mode is RoundMode.CAST_ROUND:
        return np.copysign(np.floor(np.abs(x) + 0.5), x)
    raise IllegalInstruction(f"round mode {mode.name} has no integral form")


def round_to(x: np.ndarray, dst: np.dtype, mode: RoundMode) -> np.ndarray:
    """Convert `x` to `dst` with the chip's round mode (exact reference for every mode)."""
    x = np.asarray(x, np.float64)
    if dst.kind in "iu":
        info = np.iinfo(dst)
        with np.errstate(invalid="ignore"):
            r = np.clip(np.nan_to_num(_integral(x, mode)), info.min, info.max)
        return r.astype(dst)
    nearest = x.astype(dst)
    if mode in (RoundMode.CAST_NONE, RoundMode.CAST_RINT):
        return nearest
    back = nearest.astype(np.float64)
    with np.errstate(invalid="ignore"):
        lo = np.where(back > x, np.nextafter(nearest, dst.type(-np.inf)), nearest)
        hi = np.where(back < x, np.nextafter(nearest, dst.type(np.inf)), nearest)
    lo64, hi64 = lo.astype(np.float64), hi.astype(np.float64)
    if mode is RoundMode.CAST_FLOOR:
        return lo
    if mode is RoundMode.CAST_CEIL:
        return hi
    if mode is RoundMode.CAST_TRUNC:
        return np.where(x < 0, hi, lo)
    if mode is RoundMode.CAST_ROUND:
        d_lo, d_hi = x - lo64, hi64 - x
        away = np.where(x < 0, lo, hi)
        return np.where(d_lo < d_hi, lo, np.where(d_hi < d_lo, hi, away))
    # CAST_ODD: an inexact result takes the neighbour whose last mantissa bit is 1.
    bits = lo.view(np.uint16 if dst.itemsize == 2 else np.uint32)
    odd = np.where(bits & 1, lo, hi)
    return np.where(back == x, nearest, odd)


def cast(dst: LocalTensor, src: LocalTensor, round_mode: RoundMode, count_or_mask: CountOrMask,
         repeat_times: int | None = None, params: UnaryRepeatParams | None = None) -> None:
    """Cast(dst, src, roundMode, count) or the mask/repeat form."""
    allowed = CAST_PATHS.get((src.dtype, dst.dtype))
    if allowed is None:
        paths = ", ".join(f"{s.name}->{d.name}" for s, d in CAST_PATHS)
        raise IllegalInstruction(
            f"cast from {src.dtype.name} to {dst.dtype.name} has no path on "
            f"{dst.core.chip.arch} (paths: {paths})")
    if round_mode not in allowed:
        raise IllegalInstruction(
            f"cast {src.dtype.name}->{dst.dtype.name} does not take {round_mode.name} "
            f"(allowed: {', '.join(sorted(m.name for m in allowed))})")
    exact_widen = round_mode is RoundMode.CAST_NONE and dst.itemsize >= src.itemsize \
        and dst.dtype.kind == "f"
    compute = _unchanged if exact_widen else partial(_rounded, dst.dtype, round_mode)
    _apply_unary("cast", dst, src, count_or_mask, repeat_times, params, compute)


# ---------------------------------------------------------------- whole-repeat reductions

def _whole_reduce(op: str, fn):
    def instr(dst: LocalTensor, src: LocalTensor, mask, repeat_times: int,
              dst_rep_stride: int = 1, src_blk_stride: int = 1, src_rep_stride: int = 8) -> None:
        _check_dtype(op, dst, _FLOAT)
        _check_dtype(op, src, _FLOAT)
        _check_aligned(op, (dst, "dst"), (src, "src"))
        core = dst.core
        idx, lanes = _strided(op, [(src, src_blk_stride, src_rep_stride, "src")], mask,
                              repeat_times)
        if idx is not None:
            _check_extent(op, dst, builtins.max(0, (repeat_times - 1) * dst_rep_stride) + 1,
                          "dst")
            core.execute(partial(_reduce_repeats, dst.view(), np.arange(repeat_times)
                                 * dst_rep_stride, src.view(), idx[0], fn))
        core.vector_issue(op, core.costs.vector(op, src.itemsize, repeat_times * lanes),
                          (Operand(src.offset, src_blk_stride, src_rep_stride),), (),
                          repeat_times)
        if core.observers:
            ops = ((), ()) if idx is None else (
                (src.access(idx[0], "src"),),
                (dst.access(np.arange(repeat_times) * dst_rep_stride, "dst"),))
            core.observe(Pipe.V, op, *ops)
    instr.__name__ = op
    instr.__doc__ = (f"{op}(dst, src, mask, repeat_times, dst_rep_stride, src_blk_stride, "
                     f"src_rep_stride): one result per repeat (Ascend C's WholeReduce, now "
                     f"ReduceRepeat); dst_rep_stride counts elements")
    return instr


def _reduce_repeats(out: np.ndarray, at: np.ndarray, src: np.ndarray, idx: np.ndarray,
                    fn) -> None:
    out[at] = fn(src[idx].astype(np.float32), axis=1)


whole_reduce_sum = _whole_reduce("whole_reduce_sum", np.sum)
whole_reduce_max = _whole_reduce("whole_reduce_max", np.max)
whole_reduce_min = _whole_reduce("whole_reduce_min", np.min)


# ---------------------------------------------------------------- compare and select

class CmpMode(enum.Enum):
    LT = "lt"
    GT = "gt"
    EQ = "eq"
    LE = "le"
    GE = "ge"
    NE = "ne"


_CMP = {CmpMode.LT: np.less, CmpMode.GT: np.greater, CmpMode.EQ: np.equal,
        CmpMode.LE: np.less_equal, CmpMode.GE: np.greater_equal, CmpMode.NE: np.not_equal}
_MASK = frozenset({np.dtype(np.uint8)})


def _check_compare_count(op: str, src: LocalTensor, count: int) -> None:
    repeat = src.core.chip.repeat_bytes
    if count < 0 or (count * src.itemsize) % repeat:
        raise IllegalInstruction(
            f"{op} count {count} x {src.itemsize} bytes must be a multiple of {repeat} bytes "
            f"(whole repeats); pad the tile")


def _bit_operands(count: int, dst: LocalTensor, srcs) -> tuple[tuple, tuple]:
    """(reads, writes) of a compare: bit i of the mask from element i of each src."""
    if not count:
        return (), ()
    return (tuple(t.access(count, role) for t, role in srcs),
            (dst.access(count, "dst", bits=True),))


def _select_operands(count: int, dst: LocalTensor, mask: LocalTensor, src0: LocalTensor,
                     src1) -> tuple[tuple, tuple]:
    """(reads, writes) of a select: element i from bit i of the mask and element i of each
    src."""
    if not count:
        return (), ()
    reads = [mask.access(count, "mask", bits=True), src0.access(count, "src0")]
    if isinstance(src1, LocalTensor):
        reads.append(src1.access(count, "src1"))
    return tuple(reads), (dst.access(count, "dst"),)


def _write_bits(op: str, dst: LocalTensor, compare, a: np.ndarray, b, count: int) -> None:
    """dst's bits = compare(a, b), one per element, LSB first."""
    _check_dtype(op, dst, _MASK)
    _check_extent(op, dst, count // 8, "dst")
    dst.core.execute(partial(_pack_compare, dst.view(count // 8), compare, a, b))


def _pack_compare(out: np.ndarray, compare, a: np.ndarray, b) -> None:
    out[...] = np.packbits(compare(a, b), bitorder="little")


def compare(dst: LocalTensor, src0: LocalTensor, src1: LocalTensor, mode: CmpMode,
            count: int) -> None:
    """Compare(dst, src0, src1, cmpMode, count): one bit per element (LSB first) into dst."""
    _check_dtype("compare", src0, _FLOAT)
    _check_dtype("compare", src1, _FLOAT)
    _check_aligned("compare", (dst, "dst"), (src0, "src0"), (src1, "src1"))
    _check_compare_count("compare", src0, count)
    _check_extent("compare", src0, count, "src0")
    _check_extent("compare", src1, count, "src1")
    core = dst.core
    _write_bits("compare", dst, _CMP[mode], src0.view(count), src1.view(count), count)
    _issue_elements("compare", core.costs.vector("compare", src0.itemsize, count), count,
                    (src0, src1), ())
    if core.observers:
        core.observe(Pipe.V, "compare", *_bit_operands(count, dst, ((src0, "src0"),
                                                                   (src1, "src1"))))


def compare_scalar(dst: LocalTensor, src: LocalTensor, scalar: float, mode: CmpMode,
                   count: int) -> None:
    """CompareScalar(dst, src, scalar, cmpMode, count)."""
    _check_dtype("compare", src, _FLOAT)
    _check_aligned("compare_scalar", (dst, "dst"), (src, "src"))
    _check_compare_count("compare_scalar", src, count)
    _check_extent("compare_scalar", src, count, "src")
    core = dst.core
    _write_bits("compare_scalar", dst, _CMP[mode], src.view(count), src.dtype.type(scalar),
                count)
    _issue_elements("compare_scalar", core.costs.vector("compare", src.itemsize, count), count,
                    (src,), ())
    if core.observers:
        core.observe(Pipe.V, "compare_scalar", *_bit_operands(count, dst, ((src, "src"),)))


def select(dst: LocalTensor, mask: LocalTensor, src0: LocalTensor, src1: LocalTensor | float,
           count: int) -> None:
    """Select(dst, selMask, src0, src1, count): src0 where the mask bit is 1, else src1
    (a tensor, or a scalar as in VSEL_TENSOR_SCALAR_MODE)."""
    _check_dtype("select", mask, _MASK)
    for t in (dst, src0) + ((src1,) if isinstance(src1, LocalTensor) else ()):
        _check_dtype("select", t, _FLOAT)
    _check_aligned("select", (dst, "dst"), (mask, "mask"), (src0, "src0"),
                   *(((src1, "src1"),) if isinstance(src1, LocalTensor) else ()))
    _check_compare_count("select", dst, count)
    for t, role in ((dst, "dst"), (src0, "src0")):
        _check_extent("select", t, count, role)
    _check_extent("select", mask, count // 8, "mask")
    core = dst.core
    other = src1.view(count) if isinstance(src1, LocalTensor) else dst.dtype.type(src1)
    core.execute(partial(_select, dst.view(count), mask.view(count // 8), src0.view(count),
                         other))
    _issue_elements("select", core.costs.vector("select", dst.itemsize, count), count,
                    (src0, *((src1,) if isinstance(src1, LocalTensor) else ())), (dst,))
    if core.observers:
        core.observe(Pipe.V, "select", *_select_operands(count, dst, mask, src0, src1))


def _select(out: np.ndarray, mask: np.ndarray, a: np.ndarray, b) -> None:
    out[...] = np.where(np.unpackbits(mask, bitorder="little").astype(bool), a, b)


# ---------------------------------------------------------------- block broadcast

@lru_cache(maxsize=256)
def _brcb_indices(repeat_times: int, blk_stride: int, rep_stride: int, blk: int
                  ) -> tuple[np.ndarray, int]:
    """The dst offsets (block k of the repeats, its elements) brcb fills, read-only, and one
    past the highest."""
    starts = (np.arange(repeat_times)[:, None] * rep_stride
              + np.arange(8)[None, :] * blk_stride) * blk
    idx = (starts[..., None] + np.arange(blk)).reshape(repeat_times * 8, blk)
    idx.flags.writeable = False
    return idx, int(idx.max()) + 1


def brcb(dst: LocalTensor, src: LocalTensor, repeat_times: int, dst_blk_stride: int = 1,
         dst_rep_stride: int = 8) -> None:
    """Brcb: each repeat takes 8 consecutive elements of src and fills one 32-byte block of
    dst with each (the building block of column and scalar broadcasts)."""
    _check_dtype("brcb", dst, _ARITH)
    _check_dtype("brcb", src, _ARITH)
    _check_aligned("brcb", (dst, "dst"), (src, "src"))
    _check_repeat("brcb", dst, repeat_times)
    core = dst.core
    blk = core.chip.block_elems(dst.itemsize)
    idx = None
    if repeat_times:
        idx, end = _brcb_indices(repeat_times, dst_blk_stride, dst_rep_stride, blk)
        _check_extent("brcb", dst, end, "dst")
        _check_extent("brcb", src, repeat_times * 8, "src")
        core.execute(partial(_spread, dst.view(), idx, src.view(repeat_times * 8)))
    core.vector_issue("brcb", core.costs.vector("duplicate", dst.itemsize,
                                                repeat_times * core.chip.lanes(dst.itemsize)),
                      (), (Operand(dst.offset, dst_blk_stride, dst_rep_stride),), repeat_times)
    if core.observers:                       # element k of src fills block k of dst
        ops = ((), ()) if idx is None else (
            (src.access(np.arange(repeat_times * 8)[:, None], "src"),), (dst.access(idx, "dst"),))
        core.observe(Pipe.V, "brcb", *ops)


def _spread(out: np.ndarray, idx: np.ndarray, src: np.ndarray) -> None:
    out[idx] = src[:, None]
