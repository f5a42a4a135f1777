"""Profiling (R9): metrics per launch, Chrome traces, timeline plots, stream summaries."""

from .metrics import Metrics, launch_metrics
from .plot import plot_timeline
from .stream import StreamSummary, replay_counts, summarize, timing_run
from .trace import ChromeTrace, chrome_trace, write_shim_trace, write_trace

__all__ = ["Metrics", "launch_metrics", "plot_timeline", "StreamSummary", "replay_counts",
           "summarize", "timing_run", "ChromeTrace", "chrome_trace", "write_trace",
           "write_shim_trace"]
