"""SmolLM2's decode ladder, measured: for each dtype and each rung taken in turn (none, then
every rung up to it), the launches of a decode step, the modeled time to the first token and
per output token, the share of the weight floor that per-token time reaches, and the greedy
tokens against the committed reference. Modeled times, deterministic: the README's ladder
table is this script's output.

The weight floor is the bytes a decode step must read (every weight once; of the embedding,
one row) at the chip's modeled GM bandwidth (ascend/costs: gm_bytes_per_cycle at its clock).

    python tools/decode_ladder.py [--tokens 8] [--dtype float32 ...]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from ixl.ascend import get_chip
from ixl.ascend.costs import cost_table
from ixl.models import SmolLM2
from ixl.models.ladder import RUNGS

REFERENCE = Path(__file__).resolve().parents[1] / "tests/external/data/smollm2_reference.json"


def floor_us(model: SmolLM2) -> float:
    """A decode step's weight bytes over the modeled GM bandwidth: every resident weight,
    except a Gather's table (the embedding), of which one row."""
    decoder = model.decoder
    gear = decoder.gear(1, 2)
    gathered = {n.inputs[0] for n in gear.nodes if n.op == "Gather"}
    nbytes = sum(decoder.graph.constants[n].nbytes if n not in gathered
                 else decoder.graph.constants[n][0].nbytes for n in decoder.weights)
    chip = get_chip(model.chip)
    per_second = cost_table(chip.arch).raw["gm_bytes_per_cycle"] * chip.clock_mhz * 1e6
    return nbytes / per_second * 1e6


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tokens", type=int, default=8, help="new tokens per generation")
    ap.add_argument("--dtype", action="append", choices=("float32", "float16", "bfloat16"))
    args = ap.parse_args()
    if args.tokens < 2:
        ap.error(f"--tokens {args.tokens}: give at least 2 (a prefill and a decode step)")
    ref = json.loads(REFERENCE.read_text())["prompts"][0]
    ladder = [()] + [tuple(RUNGS)[:i + 1] for i in range(len(RUNGS))]
    print(f'"{ref["prompt"]}", {len(ref["input_ids"])} prompt tokens, {args.tokens} new '
          f'(a prefill and {args.tokens - 1} decode steps)\n')
    print("| dtype | rungs | launches per step | time to first token | per output token "
          "| weight floor | share of the floor | tokens equal to the reference |")
    print("|---|---|---|---|---|---|---|---|")
    for dtype in args.dtype or ["float32", "float16", "bfloat16"]:
        for rungs in ladder:
            model = SmolLM2(dtype=dtype, rungs=rungs)
            g = model.generate(ref["prompt"], args.tokens)
            floor = floor_us(model)
            same = next((k for k, (a, b) in enumerate(zip(g.tokens, ref["new_ids"])) if a != b),
                        len(g.tokens))
            launches = int(np.mean([r.launches for r in g.records[1:]]))
            assert g.tpot_us is not None              # --tokens >= 2, no end-of-turn
            print(f"| {dtype} | {' + '.join(rungs) or 'none (as exported)'} | {launches} "
                  f"| {g.ttft_us:.1f} us | {g.tpot_us:.1f} us | {floor:.1f} us "
                  f"| {floor / g.tpot_us:.1%} | {same} of {len(g.tokens)} |", flush=True)


if __name__ == "__main__":
    main()
