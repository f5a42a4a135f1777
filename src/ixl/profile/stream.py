"""A stream of launches (R9): hundreds of small launches add up, so look at the sequence."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ..hixl import to_numpy

if TYPE_CHECKING:
    from ..hixl import ArgSpec
    from ..nixl import Device
    from ..nixl.record import RunRecord
    from ..nixl.tensor import DeviceTensor


@dataclass(frozen=True)
class StreamSummary:
    runs: int
    launches: int
    shim_runs: int
    total_us: float
    launch_us: float
    traced: int = 0         # launches whose kernel Python ran and was kept to replay
    replayed: int = 0       # launches run from a trace (ascend/replay.py)

    @property
    def launch_share(self) -> float:
        return self.launch_us / self.total_us if self.total_us else 0.0

    def to_json(self) -> dict:
        return {"runs": self.runs, "launches": self.launches, "shim_runs": self.shim_runs,
                "total_us": round(self.total_us, 3), "launch_us": round(self.launch_us, 3),
                "launch_share": round(self.launch_share, 4), "traced": self.traced,
                "replayed": self.replayed}


def summarize(records: Iterable[RunRecord]) -> StreamSummary:
    """Total modeled time of a sequence of runs, launch overheads included."""
    records = list(records)
    launches = [r.launch for r in records if r.launch is not None]
    counts = replay_counts(records)
    return StreamSummary(len(records), len(launches), sum(r.path == "shim" for r in records),
                         sum(r.time_us for r in records),
                         sum(launch.launch_us for launch in launches), counts["traced"],
                         counts["replayed"])


def replay_counts(records: Iterable[RunRecord]) -> dict[str, int]:
    """How the launches of `records` ran (ascend/replay.py): traced (and kept), retraced
    (traced again: the values their trace read back differed), replayed, untraceable
    (traced, not kept: they read data back after computing), none (not traced); and
    memoized: the replayed ones whose timing came from a timing memo (ascend/memo.py)."""
    counts = {"traced": 0, "retraced": 0, "replayed": 0, "untraceable": 0, "none": 0,
              "memoized": 0}
    for r in records:
        if r.launch is not None:
            counts[r.launch.replay] += 1
            counts["memoized"] += r.launch.timing == "memo"
    return counts


def _input(dev: Device, spec: ArgSpec, name: str) -> DeviceTensor:
    """An uninitialised tensor, or, for a host input (a spec with contents), those contents:
    the host reads them to size the output."""
    if spec.value is None:
        return dev.empty(spec.shape, spec.dtype, name)
    return dev.tensor(np.reshape(np.asarray(spec.value, to_numpy(spec.dtype)), spec.shape),
                      name=name)


def timing_run(dev: Device, op: str, specs: Sequence[ArgSpec | None], attrs: dict | None = None,
               config: dict | None = None) -> RunRecord:
    """Run `op` on uninitialised device tensors (for a timing-only device): no data is made,
    moved or compared, only the timeline runs. `config` is a tuning configuration (buffer_num,
    tile_div, block_dim), None for the tiling's own choice. Returns the run's record."""
    inputs = [None if s is None else _input(dev, s, f"{op}.in{i}") for i, s in enumerate(specs)]
    try:
        outs = dev.run(op, *inputs, config=config, **(attrs or {}))
    finally:
        for t in inputs:
            if t is not None:
                t.free()
    for o in outs if isinstance(outs, tuple) else (outs,):
        o.free()
    assert dev.last_profile is not None             # the run just made it
    return dev.last_profile
