"""TensorDesc: logical shape vs storage shape, format and dtype, kept apart everywhere (R5).

A tensor stored ND may pad its last dim; one stored FRACTAL_NZ or NC1HWC0 (the Cube's formats,
hixl/formats.py) has a storage shape of fractals. `to_storage` and `from_storage` convert
between the logical array and the stored one, so what the host reads and writes is always the
logical tensor.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass
from typing import cast

import numpy as np

from ..hixl import ArgSpec, formats, to_numpy


class Format(enum.Enum):
    ND = "ND"
    NC1HWC0 = "NC1HWC0"
    FRACTAL_NZ = "FRACTAL_NZ"


@dataclass(frozen=True)
class TensorDesc:
    dtype: str
    shape: tuple[int, ...]            # logical dims: what the op means
    storage_shape: tuple[int, ...]    # dims as laid out in GM (padded where the layout needs)
    format: Format = Format.ND
    value: tuple | None = None        # contents the host read back (axes, shape, k inputs)
    perm: tuple[int, ...] | None = None   # a transposed view: logical dim i is stored dim
                                          # perm[i] of an ND tensor of storage_shape

    @classmethod
    def nd(cls, shape: Sequence[int], dtype: str) -> TensorDesc:
        shape = tuple(int(d) for d in shape)
        return cls(dtype, shape, shape, Format.ND)

    @classmethod
    def padded_last_dim(cls, shape: Sequence[int], dtype: str, align_bytes: int) -> TensorDesc:
        """ND with the last dim padded so that each row starts on an `align_bytes` boundary."""
        shape = tuple(int(d) for d in shape)
        if not shape:
            return cls.nd(shape, dtype)
        per = max(1, align_bytes // to_numpy(dtype).itemsize)
        last = -(-shape[-1] // per) * per
        return cls(dtype, shape, shape[:-1] + (last,), Format.ND)

    @classmethod
    def transposed(cls, base: TensorDesc, perm: Sequence[int]) -> TensorDesc:
        """A view of the ND tensor `base` with its dims permuted (a Transpose without a copy):
        the same bytes, read with `base`'s strides permuted. Kernels that take it say so;
        to every other it is a layout they do not read (is_padded)."""
        perm = tuple(int(p) for p in perm)
        return cls(base.dtype, tuple(base.shape[p] for p in perm), base.storage_shape,
                   Format.ND, perm=perm)

    @classmethod
    def in_format(cls, shape: Sequence[int], dtype: str, fmt: Format | str) -> TensorDesc:
        """A tensor of logical `shape` stored in format `fmt`."""
        fmt = Format(fmt)
        shape = tuple(int(d) for d in shape)
        if fmt is Format.ND:
            return cls.nd(shape, dtype)
        c0 = formats.c0_of(to_numpy(dtype))
        storage = (formats.nz_shape(shape, c0) if fmt is Format.FRACTAL_NZ
                   else formats.nc1hwc0_shape(shape, c0))
        return cls(dtype, shape, storage, fmt)

    def to_storage(self, array: np.ndarray) -> np.ndarray:
        """The logical `array` as stored (padding zeroed, fractals laid out)."""
        if self.perm is not None:
            return np.ascontiguousarray(np.transpose(array, np.argsort(self.perm)))
        if self.format is Format.FRACTAL_NZ:
            return formats.nd_to_nz(array, self.storage_shape[-1])
        if self.format is Format.NC1HWC0:
            return formats.nchw_to_nc1hwc0(array, self.storage_shape[-1])
        if self.is_padded:
            padded = np.zeros(self.storage_shape, array.dtype)
            padded[tuple(slice(0, d) for d in self.shape)] = array
            return padded
        return array

    def from_storage(self, stored: np.ndarray) -> np.ndarray:
        """The logical tensor of the stored array."""
        if self.perm is not None:
            return np.transpose(stored, self.perm).copy()
        if self.format is Format.FRACTAL_NZ:
            return formats.nz_to_nd(stored, cast("tuple[int, int]", self.shape[-2:]))
        if self.format is Format.NC1HWC0:
            return formats.nc1hwc0_to_nchw(stored, self.shape[1])
        if self.is_padded:
            return stored[tuple(slice(0, d) for d in self.shape)].copy()
        return stored

    @property
    def np_dtype(self) -> np.dtype:
        return to_numpy(self.dtype)

    @property
    def itemsize(self) -> int:
        return self.np_dtype.itemsize

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def storage_size(self) -> int:
        return int(np.prod(self.storage_shape, dtype=np.int64))

    @property
    def nbytes(self) -> int:
        return self.storage_size * self.itemsize

    @property
    def strides(self) -> tuple[int, ...]:
        """Element strides of the logical dims within the storage layout (ND only)."""
        out, step = [], 1
        for d in reversed(self.storage_shape):
            out.append(step)
            step *= d
        stored = tuple(reversed(out))
        return stored if self.perm is None else tuple(stored[p] for p in self.perm)

    @property
    def is_padded(self) -> bool:
        return self.shape != self.storage_shape

    @property
    def spec(self) -> ArgSpec:
        return ArgSpec(self.shape, self.dtype)

    def __str__(self) -> str:
        storage = "" if not self.is_padded else f" storage {list(self.storage_shape)}"
        if self.perm is not None:
            storage += f" transposed {list(self.perm)}"
        return f"{self.dtype}{list(self.shape)} {self.format.value}{storage}"
