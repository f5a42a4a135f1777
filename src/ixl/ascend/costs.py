"""The cost table: cycles per instruction, read from one data file per architecture.

Kernel code never holds a cost; the chip spec names the table (`costs/<arch>.json`).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from functools import cache
from importlib import resources

# Which throughput row of the [VECPERF] table an instruction belongs to.
VECTOR_CLASS = {
    "add": "simple", "sub": "simple", "mul": "simple", "max": "simple", "min": "simple",
    "adds": "simple", "muls": "simple", "maxs": "simple", "mins": "simple", "relu": "simple",
    "abs": "simple", "duplicate": "simple", "compare": "simple", "select": "simple",
    "exp": "transcend", "ln": "transcend", "sqrt": "transcend", "div": "transcend",
    "reciprocal": "reciprocal", "rsqrt": "reciprocal",
    "cast": "cast",
    "whole_reduce_sum": "reduce", "whole_reduce_max": "reduce", "whole_reduce_min": "reduce",
}


@dataclass(frozen=True)
class CostTable:
    arch: str
    raw: dict

    @property
    def scalar_issue_cycles(self) -> float:
        return self.raw["scalar_issue_cycles"]

    @property
    def queue_depth(self) -> int:
        return self.raw["queue_depth"]

    def vector(self, op: str, itemsize: int, elements: int) -> float:
        """Startup plus elements over the per-op, per-dtype throughput (count 0 still costs)."""
        v = self.raw["vector"]
        per_cycle = v["elements_per_cycle"][VECTOR_CLASS[op]]["16" if itemsize <= 2 else "32"]
        return v["startup_cycles"] + math.ceil(elements / per_cycle)

    def mte_rate(self, active_cores: int) -> float:
        """Bytes per cycle one core's MTE gets when `active_cores` share the GM bandwidth."""
        return min(self.raw["mte"]["bytes_per_cycle"], self.raw["gm_bytes_per_cycle"] / active_cores)

    def mte(self, nbytes: int, bursts: int, gm_addr: int, rate: float) -> float:
        """Startup plus bytes over the core's rate; a GM start off the 512 B grid is slower."""
        m = self.raw["mte"]
        if gm_addr % m["burst_align_bytes"]:
            rate *= m["unaligned_factor"]
        return m["startup_cycles"] * max(bursts, 1) + nbytes / rate

    def launch_us(self, cores: int) -> float:
        la = self.raw["launch"]
        return la["base_us"] + la["per_core_us"] * cores


@cache
def cost_table(arch: str) -> CostTable:
    text = resources.files("ixl.ascend").joinpath(f"costs/{arch}.json").read_text()
    return CostTable(arch, json.loads(text))
