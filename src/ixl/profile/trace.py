"""Chrome trace JSON (chrome://tracing, Perfetto): one process per core, one track per pipe.

Lanes are named as msprof's simulator names them (VECTOR, SCALAR, MTE2, MTE3, CUBE, MTE1,
FIXPIPE); set/wait pairs (and the enque/deque and free/alloc built on them) become flow arrows.
Pipes are in order, so slices on one track never overlap. A track keeps at most
`max_slices` slices (the rest are counted in the process's metadata), so large runs stay
loadable.
"""

from __future__ import annotations

import json

from ..ascend.simulator import LaunchRecord
from ..ascend.timeline import Pipe

TRACK_ORDER = [Pipe.S, Pipe.V, Pipe.M, Pipe.MTE1, Pipe.MTE2, Pipe.MTE3, Pipe.FIX]


def chrome_trace(rec: LaunchRecord, max_slices: int = 5000) -> dict:
    clock = rec.clock_mhz
    events: list[dict] = []
    flow_id = 0
    for core in rec.cores:
        pid = core.core_id
        events.append({"ph": "M", "name": "process_name", "pid": pid,
                       "args": {"name": f"core {pid} (blocks {core.blocks[:4]}"
                                        f"{'...' if len(core.blocks) > 4 else ''})"}})
        kept: dict[Pipe, int] = {}
        dropped: dict[str, int] = {}
        for s in core.slices:
            n = kept.get(s.pipe, 0)
            if n >= max_slices:
                dropped[s.pipe.lane] = dropped.get(s.pipe.lane, 0) + 1
                continue
            kept[s.pipe] = n + 1
            ev = {"ph": "X", "name": s.name, "pid": pid, "tid": TRACK_ORDER.index(s.pipe),
                  "ts": s.start / clock, "dur": max(s.end - s.start, 0) / clock}
            if s.nbytes:
                ev["args"] = {"bytes": s.nbytes}
            events.append(ev)
        for pipe in TRACK_ORDER:
            if pipe in kept:
                events.append({"ph": "M", "name": "thread_name", "pid": pid,
                               "tid": TRACK_ORDER.index(pipe), "args": {"name": pipe.lane}})
                events.append({"ph": "M", "name": "thread_sort_index", "pid": pid,
                               "tid": TRACK_ORDER.index(pipe),
                               "args": {"sort_index": TRACK_ORDER.index(pipe)}})
        if dropped:
            events.append({"ph": "M", "name": "process_labels", "pid": pid,
                           "args": {"labels": f"truncated: {dropped} slices not shown"}})
        for e in core.edges[: max_slices]:
            flow_id += 1
            common = {"name": e.event, "cat": "flag", "id": flow_id, "pid": pid}
            events.append({**common, "ph": "s", "tid": TRACK_ORDER.index(e.set_pipe),
                           "ts": e.set_time / clock})
            events.append({**common, "ph": "f", "bp": "e", "tid": TRACK_ORDER.index(e.wait_pipe),
                           "ts": e.wait_time / clock})
    return {"traceEvents": events, "displayTimeUnit": "ns",
            "otherData": {"kernel": rec.kernel, "chip": rec.chip.name,
                          "launch_overhead_us": rec.launch_us, "task_duration_us": rec.time_us}}


def write_trace(rec: LaunchRecord, path: str, max_slices: int = 5000) -> None:
    with open(path, "w", encoding="utf-8") as f:
        json.dump(chrome_trace(rec, max_slices), f)
