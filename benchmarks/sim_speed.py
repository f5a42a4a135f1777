"""Simulator speed: Add on 16M float16 elements (release mode) vs numpy's `a + b`.

Both are timed in this one run, best of several repeats, and reported as a ratio (wall-clock
on a shared machine is noisy; the ratio is what to compare). Then a profile of one simulated
run shows where the simulator spends its time.

    python benchmarks/sim_speed.py [--elements N] [--repeats R]
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import time
from collections import defaultdict

import numpy as np

import ixl


def best_of(fn, repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def where_time_goes(fn) -> list[tuple[str, float]]:
    """cProfile sees only its own thread, so this one run simulates the cores on one thread."""
    os.environ["IXL_THREADS"] = "1"
    prof = cProfile.Profile()
    prof.enable()
    fn()
    prof.disable()
    del os.environ["IXL_THREADS"]
    stats = pstats.Stats(prof)
    by_module: dict[str, float] = defaultdict(float)
    for (path, _line, func), (_cc, _nc, tottime, _ct, _callers) in stats.stats.items():
        if "ixl" in path:
            key = "ixl/" + path.split("/ixl/")[-1]
        elif path == "~":
            key = f"builtin: {func}"
        else:
            key = path.rsplit("/", 1)[-1]
        by_module[key] += tottime
    total = sum(by_module.values())
    return [(k, v / total) for k, v in sorted(by_module.items(), key=lambda kv: -kv[1])[:12]]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--elements", type=int, default=16 * 1024 * 1024)
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    a = rng.standard_normal(args.elements, dtype=np.float32).astype(np.float16)
    b = rng.standard_normal(args.elements, dtype=np.float32).astype(np.float16)
    dev = ixl.device("910B1", debug=False)
    ta, tb = dev.tensor(a), dev.tensor(b)

    def simulated():
        dev.run("Add", ta, tb).free()

    simulated()                     # warm up: maps the output's GM once, then it is cached
    t_np = best_of(lambda: a + b, args.repeats)
    t_sim = best_of(simulated, args.repeats)
    out = dev.run("Add", ta, tb)
    assert np.array_equal(out.numpy(), a + b), "the simulated Add disagrees with numpy"
    out.free()
    print(f"Add, {args.elements} float16 elements, release mode, best of {args.repeats}")
    print(f"  numpy a + b : {t_np * 1e3:8.1f} ms")
    print(f"  simulator   : {t_sim * 1e3:8.1f} ms  (modeled on the chip: "
          f"{dev.last_profile.time_us:.1f} us)")
    print(f"  ratio       : {t_sim / t_np:.2f}x numpy (goal: at most 2.0x)")
    print("where the simulator spends its time (one host thread, share of profiled time):")
    for name, share in where_time_goes(simulated):
        print(f"  {share:6.1%}  {name}")
    ta.free()
    tb.free()
    dev.close()


if __name__ == "__main__":
    main()
