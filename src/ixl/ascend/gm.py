"""Global memory (HBM): a virtual address space of mapped segments, each backed by its own bytes.

Address policy (alignment, free lists, statistics) belongs to the runtime's allocator; the chip
only maps and unmaps segments and translates addresses, refusing any access outside them.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import DTypeLike

from .errors import AicoreOutOfBound, IllegalInstruction
from .l2 import CacheMode
from .observe import Access, Rows, Space

if TYPE_CHECKING:
    from .l2 import _Lines


@dataclass(eq=False)
class Segment:
    addr: int
    nbytes: int
    data: np.ndarray  # uint8, nbytes long
    l2: _Lines | None = None  # its lines in L2 (l2.py), once a move touched it

    @property
    def end(self) -> int:
        return self.addr + self.nbytes


class GlobalMemory:
    """Mapped segments of the device address space; the allocator decides where and how much."""

    def __init__(self) -> None:
        self._starts: list[int] = []
        self._segments: list[Segment] = []

    def map(self, addr: int, nbytes: int) -> Segment:
        i = bisect.bisect_left(self._starts, addr)
        seg = Segment(addr, nbytes, np.zeros(nbytes, np.uint8))
        if (i > 0 and self._segments[i - 1].end > addr) or (
                i < len(self._segments) and self._segments[i].addr < seg.end):
            raise AicoreOutOfBound(f"GM mapping [{addr:#x}, {seg.end:#x}) overlaps a mapped "
                                   f"segment")
        self._starts.insert(i, addr)
        self._segments.insert(i, seg)
        return seg

    def unmap(self, addr: int) -> None:
        i = bisect.bisect_left(self._starts, addr)
        if i == len(self._starts) or self._starts[i] != addr:
            raise AicoreOutOfBound(f"unmap of GM {addr:#x}: no segment starts there")
        del self._starts[i]
        del self._segments[i]

    def segment_at(self, addr: int) -> Segment | None:
        i = bisect.bisect_right(self._starts, addr) - 1
        if i >= 0 and addr < self._segments[i].end:
            return self._segments[i]
        return None

    def bytes(self, addr: int, nbytes: int) -> np.ndarray:
        """A writable uint8 view of [addr, addr + nbytes), which must lie in one segment."""
        seg = self.segment_at(addr)
        if seg is None or addr + nbytes > seg.end:
            raise AicoreOutOfBound(
                f"aicore memory out of bound: GM [{addr:#x}, {addr + nbytes:#x}) is not mapped")
        off = addr - seg.addr
        return seg.data[off:off + nbytes]


class GlobalTensor:
    """A typed window into GM: Ascend C's GlobalTensor after SetGlobalBuffer(addr, count).

    Every access is checked against the window, so an overrun names the tensor it ran past.
    Its L2 cache mode (SetL2CacheHint) passes on to the windows made from it.
    """

    __slots__ = ("gm", "addr", "dtype", "count", "name", "itemsize", "root", "_segment",
                 "l2_mode")

    def __init__(self, gm: GlobalMemory, addr: int, dtype: DTypeLike, count: int, name: str = "gm",
                 root: tuple[int, int] | None = None, segment: Segment | None = None,
                 l2_mode: CacheMode = CacheMode.NORMAL) -> None:
        self.gm = gm
        self.addr = addr
        self.dtype: np.dtype = dtype if isinstance(dtype, np.dtype) else np.dtype(dtype)
        self.count = count
        self.name = name
        self.itemsize = self.dtype.itemsize
        self.root = root or (addr, count * self.itemsize)   # the whole tensor: (addr, bytes)
        self._segment = segment or gm.segment_at(self.root[0])
        self.l2_mode = l2_mode

    @property
    def nbytes(self) -> int:
        return self.count * self.itemsize

    @property
    def segment(self) -> Segment | None:
        """The mapped segment holding the tensor (None once unmapped)."""
        return self._segment

    def set_l2_cache_hint(self, mode: CacheMode) -> None:
        """SetL2CacheHint: DISABLE makes this tensor's moves bypass L2 (read-once data that must
        not evict what is reused), NORMAL caches them [L2H][L2M]."""
        if not isinstance(mode, CacheMode):
            raise IllegalInstruction(f"set_l2_cache_hint takes a CacheMode (DISABLE, NORMAL), "
                                     f"got {mode!r}")
        if mode is CacheMode.PERSISTENT:
            raise IllegalInstruction("set_l2_cache_hint(CacheMode.PERSISTENT) is not yet "
                                     "supported by Ascend C: use DISABLE or NORMAL [L2H]")
        self.l2_mode = mode

    def window(self, offset: int, count: int) -> GlobalTensor:
        """The sub-window [offset, offset + count): `xGm.SetGlobalBuffer(x + offset, count)`."""
        if offset < 0 or count < 0 or offset + count > self.count:
            raise AicoreOutOfBound(
                f"aicore memory out of bound: window [{offset}, {offset + count}) of tensor "
                f"'{self.name}' with {self.count} elements")
        return GlobalTensor(self.gm, self.addr + offset * self.itemsize, self.dtype, count,
                            self.name, self.root, self._segment, self.l2_mode)

    def reinterpret(self, dtype: DTypeLike) -> GlobalTensor:
        """The same bytes seen as another type (the workspace arrives as bytes)."""
        dtype = np.dtype(dtype)
        return GlobalTensor(self.gm, self.addr, dtype, self.nbytes // dtype.itemsize, self.name,
                            self.root, self._segment, self.l2_mode)

    def __getitem__(self, offset: int) -> GlobalTensor:
        """`xGm[offset]`: the tensor from element `offset` to its end."""
        return self.window(offset, self.count - offset)

    def region(self, byte_offset: int, nbytes: int, core_id: int, what: str,
               strict: bool = False) -> np.ndarray:
        """uint8 view of the bytes an instruction touches, checked against the whole tensor
        (always) and, when `strict` (debug mode), against this window too."""
        start = self.addr + byte_offset
        base, size = self.root
        if start < base or start + nbytes > base + size:
            raise AicoreOutOfBound(
                f"aicore memory out of bound: core {core_id} {what} GM [{start:#x}, "
                f"{start + nbytes:#x}) ({nbytes} bytes) outside tensor '{self.name}' "
                f"[{base:#x}, {base + size:#x}) ({size} bytes)")
        if strict and (byte_offset < 0 or byte_offset + nbytes > self.nbytes):
            raise AicoreOutOfBound(
                f"aicore memory out of bound: core {core_id} {what} GM [{start:#x}, "
                f"{start + nbytes:#x}) ({nbytes} bytes) outside its window [{self.addr:#x}, "
                f"{self.addr + self.nbytes:#x}) of tensor '{self.name}' (another core's range)")
        seg = self._segment
        if seg is None or start + nbytes > seg.end:
            return self.gm.bytes(start, nbytes)     # raises: the tensor is not (all) mapped
        off = start - seg.addr
        return seg.data[off:off + nbytes]

    def access(self, byte_offset: int, rows: Rows, role: str) -> Access:
        """The bytes a move touches (rows of bytes from `byte_offset`), as observers see them."""
        return Access(Space.GM, self.addr + byte_offset, 1, rows, role, tensor=self)

    def numpy(self) -> np.ndarray:
        return self.gm.bytes(self.addr, self.nbytes).view(self.dtype)

    def __repr__(self) -> str:
        return f"GlobalTensor({self.name}, {self.addr:#x}, {self.dtype}, {self.count})"
