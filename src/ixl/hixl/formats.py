"""Data formats: how a matrix or a feature map is laid out for the Cube, as numpy functions.

A fractal is a small tile stored whole: 16 rows of C0 elements, C0 = 32 bytes / itemsize (16
for half types, 8 for float32, 32 for int8); an L0C fractal is 16 x 16. Capital letters order
the fractals (Z: row-major, N: column-major), small letters the elements inside one [FMT2]
[FRAC]. Everything is padded with zeros to whole fractals first.

- ND: row-major.
- FRACTAL_NZ (M, N) -> (N1, M1, 16, C0): column blocks of C0, each with all rows.
- ZZ (M, K) -> (M1, K1, 16, C0): the Cube's left operand in L0A.
- ZN (K, N) -> (K1, N1, 16, C0), each fractal column-major: the right operand in L0B; the same
  bytes as NZ of the transpose.
- NC1HWC0 (N, C, H, W) -> (N, C1, H, W, C0): channels in groups of C0, innermost.

Leading (batch) dims pass through. `*_to_nd` / `*_to_nchw` crop the padding off again.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import DTypeLike

FRACTAL = 16          # rows of a fractal (and columns of an L0C one)
BLOCK_BYTES = 32      # a fractal row: C0 elements


def c0_of(dtype: DTypeLike) -> int:
    """C0: elements per 32-byte fractal row."""
    return BLOCK_BYTES // np.dtype(dtype).itemsize


def _ceil(n: int, k: int) -> int:
    return -(-n // k)


def _pad2(x: np.ndarray, rows: int, cols: int) -> np.ndarray:
    """Zero-pad the last two dims of `x` up to `rows` x `cols`."""
    pad = [(0, 0)] * (x.ndim - 2) + [(0, rows - x.shape[-2]), (0, cols - x.shape[-1])]
    return np.pad(x, pad)


def nd_to_nz(x: np.ndarray, c0: int | None = None) -> np.ndarray:
    """(..., M, N) -> (..., N1, M1, 16, C0)."""
    c0 = c0 or c0_of(x.dtype)
    m, n = x.shape[-2:]
    m1, n1 = _ceil(m, FRACTAL), _ceil(n, c0)
    p = _pad2(x, m1 * FRACTAL, n1 * c0).reshape(*x.shape[:-2], m1, FRACTAL, n1, c0)
    return np.ascontiguousarray(np.moveaxis(p, -2, -4))


def nz_to_nd(nz: np.ndarray, shape: tuple[int, int]) -> np.ndarray:
    """(..., N1, M1, 16, C0) -> (..., M, N), cropped to `shape` (M, N)."""
    *lead, n1, m1, r, c0 = nz.shape
    nd = np.moveaxis(nz, -4, -2).reshape(*lead, m1 * r, n1 * c0)
    return np.ascontiguousarray(nd[..., :shape[0], :shape[1]])


def nd_to_zz(x: np.ndarray, c0: int | None = None) -> np.ndarray:
    """(..., M, K) -> (..., M1, K1, 16, C0)."""
    c0 = c0 or c0_of(x.dtype)
    m, k = x.shape[-2:]
    m1, k1 = _ceil(m, FRACTAL), _ceil(k, c0)
    p = _pad2(x, m1 * FRACTAL, k1 * c0).reshape(*x.shape[:-2], m1, FRACTAL, k1, c0)
    return np.ascontiguousarray(p.swapaxes(-3, -2))


def zz_to_nd(zz: np.ndarray, shape: tuple[int, int]) -> np.ndarray:
    """(..., M1, K1, 16, C0) -> (..., M, K), cropped to `shape`."""
    *lead, m1, k1, r, c0 = zz.shape
    nd = zz.swapaxes(-3, -2).reshape(*lead, m1 * r, k1 * c0)
    return np.ascontiguousarray(nd[..., :shape[0], :shape[1]])


def nd_to_zn(x: np.ndarray, c0: int | None = None) -> np.ndarray:
    """(..., K, N) -> (..., K1, N1, 16, C0): NZ of the transpose."""
    return nd_to_nz(np.swapaxes(x, -1, -2), c0)


def zn_to_nd(zn: np.ndarray, shape: tuple[int, int]) -> np.ndarray:
    """(..., K1, N1, 16, C0) -> (..., K, N), cropped to `shape` (K, N)."""
    return np.ascontiguousarray(np.swapaxes(nz_to_nd(zn, (shape[1], shape[0])), -1, -2))


def nchw_to_nc1hwc0(x: np.ndarray, c0: int | None = None) -> np.ndarray:
    """(N, C, H, W) -> (N, C1, H, W, C0), channels zero-padded to C1 x C0."""
    c0 = c0 or c0_of(x.dtype)
    n, c, h, w = x.shape
    c1 = _ceil(c, c0)
    p = np.pad(x, [(0, 0), (0, c1 * c0 - c), (0, 0), (0, 0)]).reshape(n, c1, c0, h, w)
    return np.ascontiguousarray(p.transpose(0, 1, 3, 4, 2))


def nc1hwc0_to_nchw(y: np.ndarray, channels: int) -> np.ndarray:
    """(N, C1, H, W, C0) -> (N, C, H, W) with `channels` channels."""
    n, c1, h, w, c0 = y.shape
    return np.ascontiguousarray(y.transpose(0, 1, 4, 2, 3).reshape(n, c1 * c0, h, w)[:, :channels])


def nz_shape(shape: tuple[int, ...], c0: int) -> tuple[int, ...]:
    """The storage shape of FRACTAL_NZ for a logical (..., M, N)."""
    *lead, m, n = shape
    return (*lead, _ceil(n, c0), _ceil(m, FRACTAL), FRACTAL, c0)


def nc1hwc0_shape(shape: tuple[int, ...], c0: int) -> tuple[int, ...]:
    """The storage shape of NC1HWC0 for a logical (N, C, H, W)."""
    n, c, h, w = shape
    return (n, _ceil(c, c0), h, w, c0)
