"""The pipeline timeline as a picture: per pipe, when it was busy, for a few cores."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from ..ascend.core import CoreKind  # noqa: E402
from ..ascend.simulator import LaunchRecord  # noqa: E402
from ..ascend.timeline import Pipe  # noqa: E402

COLORS = {Pipe.S: "#999999", Pipe.V: "#d62728", Pipe.MTE2: "#1f77b4", Pipe.MTE3: "#2ca02c",
          Pipe.M: "#9467bd", Pipe.MTE1: "#8c564b", Pipe.FIX: "#e377c2"}


def plot_timeline(rec: LaunchRecord, path: str, cores: int = 2, title: str = "") -> None:
    """Busy intervals per pipe for the first `cores` cores of each kind (Cube cores first, with
    their CUBE, MTE1 and FIXPIPE lanes) and the slowest core."""
    chosen = [c for kind in (CoreKind.AIC, CoreKind.AIV) for c in rec.of(kind)[:cores]]
    slowest = max(rec.cores, key=lambda c: c.cycles)
    if slowest not in chosen:
        chosen.append(slowest)
    rows = [(c, p) for c in chosen for p in Pipe if any(s.pipe is p for s in c.slices)]
    fig, ax = plt.subplots(figsize=(12, 0.45 * len(rows) + 1.6))
    clock = rec.clock_mhz
    for y, (core, pipe) in enumerate(rows):
        spans = [(s.start / clock, (s.end - s.start) / clock)
                 for s in core.slices if s.pipe is pipe]
        ax.broken_barh(spans, (y - 0.4, 0.8), facecolors=COLORS[pipe])
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels([f"core {c.core_id} {p.lane}" for c, p in rows])
    ax.invert_yaxis()
    ax.set_xlabel("time on the core (us), launch overhead not shown")
    ax.set_title(title or f"{rec.kernel} on {rec.chip.name}: {rec.time_us:.1f} us "
                          f"(launch {rec.launch_us:.1f} us)")
    ax.grid(axis="x", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
