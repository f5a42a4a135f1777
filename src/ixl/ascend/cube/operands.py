"""Operand checks and fractal geometry the Cube instructions share.

An operand in the wrong memory (a left matrix not in L0A, a load into UB) is refused as the
chip's compiler and hardware refuse it; start addresses are checked against each memory's
alignment and extents against its size, always. Element offsets of fractal layouts (for the
observers) are cached: they depend only on the shape.
"""

from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING

import ml_dtypes
import numpy as np

from ...intmath import round_up
from ..core import current_core
from ..errors import IllegalInstruction
from ..gm import GlobalTensor
from ..observe import Space
from ..pipe import LocalTensor
from ..timeline import Pipe

if TYPE_CHECKING:
    from .params import CubeRegisters

F16, F32, I8, U8, I32 = (np.dtype(t) for t in (np.float16, np.float32, np.int8, np.uint8, np.int32))
BF16 = np.dtype(ml_dtypes.bfloat16)
U64 = np.dtype(np.uint64)
FRACTAL = 16


def local(t: object, spaces: tuple[Space, ...], what: str, role: str) -> LocalTensor:
    """`t` as a LocalTensor in one of `spaces`, or the chip's refusal."""
    if isinstance(t, LocalTensor) and t.space in spaces:
        return t
    where = (f"a LocalTensor at {t.position.value} ({t.space.value})" if isinstance(t, LocalTensor)
             else "a GlobalTensor (GM)" if isinstance(t, GlobalTensor) else type(t).__name__)
    want = " or ".join(s.value for s in spaces)
    raise IllegalInstruction(f"{what} {role} must be in {want}, got {where}")


def dtype_in(t: LocalTensor | GlobalTensor, allowed: tuple[np.dtype, ...], what: str,
             role: str) -> None:
    if t.dtype not in allowed:
        raise IllegalInstruction(f"{what} {role} of type {t.dtype.name}: allowed "
                                 f"{', '.join(d.name for d in allowed)}")


def register_write(what: str) -> CubeRegisters:
    """A Cube configuration register set by the scalar unit (SetHF32Mode, SetFmatrix, ...):
    one scalar instruction; returns the core's registers."""
    core = current_core()
    core.has_pipe(Pipe.M, what)
    core.issue(Pipe.S, what, core.costs.scalar_issue_cycles)
    if core.observers:
        core.observe(Pipe.S, what, (), ())
    assert core.cube_state is not None              # has_pipe(M): a Cube core
    return core.cube_state


def strided(buf: np.ndarray, dtype: np.dtype, shape: tuple[int, ...],
            strides: tuple[int, ...], offset: int = 0) -> np.ndarray:
    """A strided view of the bytes `buf` (a contiguous uint8 view of a memory) as `dtype`:
    numpy.lib.stride_tricks.as_strided's result built directly (several times cheaper per
    instruction), refused by numpy if it would reach past `buf`."""
    return np.ndarray(shape, dtype, buf, offset, strides)


@lru_cache(maxsize=256)
def zz_offsets(m: int, k: int, c0: int, kp: int) -> np.ndarray:
    """Element offsets (m, 1, k) of an m x k matrix stored ZZ with rows padded to `kp`."""
    r = np.arange(m)[:, None, None]
    c = np.arange(k)[None, None, :]
    return (r // FRACTAL) * FRACTAL * kp + (c // c0) * FRACTAL * c0 + (r % FRACTAL) * c0 + c % c0


@lru_cache(maxsize=256)
def zn_offsets(k: int, n: int, c0: int) -> np.ndarray:
    """Element offsets (1, n, k) of a k x n matrix stored ZN (column-major fractals)."""
    np_ = round_up(n, FRACTAL)
    r = np.arange(k)[None, None, :]
    c = np.arange(n)[None, :, None]
    return (r // c0) * np_ * c0 + (c // FRACTAL) * FRACTAL * c0 + (c % FRACTAL) * c0 + r % c0


@lru_cache(maxsize=256)
def nz_offsets(m: int, n: int, c0: int, mp: int) -> np.ndarray:
    """Element offsets (m, n) of an m x n matrix stored NZ with `mp` rows per column block."""
    r = np.arange(m)[:, None]
    c = np.arange(n)[None, :]
    return (c // c0) * mp * c0 + r * c0 + c % c0
