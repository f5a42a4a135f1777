"""The cost table: cycles per instruction, read from one data file per architecture.

Kernel code never holds a cost; the chip spec names the table (`costs/<arch>.json`).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from functools import cache
from importlib import resources

from ..intmath import ceil_div

# Which throughput row of the [VECPERF] table an instruction belongs to.
VECTOR_CLASS = {
    "add": "simple", "sub": "simple", "mul": "simple", "max": "simple", "min": "simple",
    "adds": "simple", "muls": "simple", "maxs": "simple", "mins": "simple", "relu": "simple",
    "abs": "simple", "duplicate": "simple", "compare": "simple", "select": "simple",
    "exp": "transcend", "ln": "transcend", "sqrt": "transcend", "div": "transcend",
    "reciprocal": "reciprocal", "rsqrt": "reciprocal",
    "cast": "cast",
    "whole_reduce_sum": "reduce", "whole_reduce_max": "reduce", "whole_reduce_min": "reduce",
    # ReduceDataBlock (block_reduce_*): 128/7 per cycle in 16-bit, 64 in 32-bit [VECPERF].
    "block_reduce_16": "reduce", "block_reduce_32": "simple",
    # Moving elements inside UB (vector_datamove.py, vector_sort.py).
    "gather": "gather", "gather_mask": "gather_mask", "transpose": "transpose", "sort": "sort",
    "create_vec_index": "simple",         # not in [VECPERF]: the simple-op rate, assumed [U]
}


@dataclass(frozen=True)
class CostTable:
    arch: str
    raw: dict

    @property
    def scalar_issue_cycles(self) -> float:
        return self.raw["scalar_issue_cycles"]

    @property
    def flag_latency_cycles(self) -> float:
        return self.raw["flag_latency_cycles"]

    @property
    def queue_depth(self) -> int:
        return self.raw["queue_depth"]

    @property
    def mte_latency_cycles(self) -> float:
        return self.raw["mte"]["latency_cycles"]

    def vector(self, op: str, itemsize: int, elements: int) -> float:
        """Startup plus elements over the per-op, per-dtype throughput (count 0 still costs)."""
        v = self.raw["vector"]
        per_cycle = v["elements_per_cycle"][VECTOR_CLASS[op]]["16" if itemsize <= 2 else "32"]
        return v["startup_cycles"] + math.ceil(elements / per_cycle)

    def mte_rate(self, active_cores: int) -> float:
        """Bytes per cycle one core's GM port gets when `active_cores` share the GM bandwidth."""
        return min(self.raw["mte"]["port_bytes_per_cycle"],
                   self.raw["gm_bytes_per_cycle"] / max(active_cores, 1))

    def mte_transfer(self, nbytes: int, bursts: int, aligned: bool, rate: float) -> float:
        """Port cycles of one move: bytes over the rate (lower when GM bursts start off the
        512-byte grid) plus a fixed cost per burst (a contiguous block)."""
        m = self.raw["mte"]
        if not aligned:
            rate *= m["unaligned_factor"]
        return nbytes / rate + m["burst_cycles"] * bursts

    @property
    def burst_align_bytes(self) -> int:
        return self.raw["mte"]["burst_align_bytes"]

    def host_copy_us(self, nbytes: int) -> float:
        """One synchronous copy between host and device memory (the shim's round trips)."""
        h = self.raw["host"]
        return h["transfer_latency_us"] + nbytes / (h["link_gb_per_s"] * 1e3)

    def launch_us(self, cores: int) -> float:
        la = self.raw["launch"]
        return la["base_us"] + la["per_core_us"] * cores

    # ---- the Cube core [CUBEPERF] ----
    def mmad_k0(self, kind: str) -> int:
        """K elements per Cube cycle: `kind` is the input dtype name, or "hf32"."""
        return self.raw["cube"]["mmad"]["k0"][kind]

    def mmad(self, m: int, n: int, k: int, k0: int, fractal: int = 16) -> tuple[float, int]:
        """(cycles, ideal cycles) of one Mmad: head + ceil(m/16) ceil(n/16) ceil(k/k0); the
        ideal part is the Cube at its peak rate."""
        ideal = ceil_div(m, fractal) * ceil_div(n, fractal) * ceil_div(k, k0)
        return self.raw["cube"]["mmad"]["head_cycles"] + ideal, ideal

    def mte1(self, nbytes: int, dst: str) -> float:
        """An MTE1 move into `dst` (L0A, L0B, L1 or BT): head + bytes at its rate."""
        c = self.raw["cube"]["mte1"]
        return c["head_cycles"] + nbytes / c["bytes_per_cycle"][dst]

    @property
    def fixpipe_head_cycles(self) -> float:
        return self.raw["cube"]["fixpipe"]["head_cycles"]

    def fixpipe_local(self, nbytes: int, dst: str) -> float:
        """A Fixpipe write into L1 (or an L1 -> Fixpipe buffer copy): head + bytes at its rate
        (into GM it is a move through the core's GM port instead)."""
        c = self.raw["cube"]["fixpipe"]
        return c["head_cycles"] + nbytes / c["bytes_per_cycle"][dst]


@cache
def cost_table(arch: str) -> CostTable:
    text = resources.files("ixl.ascend").joinpath(f"costs/{arch}.json").read_text()
    return CostTable(arch, json.loads(text))
