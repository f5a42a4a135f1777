"""The GM allocator: virtual device addresses, 512-byte aligned, each block its own buffer.

Freed blocks go to free lists keyed by rounded size and are handed out again before new
memory is mapped (a caching allocator); live and peak bytes are tracked; running out of memory
says how much is live and cached; closing reports what is still allocated. Each device has its
own address range, so an address of one device is never valid on another. One lock guards the
lists and counters: tensors are freed from any thread (and from the garbage collector).

The simulated GM lives in host memory, so a new mapping is also checked against the memory
the host has available: a tensor the modeled chip could hold but this machine cannot is
refused with the host named, before anything is touched.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from typing import Protocol

from .errors import OutOfMemory

# Device virtual addresses start here (any nonzero base would do; zero stays invalid); device
# n's range starts n strides further on. A stride of 1 TiB exceeds every chip's HBM.
VA_BASE = 0x12_4000_0000
VA_STRIDE = 1 << 40


def host_available_bytes() -> int | None:
    """Memory the host can still give without swapping (MemAvailable), or None if unknown."""
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def human_bytes(n: float) -> str:
    for unit in ("bytes", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n} bytes" if unit == "bytes" else f"{n:.1f} {unit}"
        n /= 1024
    raise AssertionError("unreachable")


def check_host(nbytes: int, what: str) -> None:
    """Refuse `nbytes` of new host memory for `what` when the host has less available."""
    available = host_available_bytes()
    if available is not None and nbytes > available:
        raise OutOfMemory(
            f"out of host memory: {what} needs {human_bytes(nbytes)}, the host has "
            f"{human_bytes(available)} available ({human_bytes(nbytes - available)} short; "
            f"the simulated device's memory lives in host memory)")


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


class DeviceMemory(Protocol):
    """What the allocator needs of a backend: mapping and unmapping address ranges."""

    def map(self, addr: int, nbytes: int) -> object: ...

    def unmap(self, addr: int) -> None: ...


class GMAllocator:
    def __init__(self, memory: DeviceMemory, capacity: int, align: int, device_name: str,
                 base: int = VA_BASE, host_check: bool = False) -> None:
        self.memory = memory
        self.capacity = capacity
        self.align = align
        self.device_name = device_name
        self.host_check = host_check      # check new mappings against the host's memory
        self._next = base
        self._free: dict[int, list[Block]] = {}
        self._live: dict[int, Block] = {}
        self.lock = threading.RLock()
        self.stats = AllocStats()

    def round(self, nbytes: int) -> int:
        return max(self.align, -(-nbytes // self.align) * self.align)

    def check_capacity(self, nbytes: int, what: str) -> None:
        """Refuse `nbytes` more (rounded as allocated) for `what` when they cannot fit beside
        what is live."""
        need = self.round(nbytes)
        with self.lock:
            over = self.stats.live_bytes + need - self.capacity
            if over > 0:
                raise OutOfMemory(
                    f"out of device memory on {self.device_name}: {what} needs {nbytes} bytes, "
                    f"{self.stats.live_bytes} of {self.capacity} are live "
                    f"({human_bytes(over)} over the device's {human_bytes(self.capacity)})")

    def alloc(self, nbytes: int, name: str = "tensor") -> int:
        size = self.round(nbytes)
        with self.lock:
            cached = self._free.get(size)
            if cached:
                block = cached.pop()
                self.stats.cached_bytes -= size
                self.stats.reuses += 1
            else:
                if self.stats.live_bytes + self.stats.cached_bytes + size > self.capacity:
                    self.empty_cache()
                self.check_capacity(nbytes, name)
                if self.host_check:
                    check_host(size, f"{name} on {self.device_name}")
                block = Block(self._next, size, nbytes, name)
                try:
                    self.memory.map(block.addr, size)
                except MemoryError:
                    raise OutOfMemory(f"out of host memory: {name} on {self.device_name} "
                                      f"needs {human_bytes(size)}, which the host could not "
                                      f"map") from None
                self._next += size
            block.requested, block.name, block.refs = nbytes, name, 1
            self._live[block.addr] = block
            self.stats.allocs += 1
            self.stats.live_bytes += size
            self.stats.peak_bytes = max(self.stats.peak_bytes, self.stats.live_bytes)
            return block.addr

    def share(self, addr: int) -> None:
        """One more tensor (a view) uses the block at `addr`; it stays until all are freed."""
        with self.lock:
            self._live[addr].refs += 1

    def free(self, addr: int) -> None:
        with self.lock:
            block = self._live.get(addr)
            if block is None:
                raise OutOfMemory(f"free of {addr:#x}: not a live allocation on "
                                  f"{self.device_name}")
            block.refs -= 1
            if block.refs:
                return
            del self._live[addr]
            self.stats.live_bytes -= block.nbytes
            self.stats.cached_bytes += block.nbytes
            self._free.setdefault(block.nbytes, []).append(block)

    def empty_cache(self) -> None:
        with self.lock:
            for blocks in self._free.values():
                for block in blocks:
                    self.memory.unmap(block.addr)
            self._free.clear()
            self.stats.cached_bytes = 0

    def live(self) -> list[Block]:
        with self.lock:
            return sorted(self._live.values(), key=lambda b: b.addr)

    def leak_report(self) -> list[str]:
        return [f"{b.name}: {b.requested} bytes at {b.addr:#x}" for b in self.live()]
