"""Model evaluation over a file, one task per line, on every core by default or on a Ray
cluster: `ixl model minilm --file sentences.txt --out e.npy` embeds each sentence (the per-op
profile summed over all of them); `ixl model smollm2 --file prompts.txt --out g.jsonl`
continues each prompt.

Each worker loads the model once (weights, tokenizer, the graphs of the sequence lengths it
meets) and keeps it; a task carries only its line's text. The results come back in the tasks'
outcomes and are written in line order once every line is done.
"""

from __future__ import annotations

import argparse
import hashlib
import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, cast

import numpy as np

from ..console import out
from ..executor import Sweep, worker_local
from ..executor.display import print_summary
from ..executor.options import run_from_args
from ..files import check_output_file, save_npy, save_text
from ..hixl import BadInput
from .cli import OpRow, per_op, print_table
from .ladder import EVERY
from .minilm import MiniLM
from .smollm2 import SmolLM2


@dataclass(frozen=True)
class FileLine:
    """Work on line `line` of a file (its `text`) with a model on `chip` in `dtype`."""

    chip: str
    dtype: str
    fuse: bool
    line: int
    text: str

    @property
    def id(self) -> str:
        return f"line {self.line}"


def file_lines(sweep: Sweep) -> list[FileLine]:
    """The tasks of a sweep over a file's lines (embed_sweep's and generate_sweep's)."""
    return cast("list[FileLine]", list(sweep.tasks))


@dataclass(frozen=True)
class EmbedText(FileLine):
    """MiniLM's embedding of the line."""

    def run(self) -> tuple[bool, dict]:
        model = worker_local(("minilm", self.chip, self.dtype),
                             lambda: MiniLM(self.chip, self.dtype))
        vector, encoded, record = model.embed_one(self.text, self.fuse)
        return True, {"vector": vector.tolist(), "tokens": encoded.tokens,
                      "length": encoded.length, "time_us": record.time_us,
                      "ops": [asdict(row) for row in per_op([record])]}


@dataclass(frozen=True)
class ContinuePrompt(FileLine):
    """SmolLM2's greedy continuation of the line, at most `max_new_tokens` tokens (`chat`:
    the line sent as a user message through the chat template)."""

    chat: bool = False
    max_new_tokens: int = 32
    rungs: tuple[str, ...] = EVERY           # the decode ladder's rungs taken

    def run(self) -> tuple[bool, dict]:
        model = worker_local(("smollm2", self.chip, self.dtype, self.rungs),
                             lambda: SmolLM2(self.chip, self.dtype, self.rungs))
        result = model.generate(self.text, self.max_new_tokens, self.chat, fuse=self.fuse)
        return True, {"prompt_tokens": len(result.prompt_ids), "tokens": result.tokens,
                      "text": result.text, "stopped": result.stopped,
                      "ttft_us": result.ttft_us, "tpot_us": result.tpot_us}


def read_sentences(path: str, what: str = "sentence") -> list[str]:
    """The file's lines (UTF-8, one `what` each; a final newline ends the last line)."""
    p = Path(path)
    if not p.is_file():
        raise BadInput(f"--file {path}: no such file")
    try:
        data = p.read_bytes()
    except OSError as e:
        raise BadInput(f"--file {path}: cannot read it ({e.strerror})") from None
    lines = data.split(b"\n")
    if lines[-1] == b"":
        lines.pop()
    texts = []
    for number, raw in enumerate(lines, 1):
        try:
            text = raw.decode("utf-8").removesuffix("\r")
        except UnicodeDecodeError as e:
            raise BadInput(f"--file {path}: line {number} is not valid UTF-8 (byte(s) "
                           f"{raw[e.start:e.end].hex(' ')} at byte {e.start}); give the file "
                           f"in UTF-8") from None
        if not text.strip():
            raise BadInput(f"--file {path}: line {number} is empty; give one {what} per line")
        texts.append(text)
    if not texts:
        raise BadInput(f"--file {path}: the file is empty; give one {what} per line")
    return texts


def file_params(path: str, texts: list[str]) -> dict:
    """What names a file's sweep in its results file: the path and a digest of its lines."""
    digest = hashlib.sha256("\n".join(texts).encode()).hexdigest()[:16]
    return {"file": str(Path(path).absolute()), "sha256": digest}


def embed_sweep(path: str, chip: str, dtype: str, fuse: bool) -> Sweep:
    texts = read_sentences(path)
    return Sweep("minilm embeddings",
                 {**file_params(path, texts), "chip": chip, "dtype": dtype, "fuse": fuse},
                 [EmbedText(chip, dtype, fuse, n, text) for n, text in enumerate(texts, 1)])


def generate_sweep(path: str, chip: str, dtype: str, fuse: bool, chat: bool,
                   max_new_tokens: int, rungs: tuple[str, ...] = EVERY) -> Sweep:
    texts = read_sentences(path, "prompt")
    return Sweep("smollm2 generations",
                 {**file_params(path, texts), "chip": chip, "dtype": dtype, "fuse": fuse,
                  "chat": chat, "max_new_tokens": max_new_tokens, "rungs": list(rungs)},
                 [ContinuePrompt(chip, dtype, fuse, n, text, chat, max_new_tokens, rungs)
                  for n, text in enumerate(texts, 1)])


def summed(rows: list[dict]) -> list[OpRow]:
    """Per-op rows of every text added up by op type and path, slowest first."""
    total: dict[tuple[str, str], OpRow] = {}
    for row in rows:
        into = total.setdefault((row["op"], row["path"]), OpRow(row["op"], row["path"]))
        into.count += row["count"]
        into.time_us += row["time_us"]
        into.why = into.why or row["why"]
    return sorted(total.values(), key=lambda r: -r.time_us)


def cmd_minilm_file(args: argparse.Namespace) -> int:
    if args.profile:
        raise BadInput("--profile lists the launches of one run: use it with --text")
    fuse = not args.no_fuse
    sweep = embed_sweep(args.file, args.chip, args.dtype, fuse)
    report = run_from_args(args, sweep, "embedding")
    done = [o for o in report.outcomes if o.ok]
    rows = summed([row for o in done for row in o.found["ops"]])
    total = sum(o.found["time_us"] for o in done)
    written = None
    if args.out and report.all_ok:
        written = save_npy(args.out, np.array([o.found["vector"] for o in report.outcomes],
                                              np.float32))
    errors = [{"line": task.line, "error": o.error_line()}
              for task in file_lines(sweep) if not (o := report.by_id[task.id]).ok]
    if args.json:
        print(json.dumps({
            "model": "all-MiniLM-L6-v2", "chip": args.chip, "dtype": args.dtype, "fuse": fuse,
            "file": args.file, "texts": len(sweep.tasks), "embedded": len(done),
            "ops": [{"op": r.op, "path": r.path, "count": r.count, "time_us": r.time_us,
                     "share": r.time_us / total, "shim_reason": r.why or None} for r in rows],
            "total_us": {"fused" if fuse else "unfused": total},
            "out": written, "errors": errors}))
        return 0 if report.all_ok else 1
    if rows:
        print_table(rows, total, f"all-MiniLM-L6-v2 on {args.chip}, {args.dtype}, {len(done)} "
                                 f"text(s) of {args.file}, {'fused' if fuse else 'not fused'}")
        out.print(f"modeled latency: {total:.1f} us {'fused' if fuse else 'without fusion'} "
                  f"({len(done)} text(s), batch 1)")
    if written:
        out.print(f"wrote {written}: ({len(done)}, 384) float32, one row per line, in order")
    elif args.out:
        out.print(f"{args.out}: not written ({len(errors)} line(s) failed)")
    print_summary(report)
    return 0 if report.all_ok else 1


GENERATION_FORMATS = (".jsonl", ".json")


def cmd_smollm2_file(args: argparse.Namespace) -> int:
    """Every prompt of the file continued; with --out, one record per line of the file (its
    line number, prompt, tokens, text, modeled ttft_us and tpot_us) as JSON lines or one JSON
    list, written once every line is done."""
    if args.out_file:
        if not args.out_file.endswith(GENERATION_FORMATS):
            raise BadInput(f"--out {args.out_file}: give a .jsonl (one generation per line) "
                           f"or .json (one list) file")
        check_output_file("--out", args.out_file)
    sweep = generate_sweep(args.file, args.chip, args.dtype, not args.no_fuse, args.chat,
                           args.max_new_tokens, args.rungs)
    report = run_from_args(args, sweep, "generating")
    rows: list[dict[str, Any]] = [
        {"line": task.line, "prompt": task.text, **o.found} if o.ok else
        {"line": task.line, "prompt": task.text, "error": o.error_line()}
        for task in file_lines(sweep) if (o := report.by_id.get(task.id)) is not None]
    written = None
    if args.out_file and report.all_ok:
        text = "".join(json.dumps(r) + "\n" for r in rows) \
            if args.out_file.endswith(".jsonl") else json.dumps(rows) + "\n"
        written = save_text(args.out_file, text)
    if args.json:
        print(json.dumps({"model": "SmolLM2-135M-Instruct", "chip": args.chip,
                          "dtype": args.dtype, "fuse": not args.no_fuse, "chat": args.chat,
                          "file": args.file, "prompts": len(sweep.tasks), "generations": rows,
                          "out": written}))
        return 0 if report.all_ok else 1
    for row in rows:
        if "error" in row:
            continue
        tpot = "-" if row["tpot_us"] is None else f"{row['tpot_us']:.1f}"
        out.print(f"line {row['line']}: {len(row['tokens'])} token(s), ttft "
                  f"{row['ttft_us']:.1f} us, tpot {tpot} us: {json.dumps(row['text'])}",
                  markup=False)
    if written:
        out.print(f"wrote {written}: {len(rows)} generation(s), one per line, in order")
    elif args.out_file:
        out.print(f"{args.out_file}: not written ({len(sweep.tasks) - report.count('ok')} "
                  f"line(s) failed or did not run)")
    print_summary(report)
    return 0 if report.all_ok else 1
