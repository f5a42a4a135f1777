"""SmolLM2's decode ladder, measured: for each dtype and each rung taken in turn (none, then
every rung up to it), the launches of a decode step, the modeled time to the first token and
per output token, the share of the weight floor that per-token time reaches, and the greedy
tokens against the committed reference (with the top-5 overlap and the largest logit error
against its logits); then each step's time split into the launches'
overhead, the weight bytes and the KV cache bytes at the GM peak, and the rest (compute, syncs,
moves below the peak), with `--plot` as a picture. Modeled times, deterministic: the README's
ladder tables are this script's output.

The weight floor is the bytes a decode step must read (every weight once; of the embedding,
one row) at the chip's modeled GM bandwidth (ascend/costs: gm_bytes_per_cycle at its clock);
the KV bytes are every cache's whole capacity, which attention reads.

    python benchmarks/decode_ladder.py [--tokens 8] [--dtype float32 ...]
        [--plot docs/decode_ladder.png]
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

DATA = Path(__file__).resolve().parents[1] / "tests/external/data"
REFERENCE = DATA / "smollm2_reference.json"


def gm_us(model: SmolLM2, nbytes: int) -> float:
    """`nbytes` at the chip's modeled GM bandwidth."""
    chip = get_chip(model.chip)
    per_second = cost_table(chip.arch).raw["gm_bytes_per_cycle"] * chip.clock_mhz * 1e6
    return nbytes / per_second * 1e6


def floor_us(model: SmolLM2) -> float:
    """A decode step's weight bytes over the modeled GM bandwidth: every resident weight,
    except a Gather's table (the embedding), of which one row."""
    decoder = model.decoder
    gear = decoder.gear(1, 2)
    gathered = {n.inputs[0] for n in gear.nodes if n.op == "Gather"}
    return gm_us(model, sum(decoder.graph.constants[n].nbytes if n not in gathered
                            else decoder.graph.constants[n][0].nbytes for n in decoder.weights))


def agreement(logits: list[np.ndarray], same: int, reference: dict) -> tuple[float, float]:
    """Over the steps up to the first token that differs (the same context as the
    reference's): the mean overlap of the top 5 with the reference's, and the largest error of
    the logits the reference keeps (its top k and a fixed vocabulary sample)."""
    overlap, error = [], 0.0
    for k, row in enumerate(logits[:min(same + 1, len(reference["topk_ids_0"]))]):
        top = reference["topk_ids_0"][k]
        overlap.append(len(set(np.argsort(-row)[:5]) & set(top[:5])) / 5)
        for ids, want in ((top, reference["topk_logits_0"][k]),
                          (reference["sample_ids"], reference["sample_logits_0"][k])):
            error = max(error, float(np.max(np.abs(row[ids] - want))))
    return float(np.mean(overlap)), error


PARTS = ("launch overhead", "weight bytes", "KV bytes", "compute, syncs, moves below peak")


def plot(splits: dict[str, dict[str, float]], path: str) -> None:
    """One stacked bar per (dtype, rungs): the decode step's time by part."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(9, 0.5 * len(splits) + 1.8))
    labels = list(splits)
    left = [0.0] * len(labels)
    for part in PARTS:
        widths = [splits[label][part] for label in labels]
        ax.barh(labels, widths, left=left, label=part)
        left = [a + b for a, b in zip(left, widths)]
    ax.invert_yaxis()
    ax.set_xlabel("modeled us per decode step (910B1)")
    ax.set_title("SmolLM2-135M decode: where a step's time goes, per ladder rung")
    ax.legend(loc="upper center", bbox_to_anchor=(0.4, -0.18), ncol=len(PARTS), fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tokens", type=int, default=8, help="new tokens per generation")
    ap.add_argument("--dtype", action="append", choices=("float32", "float16", "bfloat16"))
    ap.add_argument("--plot", metavar="FILE.png", help="draw the split of a step's time")
    args = ap.parse_args()
    if args.tokens < 2:
        ap.error(f"--tokens {args.tokens}: give at least 2 (a prefill and a decode step)")
    ref = json.loads(REFERENCE.read_text())["prompts"][0]
    logits = dict(np.load(DATA / "smollm2_logits.npz"))
    ladder = [()] + [tuple(RUNGS)[:i + 1] for i in range(len(RUNGS))]
    print(f'"{ref["prompt"]}", {len(ref["input_ids"])} prompt tokens, {args.tokens} new '
          f'(a prefill and {args.tokens - 1} decode steps)\n')
    print("| dtype | rungs | launches per step | time to first token | per output token "
          "| weight floor | share of the floor | tokens equal to the reference "
          "| top-5 overlap | max logit error |")
    print("|---" * 10 + "|")
    splits: dict[str, dict[str, float]] = {}
    for dtype in args.dtype or ["float32", "float16", "bfloat16"]:
        for rungs in ladder:
            model = SmolLM2(dtype=dtype, rungs=rungs)
            g = model.generate(ref["prompt"], args.tokens, keep_logits=True)
            floor = floor_us(model)
            steps = g.records[1:]
            launch = sum(r.launch_us for r in steps) / len(steps)
            kv = gm_us(model, model.decoder.cache_bytes(g.capacity))
            assert g.tpot_us is not None              # --tokens >= 2, no end-of-turn
            splits[f"{dtype}, {' + '.join(rungs) or 'none'}"] = dict(zip(PARTS, (
                launch, floor, kv, g.tpot_us - launch - floor - kv)))
            same = next((k for k, (a, b) in enumerate(zip(g.tokens, ref["new_ids"])) if a != b),
                        len(g.tokens))
            launches = int(np.mean([r.launches for r in steps]))
            overlap, error = agreement(g.logits, same, logits)
            print(f"| {dtype} | {' + '.join(rungs) or 'none (as exported)'} | {launches} "
                  f"| {g.ttft_us:.1f} us | {g.tpot_us:.1f} us | {floor:.1f} us "
                  f"| {floor / g.tpot_us:.1%} | {same} of {len(g.tokens)} | {overlap:.0%} "
                  f"| {error:.2g} |", flush=True)
    print("\nA decode step's time by part (modeled us; the weight and KV bytes at the GM peak)\n")
    print("| dtype, rungs | " + " | ".join(PARTS) + " | step |")
    print("|---" * (len(PARTS) + 2) + "|")
    for label, split in splits.items():
        print(f"| {label} | " + " | ".join(f"{split[p]:.1f}" for p in PARTS)
              + f" | {sum(split.values()):.1f} |")
    if args.plot:
        plot(splits, args.plot)
        print(f"\n{args.plot} written")


if __name__ == "__main__":
    main()
