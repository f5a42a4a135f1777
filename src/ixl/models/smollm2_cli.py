"""`ixl model smollm2 --prompt TEXT ...`: greedy generation on the simulated chip, the text
streamed as it is produced, then the modeled time to the first token and per output token and
the profile of prefill and decode (thin: parse, run, print)."""

from __future__ import annotations

import argparse
import json
import sys

import numpy as np
from rich.markup import escape

from ..ascend import CHIPS, get_chip
from ..console import out
from ..executor.options import add_sweep_options, refuse_sweep_options
from ..hixl import BadInput, to_numpy
from ..nixl import GraphRecord
from ..profile.stream import replay_counts
from .cli import OpRow, per_op, print_launches, print_table
from .ladder import RUNGS, parse_rungs
from .smollm2 import DTYPES, Generation, SmolLM2
from .text import check_texts

MODEL = "SmolLM2-135M-Instruct"


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Add `smollm2` to the subparsers of `ixl model`."""
    run = sub.add_parser("smollm2", help=f"{MODEL}: greedy text generation, prefill and "
                                         f"decode profiled")
    prompts = run.add_mutually_exclusive_group(required=True)
    prompts.add_argument("--prompt", help="the text to continue")
    prompts.add_argument("--file", metavar="PROMPTS.txt",
                         help="continue every line of a UTF-8 file, as a sweep (--workers, "
                              "--ray, --results, --resume)")
    run.add_argument("--out", dest="out_file", metavar="FILE.jsonl|FILE.json",
                     help="with --file: write each line's generation (tokens, text, ttft_us, "
                          "tpot_us) as JSON lines or one JSON list, in line order")
    run.add_argument("--max-new-tokens", type=int, default=32, metavar="N",
                     help="tokens to generate at most (default 32; generation also stops at "
                          "the end-of-turn token)")
    run.add_argument("--chat", action="store_true",
                     help="send the prompt as a user message through the chat template")
    run.add_argument("--dtype", default="float32", choices=DTYPES,
                     help="weights, activations and the KV cache (float16 and bfloat16 "
                          "accumulate in float32 inside ops)")
    run.add_argument("--chip", default="910B1", help=f"one of {', '.join(CHIPS)} (default 910B1)")
    run.add_argument("--no-fuse", action="store_true",
                     help="run every node as its own kernel (default: fuse elementwise chains)")
    run.add_argument("--rungs", default="all", metavar="LIST",
                     help=f"the decode ladder's rungs to take, separated by commas, all or "
                          f"none (default all: {', '.join(RUNGS)})")
    run.add_argument("--profile", action="store_true",
                     help="also list every run of the first decode step: op, path, time, node")
    run.add_argument("--json", action="store_true", help="print one JSON document instead")
    add_sweep_options(run)
    run.set_defaults(func=cmd_smollm2)


def phase_rows(records: list[GraphRecord]) -> tuple[list[OpRow], float]:
    """Runs by op and path per graph run (the mean over `records`), and the mean time."""
    rows = per_op(records)
    for row in rows:
        row.count //= len(records)
        row.time_us /= len(records)
    return rows, sum(r.time_us for r in rows)


def shim_runs(records: list[GraphRecord]) -> int:
    return sum(1 for record in records for run in record.runs if run.path == "shim")


def native_share(records: list[GraphRecord]) -> float:
    total = sum(r.time_us for r in records)
    native = sum(run.time_us for r in records for run in r.runs if run.path == "native")
    return native / total if total else 0.0


def cache_writes(record: GraphRecord) -> tuple[int, int, int]:
    """The ScatterND runs of one graph run, how many of them were native launches and the
    bytes of updates they wrote."""
    writes = [run for run in record.runs if run.op == "ScatterND"]
    nbytes = 0
    for run in writes:
        assert run.dtype is not None        # a launch records its dtype
        nbytes += int(np.prod(run.shapes[2])) * to_numpy(run.dtype).itemsize
    return len(writes), sum(run.path == "native" for run in writes), nbytes


def phase_json(rows: list[OpRow], total: float, records: list[GraphRecord]) -> dict:
    return {"time_us": total, "native_share": native_share(records),
            "shim_runs": shim_runs(records) // max(len(records), 1),
            "launches": replay_counts(r for g in records for r in g.runs),
            "ops": [{"op": r.op, "path": r.path, "count": r.count, "time_us": r.time_us,
                     "share": r.time_us / total if total else 0.0,
                     "shim_reason": r.why or None} for r in rows]}


def cmd_smollm2(args: argparse.Namespace) -> int:
    get_chip(args.chip)                 # before the weights are read
    args.rungs = parse_rungs(args.rungs)
    if args.max_new_tokens < 1:
        raise BadInput(f"--max-new-tokens {args.max_new_tokens}: give at least 1")
    if args.file:
        if args.profile:
            raise BadInput("--profile lists the runs of one generation: use it with --prompt")
        from .evaluate import cmd_smollm2_file
        return cmd_smollm2_file(args)
    refuse_sweep_options(args, "--file")
    if args.out_file:
        raise BadInput("--out goes with --file (the generations of a prompts file)")
    check_texts([args.prompt], "--prompt")
    model = SmolLM2(args.chip, args.dtype, args.rungs)
    stream = not args.json
    if stream and out.is_terminal:
        out.print(f"[dim]{escape(model.prompt_text(args.prompt, args.chat))}[/]", end="")

    def show(token: int, piece: str) -> None:
        if stream and piece:
            sys.stdout.write(piece)
            sys.stdout.flush()

    result = model.generate(args.prompt, args.max_new_tokens, args.chat, on_token=show,
                            fuse=not args.no_fuse)
    if stream:
        sys.stdout.write("\n")
    prefill, decode = result.records[:1], result.records[1:]
    prefill_rows, prefill_us = phase_rows(prefill)
    decode_rows, decode_us = phase_rows(decode) if decode else ([], 0.0)
    writes, native, written = cache_writes(decode[0] if decode else prefill[0])
    cache = {"tensors": len(model.decoder.cache), "capacity": result.capacity,
             "bytes": model.decoder.cache_bytes(result.capacity),
             "writes_per_step": writes, "native_writes_per_step": native,
             "bytes_written_per_step": written}
    if args.json:
        print(json.dumps({
            "model": MODEL, "chip": args.chip, "dtype": args.dtype, "fuse": not args.no_fuse,
            "rungs": list(args.rungs),
            "prompt": args.prompt, "chat": args.chat, "prompt_tokens": len(result.prompt_ids),
            "tokens": result.tokens, "text": result.text, "stopped": result.stopped,
            "ttft_us": result.ttft_us, "tpot_us": result.tpot_us,
            "native_share": native_share(result.records),
            "shim_runs": shim_runs(result.records), "kv_cache": cache,
            "prefill": phase_json(prefill_rows, prefill_us, prefill),
            "decode": {"steps": len(decode), **phase_json(decode_rows, decode_us, decode)}
            if decode else None}))
        return 0
    print_summary(args, result, cache)
    print_table(prefill_rows, prefill_us, f"prefill: {len(result.prompt_ids)} prompt tokens "
                                          f"in one graph run, {prefill_us:.1f} us")
    if decode:
        print_table(decode_rows, decode_us, f"decode: one step (the mean of {len(decode)}), "
                                            f"{decode_us:.1f} us")
    if args.profile and decode:
        print_launches(decode[0], "every run of the first decode step, in order")
    return 0


def print_summary(args: argparse.Namespace, result: Generation, cache: dict) -> None:
    fused = "not fused" if args.no_fuse else "fused"
    stop = "the end of turn" if result.stopped == "eos" else "the limit"
    out.print(f"{MODEL} on {args.chip}, {args.dtype}, {fused}: {len(result.tokens)} new "
              f"token(s), stopped at {stop}")
    tpot = (f"{result.tpot_us:.1f} us per output token (decode, the mean of "
            f"{len(result.records) - 1} steps)" if result.tpot_us is not None
            else "no decode step (one new token)")
    out.print(f"modeled: {result.ttft_us:.1f} us to the first token (prefill of "
              f"{len(result.prompt_ids)} tokens), {tpot}")
    out.print(f"native share of the modeled time {100 * native_share(result.records):.1f}%, "
              f"{shim_runs(result.records)} run(s) on the shim in all")
    host = cache["writes_per_step"] - cache["native_writes_per_step"]
    route = "native launches" if not host else f"{host} through the host"
    out.print(f"KV cache: {cache['tensors']} tensors of {cache['capacity']} positions, "
              f"{cache['bytes']} bytes allocated once on the device; each step writes its rows "
              f"in place ({cache['writes_per_step']} ScatterND, "
              f"{cache['bytes_written_per_step']} bytes per step, {route}); shim ops that "
              f"read the cache copy it as they copy every operand")
