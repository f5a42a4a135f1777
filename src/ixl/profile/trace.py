"""Chrome trace JSON (chrome://tracing, Perfetto): one process per core, one track per pipe.

Lanes are named as msprof's simulator names them (VECTOR, SCALAR, MTE2, MTE3 on a vector core;
CUBE, MTE1, MTE2, MTE3, FIXPIPE, SCALAR on a Cube core); set/wait pairs (and the enque/deque and
free/alloc built on them) become flow arrows, and so do cross-core flags between two cores'
processes (set on its pipe, passed on the waiting core's scalar track).
Pipes are in order, so slices on one track never overlap. A track keeps at most
`max_slices` slices (the rest are counted in the process's metadata), so large runs stay
loadable.

`chrome_trace(record)` draws one recorded launch; `ChromeTrace` is an observer that draws every
launch of a chip it is attached to, one after the other (a whole graph or model run).
"""

from __future__ import annotations

import json
from collections.abc import Callable

from ..ascend.record import FlagEdge, Slice, TimelineRecorder
from ..ascend.simulator import LaunchRecord
from ..ascend.timeline import Pipe

TRACK_ORDER = [Pipe.S, Pipe.V, Pipe.M, Pipe.MTE1, Pipe.MTE2, Pipe.MTE3, Pipe.FIX]


def chrome_trace(rec: LaunchRecord, max_slices: int = 5000) -> dict:
    events: list[dict] = []
    for core in rec.cores:
        events += core_events(int(core.core_id), _label(core.core_id, core.blocks), core.slices,
                              core.edges, rec.clock_mhz, max_slices)
    events += cross_events(rec.cross_edges, int, rec.clock_mhz)
    return {"traceEvents": _flow_ids(events), "displayTimeUnit": "ns",
            "otherData": {"kernel": rec.kernel, "chip": rec.chip.name,
                          "launch_overhead_us": rec.launch_us, "task_duration_us": rec.time_us}}


def write_trace(rec: LaunchRecord, path: str, max_slices: int = 5000) -> None:
    with open(path, "w", encoding="utf-8") as f:
        json.dump(chrome_trace(rec, max_slices), f)


def shim_trace(op: str, reason: str | None, host_us: float) -> dict:
    """A run on the shim launches no kernel: its trace is one span on the host, as long as the
    modeled round trips (operands to the host and back, nothing overlapped)."""
    events = [{"ph": "M", "name": "process_name", "pid": 0, "args": {"name": "host (shim)"}},
              {"ph": "X", "name": f"{op} on the shim", "pid": 0, "tid": 0, "ts": 0.0,
               "dur": host_us, "args": {"reason": reason}}]
    return {"traceEvents": events, "displayTimeUnit": "ns",
            "otherData": {"op": op, "path": "shim", "host_us": host_us}}


def write_shim_trace(op: str, reason: str | None, host_us: float, path: str) -> None:
    with open(path, "w", encoding="utf-8") as f:
        json.dump(shim_trace(op, reason, host_us), f)


def core_events(pid: int, label: str, slices: list[Slice], edges: list[FlagEdge], clock: float,
                max_slices: int, offset_us: float = 0.0) -> list[dict]:
    """One core's process: its pipe slices (times in cycles at `clock` MHz, shifted by
    `offset_us`) and its flag edges as flow arrows (ids are numbered by `_flow_ids`)."""
    events = [{"ph": "M", "name": "process_name", "pid": pid, "args": {"name": label}}]
    kept: dict[Pipe, int] = {}
    dropped: dict[str, int] = {}
    for s in slices:
        n = kept.get(s.pipe, 0)
        if n >= max_slices:
            dropped[s.pipe.lane] = dropped.get(s.pipe.lane, 0) + 1
            continue
        kept[s.pipe] = n + 1
        ev = {"ph": "X", "name": s.name, "pid": pid, "tid": TRACK_ORDER.index(s.pipe),
              "ts": offset_us + s.start / clock, "dur": max(s.end - s.start, 0) / clock}
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
    for e in edges[: max_slices]:
        common = {"name": e.event, "cat": "flag", "pid": pid}
        events.append({**common, "ph": "s", "tid": TRACK_ORDER.index(e.set_pipe),
                       "ts": offset_us + e.set_time / clock})
        events.append({**common, "ph": "f", "bp": "e", "tid": TRACK_ORDER.index(e.wait_pipe),
                       "ts": offset_us + e.wait_time / clock})
    return events


def cross_events(edges: list, pid_of: Callable[[int], int], clock: float,
                 offset_us: float = 0.0) -> list[dict]:
    """Flow arrows of cross-core flags, from the setter's pipe to the waiter's scalar track."""
    events = []
    for e in edges:
        common = {"name": f"cross-core flag {e.flag}", "cat": "cross-core"}
        events.append({**common, "ph": "s", "pid": pid_of(e.setter),
                       "tid": TRACK_ORDER.index(e.set_pipe), "ts": offset_us + e.set_time / clock})
        events.append({**common, "ph": "f", "bp": "e", "pid": pid_of(e.waiter),
                       "tid": TRACK_ORDER.index(Pipe.S), "ts": offset_us + e.wait_time / clock})
    return events


def _flow_ids(events: list[dict]) -> list[dict]:
    """Number the flow arrows: each set ("s") and the wait ("f") after it share an id."""
    flow_id = 0
    for ev in events:
        if ev["ph"] == "s":
            flow_id += 1
        if ev["ph"] in ("s", "f"):
            ev["id"] = flow_id
    return events


def _label(core_id: int, blocks: list[int]) -> str:
    return f"core {core_id} (blocks {blocks[:4]}{'...' if len(blocks) > 4 else ''})"


class ChromeTrace(TimelineRecorder):
    """An observer that traces every launch of the chip it is attached to, each after the one
    before (launch overhead included), one process per launch and core:

        trace = ChromeTrace(); dev.backend.attach(trace); dev.run_graph(...); trace.write(path)
    """

    def __init__(self, max_slices: int = 5000) -> None:
        super().__init__()
        self.max_slices = max_slices
        self.events: list[dict] = []
        self.launches = 0
        self.offset_us = 0.0

    def launch_end(self, record: LaunchRecord) -> None:
        def pid_of(core_id: int) -> int:      # core ids reach 2**16 + AICs
            return self.launches * (1 << 17) + int(core_id)
        for core in record.cores:
            label = f"launch {self.launches} {record.kernel}: {_label(core.core_id, core.blocks)}"
            self.events += core_events(pid_of(core.core_id), label, self.slices[core.core_id],
                                       self.edges[core.core_id], record.clock_mhz,
                                       self.max_slices, self.offset_us + record.launch_us)
        self.events += cross_events(self.cross, pid_of, record.clock_mhz,
                                    self.offset_us + record.launch_us)
        self.launches += 1
        self.offset_us += record.time_us

    def trace(self) -> dict:
        return {"traceEvents": _flow_ids(list(self.events)), "displayTimeUnit": "ns"}

    def write(self, path: str) -> None:
        with open(path, "w", encoding="utf-8") as f:
            json.dump(self.trace(), f)
