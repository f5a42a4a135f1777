"""Sweep speed-up: `ixl verify --workers 2` against `--workers 1`, side by side in one run.

Each variant runs the whole command (start-up, every sample case of every op in debug mode,
the JSON output) as its own process, alternating, `--repeats` times; the best time of each
is kept (wall-clock on a shared machine is noisy; the ratio is what to compare). The machine's
load average, each run's CPU seconds and the cores other processes kept busy during it are
printed with the result: other work on the same cores takes from the speed-up, so read the
ratio together with them. Both variants must print
the same JSON.

    python benchmarks/sweep_speed.py [--workers 2] [--repeats 2] [--op Add]
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import time


def cpu_seconds() -> float:
    """CPU time of every finished child process, their own workers included."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def busy_seconds() -> float:
    """CPU time the whole machine has spent busy (all processes, all cores), from /proc/stat."""
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:]]
    idle = fields[3] + fields[4]                   # idle, iowait
    return (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")


def timed(argv: list[str]) -> tuple[float, float, float, str]:
    """Wall and CPU seconds of one command, the cores other processes kept busy meanwhile
    (on average), and what it printed."""
    start, cpu, busy = time.perf_counter(), cpu_seconds(), busy_seconds()
    done = subprocess.run([sys.executable, "-m", "ixl.cli", *argv], capture_output=True,
                          text=True)
    seconds = time.perf_counter() - start
    if done.returncode not in (0, 1):          # 1: a case failed, which is still a result
        raise SystemExit(f"ixl {' '.join(argv)} failed: {done.stderr.strip()}")
    ours = cpu_seconds() - cpu
    others = max(0.0, busy_seconds() - busy - ours) / seconds
    return seconds, ours, others, done.stdout


def load() -> str:
    return ", ".join(f"{x:.2f}" for x in os.getloadavg())


def autogroup() -> bool:
    """Linux's autogroup scheduling: each session gets an equal share of the CPU, however many
    processes it runs, so while another session keeps a core busy more workers gain nothing."""
    try:
        with open("/proc/sys/kernel/sched_autogroup_enabled") as f:
            return f.read().strip() == "1"
    except OSError:
        return False


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--repeats", type=int, default=2)
    p.add_argument("--op", help="only this op (a quick check; the goal is for every op)")
    args = p.parse_args()
    base = ["verify", "--json", *(["--op", args.op] if args.op else [])]
    variants = {1: [*base, "--workers", "1"], args.workers: [*base, "--workers",
                                                             str(args.workers)]}
    print(f"cores: {len(os.sched_getaffinity(0))}; load average (1, 5, 15 min) before: {load()}")
    if autogroup():
        print("autogroup scheduling is on: with other sessions busy, this one gets its share "
              "of the CPU whatever the worker count; measure on an otherwise idle machine")
    best = {n: float("inf") for n in variants}
    outputs = {}
    for repeat in range(args.repeats):
        for n, argv in variants.items():
            seconds, cpu, others, outputs[n] = timed(argv)
            best[n] = min(best[n], seconds)
            print(f"  run {repeat + 1}: --workers {n}: {seconds:.1f} s, {cpu:.1f} CPU s; other "
                  f"processes kept {others:.2f} cores busy meanwhile (load {load()})", flush=True)
    same = len(set(outputs.values())) == 1
    ratio = best[1] / best[args.workers]
    print(f"load average after: {load()}")
    print(f"best --workers 1: {best[1]:.1f} s, --workers {args.workers}: "
          f"{best[args.workers]:.1f} s; speed-up {ratio:.2f}x (goal 1.7x on 2 cores); "
          f"same JSON output: {same}")
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
