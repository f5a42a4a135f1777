"""What one op run did: which path, which kernel, how long on the modeled chip."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..ascend.simulator import LaunchRecord


@dataclass
class RunRecord:
    op: str
    chip: str
    path: str                     # "native", "shim", or "view" (metadata only, no data moved)
    shapes: list[tuple[int, ...]]
    dtype: str | None
    reason: str | None = None     # why the shim ran
    kernel: str | None = None
    block_dim: int = 0
    tiling: Any = None
    launch: LaunchRecord | None = None
    attrs: dict = field(default_factory=dict)
    config: dict | None = None    # tuning configuration the tiling used (None: defaults)
    host_us: float = 0.0          # the shim's host round trips
    nodes: list[str] = field(default_factory=list)   # graph nodes this run covered

    @property
    def time_us(self) -> float:
        """Modeled time: the launch on the chip, or the shim's round trips (0 when nothing
        had to run)."""
        return self.launch.time_us if self.launch is not None else self.host_us
