"""Tuning (R10): sweep the kernel's tuning space (buffer count, tile size, block count, the Cube's
base block and L0 buffering, as its KernelEntry declares it) on the modeled chip, and lay out
the ladder the design document records: the space's ladder rows (single buffer, double buffer,
4-slot pipeline for the vector kernels), the best configuration found, and (with a following
op) the fused kernel.

A configuration the kernel's tiling finds does not fit the case (ConfigDoesNotFit) is no
candidate; every other error is the caller's to see. A row that covers several launches reports
their total time; its AI Core utilisation and move share are the launches' values weighted by
their time.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ..hixl import ArgSpec
from ..nixl import Device, Graph, NixlError
from ..nixl.fusion import find_chain, run_chain
from ..nixl.tuning import ConfigDoesNotFit, TuningSpace
from .metrics import launch_metrics


class NotTunable(NixlError):
    """The op does not run natively on this case, or no configuration fits it."""

    symptom = "far slower than expected"


@dataclass(frozen=True)
class Variant:
    variant: str
    time_us: float
    ai_core_util: float
    move_ratio: float
    config: dict

    def to_json(self) -> dict:
        return {"variant": self.variant, "time_us": round(self.time_us, 3),
                "ai_core_util": round(self.ai_core_util, 4),
                "move_ratio": round(self.move_ratio, 4), "config": self.config}


def _combine(name: str, records, config: dict) -> Variant:
    total = sum(r.time_us for r in records)
    util = move = 0.0
    for r in records:
        if r.launch is not None:
            m = launch_metrics(r.launch).values
            util += m["ai_core_util"] * r.time_us
            move += m["move_ratio"] * r.time_us
    return Variant(name, total, util / total if total else 0.0, move / total if total else 0.0,
                   config)


def _try(run, config: dict) -> Variant | None:
    """A configuration that does not fit the case is no candidate; nothing else is hidden."""
    try:
        return run(config)
    except ConfigDoesNotFit:
        return None


class Tuner:
    """Runs `op` (then `then`, if given) on empty tensors of a timing-only device."""

    def __init__(self, chip: str, op: str, specs: list[ArgSpec], attrs: dict | None = None,
                 then: list[str] | None = None,
                 progress: Callable[[str], None] | None = None) -> None:
        self.progress = progress or (lambda text: None)
        self.dev = Device(chip, timing_only=True)
        self.op, self.specs, self.attrs = op, specs, attrs or {}
        self.graph = Graph(inputs=[f"x{i}" for i in range(len(specs))], outputs=["out"])
        ops = [op, *(then or [])]
        value = None
        for k, name in enumerate(ops):
            args = [f"x{i}" for i in range(len(specs))] if k == 0 else [value]
            value = self.graph.add(name, *args, outputs=("out",) if k == len(ops) - 1 else None,
                                   **(self.attrs if k == 0 else {}))
        self.feeds = {f"x{i}": self.dev.empty(s.shape, s.dtype, f"x{i}")
                      for i, s in enumerate(specs)}

    def unfused(self, name: str, config: dict) -> Variant | None:
        self.dev.flush_l2()             # every point from the same (cold) L2
        records: list = []           # RunRecords (a run keeps its record)
        env = dict(self.feeds)
        produced: list = []
        for node in self.graph.nodes:
            out = self.dev.run(node.op, *(env[n] for n in node.inputs), config=config,
                               **node.attrs)
            outs = out if isinstance(out, tuple) else (out,)
            records.append(self.dev.last_profile)
            env[node.outputs[0]] = outs[0]
            produced += outs
        for t in produced:
            t.free()
        first = records[0]
        if first.path != "native":
            raise NotTunable(f"{self.op} runs on the {first.path} for this case "
                             f"({first.reason}): there is no kernel configuration to tune")
        return _combine(name, records, config)

    def fused(self, config: dict) -> Variant | None:
        consumers: dict[str, int] = {}
        for node in self.graph.nodes:
            for n in set(node.inputs):
                consumers[n] = consumers.get(n, 0) + 1
        chain = find_chain(self.dev, self.graph, 0, self.feeds, consumers)
        if chain is None or len(chain.nodes) != len(self.graph.nodes):
            return None
        self.dev.flush_l2()
        out, record = run_chain(self.dev, chain, self.feeds, config)
        out.free()
        return _combine("fused", [record], config)

    def space(self) -> TuningSpace:
        """The tuning space of the op's native kernel (the tuner runs on native ops)."""
        entry = self.dev.registry.native(self.op)
        assert entry is not None
        return entry.tuning_space

    def sweep(self, run: Callable[[dict], Variant | None]) -> Variant | None:
        """The fastest configuration of the kernel entry's tuning space."""
        space = self.space()
        best = None
        for point in space.points(self.dev.chip):
            cfg = point.to_dict()
            self.progress(f"{run.__name__} {cfg}")
            v = _try(run, cfg)
            if v is not None and (best is None or v.time_us < best.time_us):
                best = v
        return best

    def ladder(self) -> tuple[list[Variant], Variant]:
        space = self.space()
        rows = [v for v in (_try(lambda c, n=name: self.unfused(n, c), dict(config))
                            for name, config in space.ladder)
                if v is not None]
        best = self.sweep(lambda cfg: self.unfused("tuned", cfg))
        if best is not None:
            rows.append(best)
        if not rows:
            raise NotTunable(f"no configuration of {self.op}'s tuning space fits this case")
        chosen = best or min(rows, key=lambda v: v.time_us)
        if len(self.graph.nodes) > 1:
            fused = self.sweep(self.fused)
            if fused is not None:
                rows.append(fused)
                chosen = min(chosen, fused, key=lambda v: v.time_us)
        return rows, chosen

    def close(self) -> None:
        for t in self.feeds.values():
            t.free()
        self.dev.close()
