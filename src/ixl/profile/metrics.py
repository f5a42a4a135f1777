"""Per-launch metrics, named as msprof names them where it has a name (R9).

Ratios follow msprof: a pipe's busy cycles over the total cycles, summed over the cores of one
kind that ran (aiv_* over the vector cores, aic_* over the Cube cores; a mix launch has both).
`aiv_time(us)` / `aic_time(us)` is the slowest core of that kind; `aic_mac_time(us)` is
aic_mac_ratio x aic_time(us). The rest:
- ai_core_util: the busiest pipe's busy time summed over cores, over (all cores of the kinds the
  launch used x the task duration, launch overhead included): how much of the chip the launch
  kept working.
- move_ratio: the share of each core's time in which data moves (the GM port is busy) and its
  compute unit (vector, or Cube) is idle, i.e. moves not hidden behind compute; averaged over
  cores.
- bubble_ratio: the share of each core's time in which its bound pipe is idle.
- achieved_bandwidth(GB/s): the bytes the cores moved to and from GM (L2 hits included) over
  the task duration; peak_bandwidth(GB/s) is HBM's. bandwidth_util: the longer of the times the
  launch's HBM bytes would take at HBM's peak and its L2 bytes at L2's, over the task duration
  (how busy the busier of the two was; with L2 hits the achieved bandwidth can exceed HBM's
  peak).
- L2, in msprof's L2Cache words (bytes, where msprof counts requests): l2_total_cache_hit_rate
  (requests L2 served or absorbed in lines it held), the read and write hits and
  miss-allocates, bypasses (CacheMode.DISABLE), victim write-backs of dirty lines, and
  hbm_bytes against l2_bytes (what crossed the HBM interface vs what L2 served or absorbed).
- UB bank conflicts, in msprof's ResourceConflictRatio words: aiv_vec_bankgroup_cflt_ratio and
  aiv_vec_bank_cflt_ratio are the vector cycles lost to two reads or two writes in one bank
  group, and to a read and a write in one bank, over the vector pipe's busy cycles;
  aiv_vec_total_cflt_ratio is their sum (ascend/ubbanks.py).
- cube_tflops: the Mmads' 2 m n k over the task duration, against cube_peak_tflops = AIC cores x
  8192 flop per cycle (16 x 16 x 16 fp16 multiply-adds) x clock [CUBEPERF]; cube_util is their
  ratio (for float32 inputs the Cube's own peak is a quarter of it, HF32 half).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..ascend.core import CoreKind
from ..ascend.costs import cost_table
from ..ascend.l2 import L2Stats
from ..ascend.observe import Space
from ..ascend.simulator import LaunchRecord
from ..ascend.timeline import Pipe, length, overlap

VECTOR_PIPES = {Pipe.V: "aiv_vec_ratio", Pipe.S: "aiv_scalar_ratio",
                Pipe.MTE2: "aiv_mte2_ratio", Pipe.MTE3: "aiv_mte3_ratio"}
CUBE_PIPES = {Pipe.M: "aic_mac_ratio", Pipe.MTE1: "aic_mte1_ratio", Pipe.MTE2: "aic_mte2_ratio",
              Pipe.FIX: "aic_fixpipe_ratio", Pipe.S: "aic_scalar_ratio"}
PORT = "GM port"
CUBE_FLOPS_PER_CYCLE = 2 * 16 * 16 * 16     # one 16x16x16 fp16 multiply-add block [CUBEPERF]


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
    aiv, aic = rec.of(CoreKind.AIV), rec.of(CoreKind.AIC)
    time_cycles = rec.time_us * clock
    v: dict[str, Any] = {
        "task_duration(us)": round(rec.time_us, 3),
    }
    if aiv or not aic:
        v["aiv_time(us)"] = round(max((c.cycles for c in aiv), default=0.0) / clock, 3)
    if aic:
        v["aic_time(us)"] = round(max(c.cycles for c in aic) / clock, 3)
    v["launch_overhead(us)"] = round(rec.launch_us, 3)
    v["block_dim"] = rec.block_num
    v["cores"] = len(cores)
    if aic:
        v["kernel_type"] = rec.kind.value
    if aiv or not aic:
        total = sum(c.cycles for c in aiv) or 1.0
        for pipe, key in VECTOR_PIPES.items():
            v[key] = round(sum(_busy(c, pipe) for c in aiv) / total, 4)
        _bank_values(v, aiv)
    if aic:
        _cube_values(v, aic, chip, clock, rec.time_us)

    port = [length(c.port_busy) for c in cores]
    busiest = [max(p, *(_busy(c, q) for q in c.pipes)) for p, c in zip(port, cores)]
    chip_cores = (chip.aiv_cores if aiv else 0) + (chip.aic_cores if aic else 0)
    v["ai_core_util"] = round(sum(busiest) / (chip_cores * time_cycles), 4) if time_cycles else 0.0
    exposed = [length(c.port_busy) - overlap(c.port_busy, c.compute_busy) for c in cores]
    v["move_ratio"] = round(sum(e / c.cycles for e, c in zip(exposed, cores) if c.cycles)
                            / max(len(cores), 1), 4)
    v["bubble_ratio"] = round(sum(1 - b / c.cycles for b, c in zip(busiest, cores) if c.cycles)
                              / max(len(cores), 1), 4)
    gm_bytes = sum(c.pipes[p].nbytes for c in cores for p in (Pipe.MTE2, Pipe.MTE3, Pipe.FIX)
                   if p in c.pipes)
    peak = cost_table(chip.arch).raw["gm_bytes_per_cycle"] * clock * 1e6 / 1e9
    achieved = gm_bytes / (rec.time_us * 1e3) if rec.time_us else 0.0
    v["gm_bytes"] = gm_bytes
    v["achieved_bandwidth(GB/s)"] = round(achieved, 2)
    v["peak_bandwidth(GB/s)"] = round(peak, 2)
    l2 = _l2_values(v, cores)
    l2_peak = cost_table(chip.arch).raw["l2"]["bytes_per_cycle"] * clock * 1e6 / 1e9
    need_us = max(l2.hbm_bytes / peak, l2.l2_bytes / l2_peak) / 1e3 if peak else 0.0
    v["bandwidth_util"] = round(need_us / rec.time_us, 4) if rec.time_us else 0.0
    v["ub_peak_bytes"] = max((c.ub_peak for c in cores), default=0)
    v["launch_share"] = round(rec.launch_us / rec.time_us, 4) if rec.time_us else 0.0

    findings = []
    if aiv or not aic:
        shares, unhidden = _shares(aiv, Pipe.V, "VECTOR")
        v["bound_pipe"] = max(shares, key=lambda lane: shares[lane])
        findings += _vector_findings(v, shares, unhidden)
    if aic:
        shares, unhidden = _shares(aic, Pipe.M, "CUBE")
        for pipe in (Pipe.MTE1, Pipe.FIX):
            shares[pipe.lane] = sum(_busy(c, pipe) for c in aic) / (sum(c.cycles for c in aic) or 1)
        bound = max(shares, key=lambda lane: shares[lane])
        if not aiv or max(c.cycles for c in aic) >= max(c.cycles for c in aiv):
            v["bound_pipe"] = bound
        findings += _cube_findings(v, shares, unhidden)
    findings += _l2_findings(v, l2)
    if v["launch_share"] > 0.3:
        findings.append(f"launch overhead is {v['launch_share']:.0%} of the time: fuse small "
                        "kernels or batch launches")
    used = {p for c in cores for p in c.pipes}
    counts = {p.lane: sum(c.pipes[p].count for c in cores if p in c.pipes)
              for p in Pipe if p in used}
    diagnosis = "; ".join(findings) or "balanced: no pipe dominates and moves overlap compute"
    return Metrics(v, diagnosis, counts)


def _cube_values(v: dict, aic: list, chip, clock: float, time_us: float) -> None:
    total = sum(c.cycles for c in aic) or 1.0
    for pipe, key in CUBE_PIPES.items():
        v[key] = round(sum(_busy(c, pipe) for c in aic) / total, 4)
    v["aic_mac_time(us)"] = round(v["aic_mac_ratio"] * v["aic_time(us)"], 3)
    flops = sum(c.pipes[Pipe.M].flops for c in aic if Pipe.M in c.pipes)
    peak = chip.aic_cores * CUBE_FLOPS_PER_CYCLE * clock * 1e6 / 1e12
    achieved = flops / (time_us * 1e-6) / 1e12 if time_us else 0.0
    v["cube_tflops"] = round(achieved, 3)
    v["cube_peak_tflops"] = round(peak, 1)
    v["cube_util"] = round(achieved / peak, 4) if peak else 0.0
    v["l1_peak_bytes"] = max(c.peaks.get(Space.L1, 0) for c in aic)
    v["l0c_peak_bytes"] = max(c.peaks.get(Space.L0C, 0) for c in aic)


def _bank_values(v: dict, aiv: list) -> None:
    vec = sum(_busy(c, Pipe.V) for c in aiv)
    group = sum(c.bank_conflicts[0] for c in aiv)
    bank = sum(c.bank_conflicts[1] for c in aiv)
    v["aiv_vec_bankgroup_cflt_ratio"] = round(group / vec, 4) if vec else 0.0
    v["aiv_vec_bank_cflt_ratio"] = round(bank / vec, 4) if vec else 0.0
    v["aiv_vec_total_cflt_ratio"] = round((group + bank) / vec, 4) if vec else 0.0


def _l2_values(v: dict, cores: list) -> L2Stats:
    """What the launch's GM moves did in L2 (module doc), summed over its cores."""
    l2 = L2Stats()
    for c in cores:
        l2.add(c.l2)
    hits = l2.read_hit + l2.write_hit
    v["l2_total_cache_hit_rate"] = round(hits / l2.requests, 4) if l2.requests else 0.0
    v["l2_read_cache_hit(bytes)"] = l2.read_hit
    v["l2_read_cache_miss_allocate(bytes)"] = l2.read_miss
    v["l2_write_cache_hit(bytes)"] = l2.write_hit
    v["l2_write_cache_miss_allocate(bytes)"] = l2.write_miss
    v["l2_bypass_read(bytes)"] = l2.bypass_read
    v["l2_bypass_write(bytes)"] = l2.bypass_write
    v["l2_victim_writeback(bytes)"] = l2.writeback
    v["hbm_bytes"] = l2.hbm_bytes
    v["l2_bytes"] = l2.l2_bytes
    # gm_bytes counts what L2 absorbed too; HBM's own traffic is what its peak bounds
    hbm = l2.hbm_bytes / (v["task_duration(us)"] * 1e3) if v["task_duration(us)"] else 0.0
    v["hbm_bandwidth(GB/s)"] = round(hbm, 2)
    v["hbm_bandwidth_util"] = round(hbm / v["peak_bandwidth(GB/s)"], 4) \
        if v["peak_bandwidth(GB/s)"] else 0.0
    v["l2_same_line_stall_total_cycles"] = round(l2.stall_cycles, 1)    # summed over cores
    return l2


def _l2_findings(v: dict, l2: L2Stats) -> list[str]:
    """What L2 did for the launch, and what a kernel can do about it [L2M][L2S]."""
    findings = []
    mb = 1 << 20
    if l2.writeback and l2.read_miss:
        findings.append(f"L2 turned over: {l2.writeback / mb:.0f} MB of dirty lines were written "
                        f"back to HBM during the launch while {l2.read_miss / mb:.0f} MB of reads "
                        "were allocated in L2 (mark read-once inputs CacheMode.DISABLE so they do "
                        "not evict the outputs, or process rounds that fit in L2)")
    if l2.bypass_read:
        findings.append(f"{l2.bypass_read / mb:.0f} MB read past L2 (CacheMode.DISABLE): streamed "
                        "inputs leave L2 to the data that is reused or written")
    reads = l2.read_hit + l2.read_miss + l2.bypass_read
    if reads and l2.read_hit >= 0.5 * reads:
        findings.append(f"L2 serves {l2.read_hit / reads:.0%} of the reads at the L2 rate")
    if l2.same_line_reads:
        findings.append(f"{l2.same_line_reads} reads met another core's read of the same lines "
                        "and serialized behind it (stagger the cores' start offsets)")
    return findings


def _shares(cores: list, compute: Pipe, lane: str) -> tuple[dict, float]:
    """Each core kind's shares of its cores' time (GM port, its compute unit, the scalar unit)
    and the share of compute not hidden behind moves."""
    total = sum(c.cycles for c in cores) or 1.0
    busy = sum(_busy(c, compute) for c in cores)
    shares = {PORT: sum(length(c.port_busy) for c in cores) / total, lane: busy / total,
              "SCALAR": round(sum(_busy(c, Pipe.S) for c in cores) / total, 4)}
    hidden = sum(overlap(c.port_busy, c.compute_busy) for c in cores)
    return shares, (busy - hidden) / max(busy, 1)


def _vector_findings(v: dict, shares: dict, unhidden_compute: float) -> list[str]:
    """R9's words for the vector cores."""
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
    if v["aiv_vec_total_cflt_ratio"] >= 0.1:
        findings.append(f"UB bank conflicts: {v['aiv_vec_total_cflt_ratio']:.0%} of the vector "
                        "cycles wait on operands in one bank group or bank (place the sources in "
                        "different bank groups and dst in another bank than its sources)")
    if shares["SCALAR"] >= max(port, vec):
        findings.append("scalar-bound: instruction issue limits the kernel (fewer, larger "
                        "instructions)")
    return findings


def _cube_findings(v: dict, shares: dict, unhidden_compute: float) -> list[str]:
    """R9's words for the Cube cores."""
    findings = []
    port, cube, mte1 = shares[PORT], shares["CUBE"], shares["MTE1"]
    fix = shares["FIXPIPE"]
    if cube >= 0.6 and cube >= max(port, mte1, fix):
        findings.append(f"Cube-bound: the Cube carries the kernel (mac ratio "
                        f"{v['aic_mac_ratio']:.0%}, {v['cube_tflops']:.1f} of "
                        f"{v['cube_peak_tflops']:.0f} TFLOPS)")
    if mte1 >= 0.3 and mte1 >= cube:
        findings.append("L1/L0 feed-bound: moving L1 into L0A/L0B (MTE1) takes longer than the "
                        "Mmads it feeds (larger base blocks reuse each load more; L0 double "
                        "buffering hides it)")
    if port >= 0.6 and port >= cube:
        findings.append("move-bound: the GM moves into L1 and out of L0C carry the kernel "
                        f"(bandwidth at {v['bandwidth_util']:.0%} of peak; keep K resident in "
                        "L1 and reuse each block)")
    if cube < 0.3 and max(port, mte1) < 0.6:
        findings.append("Cube under-used: the Cube is mostly idle (small Mmads, or waiting for "
                        "its operands)")
    if cube > 0.05 and port > 0.05 and unhidden_compute > 0.5 and v["move_ratio"] > 0.3:
        findings.append("moves and Mmads not overlapped: double buffering L1 and L0 would hide "
                        "one behind the other")
    if shares["SCALAR"] >= max(port, cube, mte1):
        findings.append("scalar-bound: instruction issue limits the kernel (fewer, larger "
                        "loads and Mmads)")
    return findings
