"""The one small interface through which the runtime reaches a backend.

A backend maps and unmaps device memory, reads and writes it, makes the GM windows a kernel
takes, launches a kernel body over blocks (of a kernel type: vector, cube or mix; in a mode:
debug, timing-only, recording), says what a host copy costs and what, besides the kernel and
its tiling, a timing-only launch's record depends on (so that the runtime may reuse it). The
runtime holds no other handle on it: the allocator, the device's reads and writes, launch and
the shim all go through these calls. The simulated Ascend chip is the first backend; a real
NPU through its runtime could plug in here.

`Mode` and `KernelType` are the interface's vocabulary (what a launch asks for), re-exported
from the backend's package.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from contextlib import AbstractContextManager
from typing import Protocol

import numpy as np
from numpy.typing import DTypeLike

from ..ascend import ChipSpec, KernelType, LaunchRecord, Mode, SimulatedChip, get_chip
from ..ascend.gm import GlobalTensor
from ..ascend.observe import GmRole, Observer

__all__ = ["Backend", "GmRole", "KernelType", "Mode", "create_backend"]


class Backend(Protocol):
    chip: ChipSpec
    version: str

    def map(self, addr: int, nbytes: int) -> None: ...

    def unmap(self, addr: int) -> None: ...

    def read(self, addr: int, nbytes: int) -> np.ndarray: ...

    def write(self, addr: int, data: np.ndarray) -> None: ...

    def window(self, addr: int, dtype: DTypeLike, count: int, name: str) -> GlobalTensor: ...

    def launch(self, name: str, body: Callable, block_num: int, mode: Mode,
               args: Iterable[tuple[GlobalTensor, GmRole]] = (),
               kind: KernelType = KernelType.VECTOR, signature: tuple | None = None
               ) -> LaunchRecord: ...

    def host_copy_us(self, nbytes: int) -> float: ...

    def flush_l2(self) -> None: ...

    def host_settings(self) -> AbstractContextManager[None]:
        """The host's settings for simulation held across many launches (a graph run), so
        that each launch does not set and restore them."""
        ...

    def close(self) -> None: ...


    def attach(self, observer: Observer) -> None: ...

    def detach(self, observer: Observer) -> None: ...


def create_backend(chip: str) -> Backend:
    return SimulatedChip(get_chip(chip))
