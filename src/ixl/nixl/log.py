"""The debug log switch (R14): IXL_LOG=debug prints every launch's descs, addresses and tiling."""

from __future__ import annotations

import dataclasses
import os
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..ascend.gm import GlobalTensor
    from .registry import LaunchPlan


def enabled() -> bool:
    return os.environ.get("IXL_LOG", "").lower() == "debug"


def launch(op: str, kernel: str, chip: str, tensors: list, plan: LaunchPlan,
           workspace: GlobalTensor | None) -> None:
    if not enabled():
        return
    lines = [f"[ixl] launch {op} kernel={kernel} chip={chip} block_dim={plan.block_dim}"]
    for role, name, t in tensors:
        lines.append(f"[ixl]   {role} {name}: {t.desc} addr={t.addr:#x} bytes={t.desc.nbytes}")
    if workspace is not None:
        lines.append(f"[ixl]   workspace: addr={workspace.addr:#x} bytes={workspace.nbytes}")
    tiling = plan.tiling
    is_instance = dataclasses.is_dataclass(tiling) and not isinstance(tiling, type)
    fields = dataclasses.asdict(tiling) if is_instance else tiling
    if hasattr(tiling, "describe"):
        lines.append(f"[ixl]   path: {tiling.describe()}")
    lines.append(f"[ixl]   tiling {type(tiling).__name__}: {fields}")
    print("\n".join(lines), file=sys.stderr)


def shim(op: str, reason: str) -> None:
    if enabled():
        print(f"[ixl] shim {op}: {reason}", file=sys.stderr)


def tiling_cache(op: str, hit: bool, hits: int, misses: int) -> None:
    if enabled():
        print(f"[ixl] tiling cache {'hit' if hit else 'miss'} {op} (hits {hits}, "
              f"misses {misses})", file=sys.stderr)


def note(message: str) -> None:
    if enabled():
        print(f"[ixl] {message}", file=sys.stderr)
