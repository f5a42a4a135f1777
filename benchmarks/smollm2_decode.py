"""SmolLM2 decode speed: the time of one decoded token in-process, where it goes, and the
ratio to the same step's nodes run as their numpy goldens on the host.

The decode steps are timed in one generation (the mean of `--steps` after the prefill), in
wall time and in this process's CPU time (on a busy machine the two part); the goldens run the
decode graph's nodes in order on the same inputs in the same process (the host work with no
simulator and no device memory: the floor for a simulator that executes every op), and the
ratio compares CPU times. Then a profile of one more step splits it into the simulated
kernels, the shim's host runs, views and the graph's own bookkeeping.

    python benchmarks/smollm2_decode.py [--dtype float32] [--steps 3]
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import time

import numpy as np

from ixl.hixl import get_op, to_numpy
from ixl.models import SmolLM2

PROMPT = "The capital of France is"
PARTS = {"simulated kernels (launch.run_native)": ("launch.py", "run_native"),
         "shim: host goldens and copies (shim.run_shim)": ("shim.py", "run_shim"),
         "cache rows in place, host route (graph.scatter_on_host)": ("graph.py",
                                                                    "scatter_on_host"),
         "views (device._view)": ("device.py", "_view")}


def golden_step(model: SmolLM2, capacity: int, token: int, position: int) -> float:
    """CPU seconds to run the decode graph's nodes as numpy goldens."""
    decoder = model.decoder
    graph = decoder.gear(1, capacity)
    env = {**graph.constants, **{n: decoder.graph.constants[n] for n in decoder.weights}}
    env[graph.inputs[0]] = np.array([[token]], np.int64)
    env[graph.inputs[1]] = np.array([[position]], np.int64)
    for name, _ in decoder.cache:
        env[name] = np.zeros(decoder.cache_shape(name, capacity), to_numpy(decoder.dtype))
    start = time.process_time()
    for node in graph.nodes:
        outputs = get_op(node.op).reference(*(env[n] if n else None for n in node.inputs),
                                            **node.attrs)
        env.update(zip(node.outputs, outputs))
    return time.process_time() - start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dtype", default="float32", choices=("float32", "float16", "bfloat16"))
    ap.add_argument("--steps", type=int, default=3)
    args = ap.parse_args()
    start = time.perf_counter()
    model = SmolLM2(dtype=args.dtype)
    model.decoder
    print(f"load (dequantise, fill, convert, optimise): {time.perf_counter() - start:.1f} s")
    stamps, profile = [], cProfile.Profile()

    def on_token(token: int, piece: str) -> None:
        stamps.append((time.perf_counter(), time.process_time()))
        if len(stamps) == args.steps + 1:          # then one more step, profiled
            profile.enable()
        elif len(stamps) == args.steps + 2:
            profile.disable()
    start = time.perf_counter()
    result = model.generate(PROMPT, args.steps + 2, on_token=on_token)
    prefill = stamps[0][0] - start
    wall, cpu = ((stamps[args.steps][k] - stamps[0][k]) / args.steps for k in (0, 1))
    golden = golden_step(model, result.capacity, result.tokens[0], len(result.prompt_ids))
    print(f"prefill ({len(result.prompt_ids)} tokens): {prefill:.2f} s; decode: {wall:.2f} s "
          f"wall, {cpu:.2f} s CPU per token (mean of {args.steps}); the same step as numpy "
          f"goldens: {golden:.2f} s CPU; ratio {cpu / golden:.1f}x")
    stats = pstats.Stats(profile).stats
    total = sum(tottime for (_cc, _nc, tottime, _ct, _callers) in stats.values())
    print(f"one decode step under cProfile: {total:.2f} s")
    accounted = 0.0
    for label, (file, func) in PARTS.items():
        seconds = sum(ct for (path, _line, name), (_cc, _nc, _tt, ct, _c) in stats.items()
                      if path.endswith(file) and name == func)
        accounted += seconds
        print(f"  {label}: {seconds:.2f} s ({100 * seconds / total:.0f}%)")
    print(f"  graph bookkeeping and the rest: {total - accounted:.2f} s "
          f"({100 * (total - accounted) / total:.0f}%)")


if __name__ == "__main__":
    main()
