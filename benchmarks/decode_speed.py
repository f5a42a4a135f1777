"""SmolLM2 decode speed before and after a change: the wall and CPU time of one decoded token
in-process, this tree against a git revision (default `main`), side by side in one run.

The revision's `src` is exported (`git archive`) to a temporary directory; each side runs in a
fresh subprocess (its own imports, no shared caches), the two alternating `--rounds` times, and
each generation's decode steps after the prefill are timed (wall: perf_counter; CPU:
process_time, which a busy machine inflates less). The sides must produce the same tokens and
the same modeled time per token (both run with one hash seed), else the script says so and
exits 1. Then it prints the best of the rounds per side, the ratio and the top functions of
one profiled decode step of this tree.

    python benchmarks/decode_speed.py [--base main] [--steps 2] [--rounds 2] [--top 15]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROMPT = "The capital of France is"

# Run by each side in its own interpreter: prefill, then `steps` timed decode steps (and one
# more under cProfile when a profile path is given).
CHILD = r"""
import cProfile, json, pstats, sys, time
from ixl.models import SmolLM2
steps, prompt, profile_to = int(sys.argv[1]), sys.argv[2], sys.argv[3]
model = SmolLM2(dtype="float32")
model.decoder
stamps, prof = [], cProfile.Profile()
def on_token(token, piece):
    stamps.append((time.perf_counter(), time.process_time()))
    if profile_to and len(stamps) == steps + 1:
        prof.enable()
    elif profile_to and len(stamps) == steps + 2:
        prof.disable()
result = model.generate(prompt, steps + 1 + bool(profile_to), on_token=on_token)
if profile_to:
    prof.dump_stats(profile_to)
wall, cpu = ((stamps[steps][k] - stamps[0][k]) / steps for k in (0, 1))
print(json.dumps({"wall": wall, "cpu": cpu, "tokens": result.tokens[:steps + 1],
                  "tpot_us": [r.time_us for r in result.records[1:steps + 1]]}))
"""


def run_side(src: Path, steps: int, profile_to: str = "") -> dict:
    # One hash seed for both sides: the modeled time's last digits move with the seed
    # (about 1e-4 us per token; the order of some float sums follows set order).
    env = {**os.environ, "PYTHONPATH": str(src), "PYTHONHASHSEED": "0"}
    out = subprocess.run([sys.executable, "-c", CHILD, str(steps), PROMPT, profile_to],
                         env=env, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def export(rev: str, into: Path) -> Path:
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev, "src"], check=True,
                             capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into / "src"


def top_functions(path: str, count: int) -> list[str]:
    """The functions with the most time of their own in the profiled step, with their
    cumulative time."""
    import pstats
    stats = pstats.Stats(path).stats
    total = sum(tt for (_cc, _nc, tt, _ct, _callers) in stats.values())
    rows = sorted(stats.items(), key=lambda kv: -kv[1][2])[:count]
    lines = [f"one decode step under cProfile: {total:.2f} s; top functions by own time:"]
    for (file, line, name), (_cc, calls, tt, ct, _callers) in rows:
        where = f"{Path(file).name}:{line}" if line else file
        lines.append(f"  {tt:6.2f} s own {ct:6.2f} s cum {calls:8d} calls  {name} ({where})")
    return lines


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", default="main", help="the git revision to compare against")
    ap.add_argument("--steps", type=int, default=2, help="timed decode steps per generation")
    ap.add_argument("--rounds", type=int, default=2, help="generations per side (best kept)")
    ap.add_argument("--top", type=int, default=15, help="functions listed from the profile")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        base_src, this_src = export(args.base, Path(tmp)), ROOT / "src"
        sides: dict[str, list[dict]] = {args.base: [], "this tree": []}
        for _ in range(args.rounds):
            sides[args.base].append(run_side(base_src, args.steps))
            sides["this tree"].append(run_side(this_src, args.steps))
        profile = str(Path(tmp) / "step.prof")
        run_side(this_src, args.steps, profile)
        (base, *_), (this, *_) = sides.values()
        same = base["tokens"] == this["tokens"] and base["tpot_us"] == this["tpot_us"]
        print(f"SmolLM2-135M float32 decode, '{PROMPT}', {args.steps} steps per generation, "
              f"best of {args.rounds}:")
        best = {}
        for name, runs in sides.items():
            best[name] = {k: min(r[k] for r in runs) for k in ("wall", "cpu")}
            print(f"  {name:>10}: {best[name]['wall']:.2f} s wall, {best[name]['cpu']:.2f} s CPU "
                  f"per token; modeled {runs[0]['tpot_us'][0]:.1f} us per token")
        b, t = best[args.base], best["this tree"]
        print(f"  ratio ({args.base} / this tree): {b['wall'] / t['wall']:.2f}x wall, "
              f"{b['cpu'] / t['cpu']:.2f}x CPU")
        print(f"  tokens and modeled times equal: {same}")
        print("\n".join(top_functions(profile, args.top)))
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
