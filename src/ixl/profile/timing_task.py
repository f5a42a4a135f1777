"""One op at one tuning configuration in timing-only mode, as a sweep task: the unit of a
tuning sweep (`ixl tune` over configurations, or over every op of a model at its shapes), so
such a sweep runs on every core or on a Ray cluster like any other.

A configuration the tiling or the chip refuses (no tile fits, too many buffers) ends as the
task's error outcome (ValueError or ChipError): no candidate, as the tuner treats it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from ..executor import worker_local
from ..hixl import ArgSpec
from ..nixl import device
from .metrics import launch_metrics
from .stream import timing_run


@dataclass(frozen=True)
class TimingCase:
    """`op` on inputs `specs` with `attrs` at tuning configuration `config` (None: the
    tiling's own choice) on a timing-only `chip`."""

    chip: str
    op: str
    specs: tuple[ArgSpec | None, ...]
    attrs: tuple[tuple[str, object], ...] = ()
    config: tuple[tuple[str, int], ...] | None = None

    @property
    def id(self) -> str:
        shapes = " ".join("-" if s is None else f"{list(s.shape)}:{s.dtype}"
                          + ("" if s.value is None else f"={list(s.value)}") for s in self.specs)
        config = json.dumps(dict(self.config)) if self.config is not None else "default"
        return f"{self.op} {shapes} {json.dumps(dict(self.attrs))} {config}"

    def run(self) -> tuple[bool, dict]:
        dev = worker_local(("device", self.chip, "timing-only"),
                           lambda: device(self.chip, timing_only=True))
        dev.flush_l2()          # a pure function of the task, whatever this worker ran before
        record = timing_run(dev, self.op, list(self.specs), dict(self.attrs),
                            None if self.config is None else dict(self.config))
        metrics = launch_metrics(record.launch).values if record.launch is not None else {}
        return True, {"time_us": record.time_us, "path": record.path, "kernel": record.kernel,
                      "block_dim": record.block_dim,
                      "ai_core_util": metrics.get("ai_core_util", 0.0),
                      "move_ratio": metrics.get("move_ratio", 0.0)}
