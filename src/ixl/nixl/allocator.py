"""The GM allocator: virtual device addresses, 512-byte aligned, each block its own buffer.

Freed blocks go to free lists keyed by rounded size and are handed out again before new
memory is mapped (a caching allocator); live and peak bytes are tracked; running out of memory
says how much is live and cached; closing reports what is still allocated.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..ascend.gm import GlobalMemory
from .errors import OutOfMemory

# Device virtual addresses start here (any nonzero base would do; zero stays invalid).
VA_BASE = 0x12_4000_0000


@dataclass
class Block:
    addr: int
    nbytes: int          # rounded size, as mapped
    requested: int
    name: str
    refs: int = 1        # tensors sharing the block (a view adds one)


@dataclass
class AllocStats:
    live_bytes: int = 0
    peak_bytes: int = 0
    cached_bytes: int = 0
    allocs: int = 0
    reuses: int = 0


class GMAllocator:
    def __init__(self, gm: GlobalMemory, capacity: int, align: int, device_name: str):
        self.gm = gm
        self.capacity = capacity
        self.align = align
        self.device_name = device_name
        self._next = VA_BASE
        self._free: dict[int, list[Block]] = {}
        self._live: dict[int, Block] = {}
        self.stats = AllocStats()

    def _round(self, nbytes: int) -> int:
        return max(self.align, -(-nbytes // self.align) * self.align)

    def alloc(self, nbytes: int, name: str = "tensor") -> int:
        size = self._round(nbytes)
        cached = self._free.get(size)
        if cached:
            block = cached.pop()
            self.stats.cached_bytes -= size
            self.stats.reuses += 1
        else:
            if self.stats.live_bytes + self.stats.cached_bytes + size > self.capacity:
                self.empty_cache()
            if self.stats.live_bytes + size > self.capacity:
                raise OutOfMemory(
                    f"out of device memory on {self.device_name}: {name} needs {nbytes} bytes, "
                    f"{self.stats.live_bytes} of {self.capacity} are live")
            block = Block(self._next, size, nbytes, name)
            self.gm.map(block.addr, size)
            self._next += size
        block.requested, block.name, block.refs = nbytes, name, 1
        self._live[block.addr] = block
        self.stats.allocs += 1
        self.stats.live_bytes += size
        self.stats.peak_bytes = max(self.stats.peak_bytes, self.stats.live_bytes)
        return block.addr

    def share(self, addr: int) -> None:
        """One more tensor (a view) uses the block at `addr`; it stays until all are freed."""
        self._live[addr].refs += 1

    def free(self, addr: int) -> None:
        block = self._live.get(addr)
        if block is None:
            raise OutOfMemory(f"free of {addr:#x}: not a live allocation on {self.device_name}")
        block.refs -= 1
        if block.refs:
            return
        del self._live[addr]
        self.stats.live_bytes -= block.nbytes
        self.stats.cached_bytes += block.nbytes
        self._free.setdefault(block.nbytes, []).append(block)

    def empty_cache(self) -> None:
        for blocks in self._free.values():
            for block in blocks:
                self.gm.unmap(block.addr)
        self._free.clear()
        self.stats.cached_bytes = 0

    def live(self) -> list[Block]:
        return sorted(self._live.values(), key=lambda b: b.addr)

    def leak_report(self) -> list[str]:
        return [f"{b.name}: {b.requested} bytes at {b.addr:#x}" for b in self.live()]
