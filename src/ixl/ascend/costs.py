"""The cost table: cycles per instruction, read from one data file per architecture.

Kernel code never holds a cost; the chip spec names the table (`costs/<arch>.json`).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

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
class GmRates:
    """Bytes per cycle of one core's GM moves: served by L2 (its port at the L2's rate, capped
    by the core's share of L2 bandwidth), served by HBM (its port), and the core's share of
    the chip's HBM bandwidth."""

    hit: float
    miss: float
    hbm: float


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

    def provenance(self) -> dict[str, str]:
        """Cost (a path in the table) -> what its value rests on: "published [tag]" (the
        vendor's documents), "fitted" (to the 910B1 measurements, benchmarks/fit_costs.py) or
        "assumed [U]", with the reason."""
        return self.raw["provenance"]

    def gm_rates(self, active_cores: int) -> GmRates:
        """What one core's moves get when `active_cores` share the chip (l2.py)."""
        n = max(active_cores, 1)
        port = self.raw["mte"]["port_bytes_per_cycle"]
        l2 = self.raw["l2"]
        return GmRates(hit=min(port * l2["port_ratio"], l2["bytes_per_cycle"] / n), miss=port,
                       hbm=self.raw["gm_bytes_per_cycle"] / n)

    def gm_cycles(self, l2_bytes: int, hbm_bytes: int, writeback: int, bursts: int,
                  aligned: bool, rates: GmRates) -> tuple[float, float]:
        """(port cycles, HBM cycles) of one GM move: its bytes through the core's port (what L2
        serves or absorbs at the L2 rate, what HBM serves at the port's) plus a cost per
        burst; its HBM bytes and the dirty lines it evicts through the core's share of the
        chip's HBM bandwidth. Every rate is lower when the bursts start off the 512-byte
        grid (write-backs are whole lines)."""
        m = self.raw["mte"]
        f = 1.0 if aligned else m["unaligned_factor"]
        port = (l2_bytes / rates.hit + hbm_bytes / rates.miss) / f + m["burst_cycles"] * bursts
        return port, hbm_bytes / (rates.hbm * f) + writeback / rates.hbm

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

    def _cost(self, value: float | str) -> float:
        """A value, or the path of the value it is taken equal to (an assumed cost that follows
        a fitted one: the Mmad head is "vector.startup_cycles")."""
        if isinstance(value, str):
            node: Any = self.raw
            for key in value.split("."):
                node = node[key]
            return float(node)
        return value

    # ---- the Cube core [CUBEPERF] ----
    @property
    def mmad_head_cycles(self) -> float:
        return self._cost(self.raw["cube"]["mmad"]["head_cycles"])

    @property
    def mte1_head_cycles(self) -> float:
        return self._cost(self.raw["cube"]["mte1"]["head_cycles"])

    def mmad_k0(self, kind: str) -> int:
        """K elements per Cube cycle: `kind` is the input dtype name, or "hf32"."""
        return self.raw["cube"]["mmad"]["k0"][kind]

    def mmad(self, m: int, n: int, k: int, k0: int, fractal: int = 16) -> tuple[float, int]:
        """(cycles, ideal cycles) of one Mmad: head + ceil(m/16) ceil(n/16) ceil(k/k0); the
        ideal part is the Cube at its peak rate."""
        ideal = ceil_div(m, fractal) * ceil_div(n, fractal) * ceil_div(k, k0)
        return self.mmad_head_cycles + ideal, ideal

    def mte1(self, nbytes: int, dst: str) -> float:
        """An MTE1 move into `dst` (L0A, L0B, L1 or BT): head + bytes at its rate."""
        return self.mte1_head_cycles + nbytes / self.raw["cube"]["mte1"]["bytes_per_cycle"][dst]

    @property
    def fixpipe_head_cycles(self) -> float:
        return self._cost(self.raw["cube"]["fixpipe"]["head_cycles"])

    def fixpipe_local(self, nbytes: int, dst: str) -> float:
        """A Fixpipe write into L1 (or an L1 -> Fixpipe buffer copy): head + bytes at its rate
        (into GM it is a move through the core's GM port instead)."""
        return (self.fixpipe_head_cycles
                + nbytes / self.raw["cube"]["fixpipe"]["bytes_per_cycle"][dst])


PROVENANCE = ("published", "fitted", "assumed")     # what a cost's value rests on


def _merge(base: dict, over: dict) -> dict:
    out = dict(base)
    for key, value in over.items():
        out[key] = _merge(base[key], value) \
            if isinstance(value, dict) and isinstance(base.get(key), dict) else value
    return out


@cache
def cost_table(arch: str) -> CostTable:
    """The table of `arch`. A table that `inherits` another holds only what is known of its
    own chip; every other cost is the parent's, carried over, and its provenance says so."""
    raw = json.loads(resources.files("ixl.ascend").joinpath(f"costs/{arch}.json").read_text())
    parent = raw.get("inherits")
    if parent:
        base = cost_table(parent).raw
        own = raw.get("provenance", {})
        carried = {k: f"assumed [U]: carried over from {parent} ({v})"
                   for k, v in base["provenance"].items() if k not in own}
        raw = _merge({k: v for k, v in base.items() if k not in ("sources", "provenance")},
                     raw)
        raw["provenance"] = {**carried, **own}
    return CostTable(arch, raw)
