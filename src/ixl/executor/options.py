"""The command-line flags every sweep takes (`ixl verify`, `ixl model minilm --file`, the ONNX
node-case runner) and the backend they choose."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from ..files import check_output_file
from ..hixl import BadInput
from .backends import Backend, InProcess, ProcessPool, RayCluster, core_count
from .display import ProgressBar
from .sweep import Report, Sweep, run_sweep


def _workers(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive integer")
    return int(text)


def add_sweep_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("running the sweep")
    group.add_argument("--workers", type=_workers, metavar="N",
                       help=f"local worker processes (default: the cores, {core_count()} here, "
                            f"for more than one task; 1 runs in this process)")
    group.add_argument("--ray", metavar="auto|ADDRESS",
                       help="run on a Ray cluster: 'auto' joins the one this machine runs or "
                            "starts one; else its address (needs pip install 'ixl[ray]')")
    group.add_argument("--results", metavar="FILE.jsonl",
                       help="write each task's outcome to this JSON-lines file as it finishes")
    group.add_argument("--resume", action="store_true",
                       help="continue the sweep in --results: run only the tasks it lacks")


def check_sweep_options(args: argparse.Namespace) -> None:
    """The flags together make sense and the results file can be written (before any work)."""
    if args.workers is not None and args.ray is not None:
        raise BadInput("--workers and --ray: choose one (on Ray, the cluster's CPUs are the "
                       "workers)")
    if args.resume and not args.results:
        raise BadInput("--resume needs --results FILE (the file of the sweep to continue)")
    if args.results:
        check_output_file("--results", args.results)


def refuse_sweep_options(args: argparse.Namespace, sweep_flag: str) -> None:
    """A command that runs a sweep only with `sweep_flag` refuses the sweep flags without it."""
    given = [f"--{name}" for name in ("workers", "ray", "results", "resume")
             if getattr(args, name) not in (None, False)]
    if given:
        raise BadInput(f"{', '.join(given)}: {'these go' if len(given) > 1 else 'it goes'} "
                       f"with {sweep_flag} (a sweep)")


def choose_backend(args: argparse.Namespace, tasks: int) -> Backend:
    """Ray when asked; else `--workers` processes (1: this process); by default this process
    for a single task and a pool of one process per core for more."""
    if args.ray is not None:
        return RayCluster(args.ray)
    workers = args.workers if args.workers is not None else core_count() if tasks > 1 else 1
    workers = min(workers, max(tasks, 1))
    return InProcess() if workers == 1 else ProcessPool(workers)


def run_from_args(args: argparse.Namespace, sweep: Sweep, title: str,
                  label: Callable[[Any], str] = lambda task: task.id) -> Report:
    """The sweep on the backend the flags choose, with a progress bar (not with --json)."""
    check_sweep_options(args)
    backend = choose_backend(args, len(sweep.tasks))
    if getattr(args, "json", False):
        return run_sweep(sweep, backend, args.results, args.resume)
    with ProgressBar(title, label) as bar:
        return run_sweep(sweep, backend, args.results, args.resume, bar)
