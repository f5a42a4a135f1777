"""`ixl model minilm --text TEXT ...`: sentence embeddings on the simulated chip, with the
profile per op type (thin: parse, run, print)."""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass

import numpy as np
from rich.table import Table

from ..ascend import CHIPS
from ..console import out
from ..executor.options import add_sweep_options, refuse_sweep_options
from ..files import save_npy
from ..nixl import GraphRecord
from ..profile.stream import replay_counts
from .minilm import DTYPES, MiniLM
from .text import check_texts


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """Add `model minilm` and `model smollm2` to the `ixl` command's subparsers."""
    parser = subparsers.add_parser("model", help="run a real model on the simulated chip")
    sub = parser.add_subparsers(dest="model_command", required=True)
    run = sub.add_parser("minilm", help="all-MiniLM-L6-v2 sentence embeddings (n, 384)")
    texts = run.add_mutually_exclusive_group(required=True)
    texts.add_argument("--text", action="append",
                       help="a sentence to embed; once per sentence")
    texts.add_argument("--file", metavar="SENTENCES.txt",
                       help="embed every line of a UTF-8 file, as a sweep (--workers, --ray, "
                            "--results, --resume)")
    run.add_argument("--out", metavar="FILE.npy", help="write the embeddings (n, 384) float32 "
                     "(.npy is appended to a name without it, and the written path reported)")
    run.add_argument("--chip", default="910B1", help=f"one of {', '.join(CHIPS)} (default 910B1)")
    run.add_argument("--no-fuse", action="store_true",
                     help="run every node as its own kernel (default: fuse elementwise chains)")
    run.add_argument("--dtype", default="float32", choices=DTYPES,
                     help="weights and activations (float16 accumulates in float32 inside ops)")
    run.add_argument("--profile", action="store_true",
                     help="also list every launch of the first text: nodes, path, time")
    run.add_argument("--compare-unfused", action="store_true",
                     help="also time the texts the other way (without fusion, or with it under "
                          "--no-fuse): one more timing-only pass")
    run.add_argument("--json", action="store_true", help="print one JSON document instead")
    add_sweep_options(run)
    run.set_defaults(func=cmd_minilm)
    from .smollm2_cli import add_parser as add_smollm2  # it builds on this module's tables
    add_smollm2(sub)


@dataclass
class OpRow:
    op: str
    path: str
    count: int = 0
    time_us: float = 0.0
    why: str = ""                    # why the shim ran


def per_op(records: list[GraphRecord]) -> list[OpRow]:
    """Runs grouped by op type and path (a fused kernel is its own type), slowest first."""
    rows: dict[tuple[str, str], OpRow] = {}
    for record in records:
        for run in record.runs:
            row = rows.setdefault((run.op, run.path), OpRow(run.op, run.path))
            row.count += 1
            row.time_us += run.time_us
            if run.path == "shim":
                row.why = row.why or run.reason or ""
    return sorted(rows.values(), key=lambda r: -r.time_us)


def cmd_minilm(args: argparse.Namespace) -> int:
    if args.file:
        from .evaluate import cmd_minilm_file
        return cmd_minilm_file(args)
    refuse_sweep_options(args, "--file")
    check_texts(args.text)
    model = MiniLM(args.chip, args.dtype)
    fuse = not args.no_fuse
    result = model.embed(args.text, fuse=fuse)
    written = save_npy(args.out, result.vectors) if args.out else None
    total = sum(r.time_us for r in result.records)
    other = model.modeled_us(result.encoded, not fuse) if args.compare_unfused else None
    fused, unfused = (total, other) if fuse else (other, total)
    rows = per_op(result.records)
    if args.json:
        print(json.dumps({
            "model": "all-MiniLM-L6-v2", "chip": args.chip, "dtype": args.dtype, "fuse": fuse,
            "texts": [{"text": t, "tokens": e.tokens, "length": e.length}
                      for t, e in zip(args.text, result.encoded)],
            "ops": [{"op": r.op, "path": r.path, "count": r.count, "time_us": r.time_us,
                     "share": r.time_us / total, "shim_reason": r.why or None} for r in rows],
            "total_us": {"fused": fused, "unfused": unfused},
            "launches": replay_counts(r for g in result.records for r in g.runs),
            "out": written, "embeddings": result.vectors.tolist()}))
        return 0
    for text, enc, vector in zip(args.text, result.encoded, result.vectors):
        out.print(f"{enc.tokens:4d} tokens (padded to {enc.length}) {text!r}: "
                  f"{np.array2string(vector[:6], precision=4)} ...")
    if written:
        out.print(f"wrote {written}: {result.vectors.shape} float32")
    print_table(rows, total, f"all-MiniLM-L6-v2 on {args.chip}, {args.dtype}, "
                             f"{len(args.text)} text(s), {'fused' if fuse else 'not fused'}")
    shims = sum(r.count for r in rows if r.path == "shim")
    timed = [f"{t:.1f} us {how}" for t, how in ((fused, "fused"), (unfused, "without fusion"))
             if t is not None]
    out.print(f"modeled latency: {', '.join(timed)} ({len(args.text)} text(s), batch 1); "
              f"{shims} run(s) on the shim")
    if args.profile:
        print_launches(result.records[0])
    return 0


def print_table(rows: list[OpRow], total: float, title: str) -> None:
    table = Table(title=title)
    table.add_column("op", no_wrap=True)
    table.add_column("path")
    for col in ("count", "modeled us", "share"):
        table.add_column(col, justify="right")
    table.add_column("why the shim")
    for r in rows:
        path = {"native": "[green]native[/]", "view": "[green]view[/]"}.get(r.path,
                                                                       "[yellow]shim[/]")
        table.add_row(r.op, path, str(r.count), f"{r.time_us:.1f}",
                      f"{100 * r.time_us / total:.1f}%", r.why)
    out.print(table)


def print_launches(record: GraphRecord, title: str = "every run of the first text, in order"
                   ) -> None:
    table = Table(title=title)
    for col in ("#", "op", "path", "modeled us", "graph node (+ the others fused in)"):
        table.add_column(col, overflow="fold")
    for i, run in enumerate(record.runs):
        more = f" (+{len(run.nodes) - 1})" if len(run.nodes) > 1 else ""
        table.add_row(str(i), run.op, run.path, f"{run.time_us:.2f}", run.nodes[0] + more)
    out.print(table)
