"""Per-launch metrics, named as msprof names them where it has a name (R9).

Ratios follow msprof: a pipe's busy cycles over the total cycles, summed over the cores that
ran. The rest:
- ai_core_util: the busiest pipe's busy time summed over cores, over (all AI Cores of the chip x
  the task duration, launch overhead included): how much of the chip the launch kept working.
- move_ratio: the share of each core's time in which data moves (the GM port is busy) and the
  vector unit is idle, i.e. moves not hidden behind compute; averaged over cores.
- bubble_ratio: the share of each core's time in which its bound pipe is idle.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..ascend.costs import cost_table
from ..ascend.simulator import LaunchRecord
from ..ascend.timeline import Pipe, length, overlap

VECTOR_PIPES = {Pipe.V: "aiv_vec_ratio", Pipe.S: "aiv_scalar_ratio",
                Pipe.MTE2: "aiv_mte2_ratio", Pipe.MTE3: "aiv_mte3_ratio"}
CUBE_PIPES = {Pipe.M: "aic_mac_ratio", Pipe.MTE1: "aic_mte1_ratio", Pipe.FIX: "aic_fixpipe_ratio"}
PORT = "GM port"


@dataclass
class Metrics:
    values: dict
    diagnosis: str
    instructions: dict = field(default_factory=dict)

    def to_json(self) -> dict:
        return {**self.values, "instructions": self.instructions, "diagnosis": self.diagnosis}


def _busy(core, pipe: Pipe) -> float:
    st = core.pipes.get(pipe)
    return st.busy if st else 0.0


def launch_metrics(rec: LaunchRecord) -> Metrics:
    chip = rec.chip
    cores = rec.cores
    clock = rec.clock_mhz
    total_cycles = sum(c.cycles for c in cores) or 1.0
    time_cycles = rec.time_us * clock
    v = {
        "task_duration(us)": round(rec.time_us, 3),
        "aiv_time(us)": round(rec.core_us, 3),
        "launch_overhead(us)": round(rec.launch_us, 3),
        "block_dim": rec.block_num,
        "cores": len(cores),
    }
    used = {p for c in cores for p in c.pipes}
    for pipe, key in {**VECTOR_PIPES, **CUBE_PIPES}.items():
        if pipe in VECTOR_PIPES or pipe in used:
            v[key] = round(sum(_busy(c, pipe) for c in cores) / total_cycles, 4)

    port = [length(c.port_busy) for c in cores]
    vec = [_busy(c, Pipe.V) for c in cores]
    busiest = [max(p, *(_busy(c, q) for q in c.pipes)) for p, c in zip(port, cores)]
    v["ai_core_util"] = round(sum(busiest) / (chip.aiv_cores * time_cycles), 4) if time_cycles else 0.0
    exposed = [length(c.port_busy) - overlap(c.port_busy, c.compute_busy) for c in cores]
    v["move_ratio"] = round(sum(e / c.cycles for e, c in zip(exposed, cores) if c.cycles)
                            / max(len(cores), 1), 4)
    v["bubble_ratio"] = round(sum(1 - b / c.cycles for b, c in zip(busiest, cores) if c.cycles)
                              / max(len(cores), 1), 4)
    gm_bytes = sum(c.pipes[p].nbytes for c in cores for p in (Pipe.MTE2, Pipe.MTE3) if p in c.pipes)
    peak = cost_table(chip.arch).raw["gm_bytes_per_cycle"] * clock * 1e6 / 1e9
    achieved = gm_bytes / (rec.time_us * 1e3) if rec.time_us else 0.0
    v["gm_bytes"] = gm_bytes
    v["achieved_bandwidth(GB/s)"] = round(achieved, 2)
    v["peak_bandwidth(GB/s)"] = round(peak, 2)
    v["bandwidth_util"] = round(achieved / peak, 4) if peak else 0.0
    v["ub_peak_bytes"] = max((c.ub_peak for c in cores), default=0)
    v["launch_share"] = round(rec.launch_us / rec.time_us, 4) if rec.time_us else 0.0

    shares = {PORT: sum(port) / total_cycles, "VECTOR": sum(vec) / total_cycles,
              "SCALAR": v["aiv_scalar_ratio"]}
    bound = max(shares, key=shares.get)
    v["bound_pipe"] = bound
    counts = {p.lane: sum(c.pipes[p].count for c in cores if p in c.pipes) for p in Pipe if p in used}
    overlap_share = (sum(vec) - sum(overlap(c.port_busy, c.compute_busy) for c in cores)) / max(sum(vec), 1)
    return Metrics(v, diagnose(v, shares, overlap_share), counts)


def diagnose(v: dict, shares: dict, unhidden_compute: float) -> str:
    """One line in R9's words."""
    findings = []
    port, vec = shares[PORT], shares["VECTOR"]
    if port >= 0.6 and port >= vec:
        findings.append("move-bound: the GM moves carry the kernel (data flow, tile and burst "
                        f"sizes decide its time; bandwidth at {v['bandwidth_util']:.0%} of peak)")
    if vec < 0.3 and port < 0.6:
        findings.append("compute under-used: the vector unit is mostly idle (tiles too small, "
                        "or not the widest vector instructions)")
    if vec > 0.05 and port > 0.05 and unhidden_compute > 0.5 and v["move_ratio"] > 0.3:
        findings.append("moves and compute not overlapped: they run one after the other "
                        "(double buffering would hide one behind the other)")
    if v["launch_share"] > 0.3:
        findings.append(f"launch overhead is {v['launch_share']:.0%} of the time: fuse small "
                        "kernels or batch launches")
    if shares["SCALAR"] >= max(port, vec):
        findings.append("scalar-bound: instruction issue limits the kernel (fewer, larger "
                        "instructions)")
    return "; ".join(findings) or "balanced: no pipe dominates and moves overlap compute"
