"""`ixl model minilm --file sentences.txt --out e.npy`: a file of sentences (one per line)
embedded as a sweep, one task per line, on every core by default or on a Ray cluster, with
the per-op profile summed over all of them.

Each worker loads the model once (weights, tokenizer, the graphs of the sequence lengths it
meets) and keeps it; a task carries only its line's text. The embeddings come back in the
task's results and are written in line order once every line is done.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from ..console import out
from ..executor import Sweep, worker_local
from ..executor.display import print_summary
from ..executor.options import run_from_args
from ..files import save_npy
from ..hixl import BadInput
from .cli import OpRow, per_op, print_table
from .minilm import MiniLM


@dataclass(frozen=True)
class EmbedText:
    """The embedding of line `line` of the file (its `text`) on `chip` in `dtype`."""

    chip: str
    dtype: str
    fuse: bool
    line: int
    text: str

    @property
    def id(self) -> str:
        return f"line {self.line}"

    def run(self) -> tuple[bool, dict]:
        model = worker_local(("minilm", self.chip, self.dtype),
                             lambda: MiniLM(self.chip, self.dtype))
        vector, encoded, record = model.embed_one(self.text, self.fuse)
        return True, {"vector": vector.tolist(), "tokens": encoded.tokens,
                      "length": encoded.length, "time_us": record.time_us,
                      "ops": [asdict(row) for row in per_op([record])]}


def read_sentences(path: str) -> list[str]:
    """The file's lines (UTF-8, one sentence each; a final newline ends the last line)."""
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
            raise BadInput(f"--file {path}: line {number} is empty; give one sentence per "
                           f"line")
        texts.append(text)
    if not texts:
        raise BadInput(f"--file {path}: the file is empty; give one sentence per line")
    return texts


def embed_sweep(path: str, chip: str, dtype: str, fuse: bool) -> Sweep:
    texts = read_sentences(path)
    digest = hashlib.sha256("\n".join(texts).encode()).hexdigest()[:16]
    return Sweep("minilm embeddings",
                 {"file": str(Path(path).absolute()), "sha256": digest, "chip": chip,
                  "dtype": dtype, "fuse": fuse},
                 [EmbedText(chip, dtype, fuse, n, text) for n, text in enumerate(texts, 1)])


def summed(rows: list[dict]) -> list[OpRow]:
    """Per-op rows of every text added up by op type and path, slowest first."""
    total: dict[tuple[str, str], OpRow] = {}
    for row in rows:
        into = total.setdefault((row["op"], row["path"]), OpRow(row["op"], row["path"]))
        into.count += row["count"]
        into.time_us += row["time_us"]
        into.why = into.why or row["why"]
    return sorted(total.values(), key=lambda r: -r.time_us)


def cmd_minilm_file(args) -> int:
    if args.profile:
        raise BadInput("--profile lists the launches of one run: use it with --text")
    fuse = not args.no_fuse
    sweep = embed_sweep(args.file, args.chip, args.dtype, fuse)
    report = run_from_args(args, sweep, "embedding")
    done = [o for o in report.outcomes if o.ok]
    rows = summed([row for o in done for row in o.result["ops"]])
    total = sum(o.result["time_us"] for o in done)
    written = None
    if args.out and report.all_ok:
        written = save_npy(args.out, np.array([o.result["vector"] for o in report.outcomes],
                                              np.float32))
    errors = [{"line": task.line, "error": o.error_line()}
              for task in sweep.tasks if not (o := report.by_id[task.id]).ok]
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
