"""KernelContext: what a kernel block knows about where it runs (R5).

block_idx and block_num (GetBlockIdx / GetBlockNum), in a mix kernel which core of its group it
is (is_aic: ASCEND_IS_AIC; sub_block_idx: GetSubBlockIdx; task_ratio: GetTaskRatio), the tiling
data computed on the host, the workspace the runtime allocated for it, and chip queries.
Kernels never allocate GM.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any, Protocol

from ..ascend.chips import ChipSpec
from ..ascend.gm import GlobalTensor


class BlockCore(Protocol):
    """What a context reads of the backend's core running the block (nixl names no chip
    object of its own)."""

    block_idx: int
    block_num: int
    sub_block_idx: int
    task_ratio: int

    @property
    def kind(self) -> enum.Enum: ...


@dataclass(frozen=True)
class KernelContext:
    block_idx: int
    block_num: int
    tiling: Any
    chip: ChipSpec
    workspace: GlobalTensor | None = None
    is_aic: bool = False          # a Cube core (cube and mix kernels)
    sub_block_idx: int = 0        # which AIV of a mix kernel's group
    task_ratio: int = 1           # AIVs per AIC, on an AIV of a mix kernel

    @classmethod
    def of(cls, core: BlockCore, tiling: Any, chip: ChipSpec, workspace: GlobalTensor | None = None
           ) -> KernelContext:
        """The context of the block `core` (the backend's core) runs now."""
        return cls(core.block_idx, core.block_num, tiling, chip, workspace,
                   core.kind.value == "AIC", core.sub_block_idx, core.task_ratio)

    @property
    def planned_workspace(self) -> GlobalTensor:
        """The workspace of a kernel whose launch plan asked for one."""
        assert self.workspace is not None, "the launch plan asked for no workspace"
        return self.workspace

    @property
    def ub_bytes(self) -> int:
        return self.chip.ub_bytes

    @property
    def vector_bytes(self) -> int:
        return self.chip.repeat_bytes
