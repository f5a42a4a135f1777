"""The one small interface through which the runtime reaches a backend.

A backend maps and unmaps device memory (`gm`), and launches a kernel body over blocks. The
simulated Ascend chip is the first; a real NPU through its runtime could plug in here.
"""

from __future__ import annotations

from typing import Callable, Protocol

from ..ascend import ChipSpec, LaunchRecord, Mode, SimulatedChip, get_chip
from ..ascend.gm import GlobalMemory


class Backend(Protocol):
    chip: ChipSpec
    gm: GlobalMemory
    version: str

    def launch(self, name: str, body: Callable, block_num: int, mode: Mode,
               args: list = ()) -> LaunchRecord: ...


def create_backend(chip: str) -> Backend:
    return SimulatedChip(get_chip(chip))
