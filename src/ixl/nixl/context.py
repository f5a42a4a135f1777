"""KernelContext: what a kernel block knows about where it runs (R5).

block_idx and block_num (GetBlockIdx / GetBlockNum), the tiling data computed on the host, the
workspace the runtime allocated for it, and chip queries. Kernels never allocate GM.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..ascend.chips import ChipSpec
from ..ascend.gm import GlobalTensor


@dataclass(frozen=True)
class KernelContext:
    block_idx: int
    block_num: int
    tiling: Any
    chip: ChipSpec
    workspace: GlobalTensor | None = None

    @property
    def ub_bytes(self) -> int:
        return self.chip.ub_bytes

    @property
    def vector_bytes(self) -> int:
        return self.chip.repeat_bytes
