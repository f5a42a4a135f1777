"""Fit the dav-c220 cost table to the calibration points (run by hand; prints the result).

Every workload's blocks do the same work, so each evaluation times block 0 alone on a core
that shares the GM bandwidth with `block_num` cores; `ixl calibrate` then runs the full
launches. The search is a Nelder-Mead over the free parameters, minimising the worst
|log(modeled / measured)|; parameters the chip facts pin (per-core port 32 B/cycle from the
ini's ddr_rate, the 0.7 unaligned factor, vector throughputs) stay fixed unless listed.

    python benchmarks/fit_costs.py [--write]
"""

from __future__ import annotations

import argparse
import json
import math
from importlib import resources

import numpy as np

from ixl.ascend import AICore, Mode
from ixl.ascend.costs import cost_table
from ixl.calibration import workloads
from ixl.nixl import Device, KernelContext
from ixl.nixl.tuning import TuningConfig

# name -> (path in the cost table, lower bound, upper bound)
FREE = {
    "scalar_issue": (("scalar_issue_cycles",), 1, 20),
    "flag_latency": (("flag_latency_cycles",), 0, 400),
    "vector_startup": (("vector", "startup_cycles"), 0, 100),
    "mte_latency": (("mte", "latency_cycles"), 0, 400),
    "burst_cycles": (("mte", "burst_cycles"), 0, 40),
    "port": (("mte", "port_bytes_per_cycle"), 16, 128),
    "gm": (("gm_bytes_per_cycle",), 500, 1200),
    "launch_per_core": (("launch", "per_core_us"), 0.0, 0.45),
}


def _set(raw: dict, path: tuple, value: float) -> None:
    for key in path[:-1]:
        raw = raw[key]
    raw[path[-1]] = value


class Block0:
    """A workload's block 0 alone on one core that shares the GM bandwidth with the launch's
    cores, on a timing-only device's tensors, after one full launch of the workload (as
    `ixl calibrate` runs it: the second launch, L2 as the first left it). A core's timing
    depends only on L2 as its launch found it and on its own moves (ascend/l2.py), so block 0
    alone times as it does in the full launch."""

    def __init__(self, w):
        dev = self.dev = Device("910B1", timing_only=True, debug=False)   # L2 of its own
        self.w, self.chip = w, dev.chip
        self.tensors = [dev.empty(shape, dtype, f"t{i}")
                        for i, (shape, dtype) in enumerate((*w.inputs, *w.outputs))]
        descs = [t.desc for t in self.tensors]
        n_in = len(w.inputs)
        self.plan = w.entry.tiling(descs[:n_in], descs[n_in:], {}, self.chip,
                                   TuningConfig.of(w.config, self.chip))
        self.windows = [dev.backend.window(t.addr, t.desc.np_dtype, t.desc.storage_size, f"t{i}")
                        for i, t in enumerate(self.tensors)]
        self.l2 = dev.backend.l2
        dev.launch(w.entry, self.tensors[:n_in], self.tensors[n_in:], config=w.config)

    def us(self) -> float:
        chip, cores = self.chip, min(self.plan.block_dim, self.chip.aiv_cores)
        core = AICore(chip, 0, Mode(timing_only=True), active_cores=cores,
                      l2=self.l2.phase(cores, stand_in=True).view(0))
        core.begin_block(0, self.plan.block_dim)
        self.w.entry.kernel(KernelContext(0, self.plan.block_dim, self.plan.tiling, chip),
                            *self.windows)
        core.end_block()
        return cost_table(chip.arch).launch_us(cores) + core.timeline.end / chip.clock_mhz


def evaluate(raw, names, x, loads) -> tuple[float, list[float]]:
    for name, v in zip(names, x):
        path, lo, hi = FREE[name]
        _set(raw, path, float(np.clip(v, lo, hi)))
    ratios = [w.us() / w.w.measured_us for w in loads]
    worst = max(abs(math.log(r)) for r in ratios)
    order = [w.w.measured_us for w in loads[:4]]
    modeled = [r * m for r, m in zip(ratios[:4], order)]
    # keep the Add ladder's order
    penalty = sum(0.05 for a, b in zip(modeled, modeled[1:]) if a <= b)
    return worst + penalty, ratios


def nelder_mead(f, x0, steps, iters=120):
    pts = [np.array(x0, float)] + [np.array(x0, float) + np.eye(len(x0))[i] * steps[i]
                                   for i in range(len(x0))]
    vals = [f(p) for p in pts]
    for _ in range(iters):
        order = np.argsort(vals)
        pts, vals = [pts[i] for i in order], [vals[i] for i in order]
        centroid = np.mean(pts[:-1], axis=0)
        refl = centroid + (centroid - pts[-1])
        fr = f(refl)
        if fr < vals[0]:
            exp = centroid + 2 * (centroid - pts[-1])
            fe = f(exp)
            pts[-1], vals[-1] = (exp, fe) if fe < fr else (refl, fr)
        elif fr < vals[-2]:
            pts[-1], vals[-1] = refl, fr
        else:
            con = centroid + 0.5 * (pts[-1] - centroid)
            fc = f(con)
            if fc < vals[-1]:
                pts[-1], vals[-1] = con, fc
            else:
                pts = [pts[0]] + [pts[0] + 0.5 * (p - pts[0]) for p in pts[1:]]
                vals = [vals[0]] + [f(p) for p in pts[1:]]
    best = int(np.argmin(vals))
    return pts[best], vals[best]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--write", action="store_true", help="write the fitted values to the table")
    ap.add_argument("--iters", type=int, default=120)
    args = ap.parse_args()
    table = cost_table("dav-c220")
    raw = table.raw
    loads = [Block0(w) for w in workloads("910B1")]
    names = list(FREE)
    x0 = []
    for n in names:
        node = raw
        for key in FREE[n][0]:
            node = node[key]
        x0.append(node)
    steps = [max(abs(v) * 0.3, 1.0 if FREE[n][2] > 1 else 0.05) for n, v in zip(names, x0)]
    best, score = nelder_mead(lambda x: evaluate(raw, names, x, loads)[0], x0, steps, args.iters)
    _, ratios = evaluate(raw, names, best, loads)
    for n, v in zip(names, best):
        print(f"{n:>16} = {float(np.clip(v, FREE[n][1], FREE[n][2])):.4g}")
    for w, r in zip(loads, ratios):
        print(f"{w.w.name:>45}: ratio {r:.3f}")
    print(f"worst |log ratio| {score:.4f}")
    if args.write:
        path = resources.files("ixl.ascend").joinpath("costs/dav-c220.json")
        for n, v in zip(names, best):
            _set(raw, FREE[n][0], round(float(np.clip(v, FREE[n][1], FREE[n][2])), 4))
        path.write_text(json.dumps(raw, indent=2) + "\n")
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
