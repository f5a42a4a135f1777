"""GGUF files (llama.cpp's model format): metadata and tensors, dequantised to float32.

The `gguf` package (llama.cpp's own reader) parses the file as a memory map and dequantises
block formats (Q4_1, Q8_0, ...). Two things differ from the Hugging Face layout the ONNX export
starts from, and are undone here:

- shapes: GGUF lists dimensions innermost first; the reader gives row-major arrays, so a
  Linear's weight comes out (out_features, in_features) as in PyTorch;
- rotary rows: llama.cpp's converter reorders the rows of each attention head of the query
  and key projections from Hugging Face's "rotate half" layout (the head's first half, then
  its second half) to interleaved pairs (0, half, 1, half + 1, ...), which its rope kernel
  expects. `unpermute_heads` restores Hugging Face's order.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from gguf import GGUFReader, ReaderTensor
from gguf.quants import dequantize


def unpermute_heads(weight: np.ndarray, heads: int) -> np.ndarray:
    """The rows of a query or key projection (heads * head_dim, in) in Hugging Face's order,
    from llama.cpp's interleaved order: row 2i + j of a head goes back to j * half + i."""
    rows = weight.shape[0]
    if rows % (2 * heads):
        raise ValueError(f"cannot split {rows} rows into {heads} heads of even size")
    grouped = weight.reshape(heads, rows // heads // 2, 2, *weight.shape[1:])
    return np.ascontiguousarray(grouped.swapaxes(1, 2).reshape(weight.shape))


class GGUFFile:
    """One GGUF file, opened once; tensors are dequantised on request (thread safe: the
    memory map is read only).

    The metadata is read into plain values once and the reader is let go: its fields are
    a numpy memmap per part (about 250,000 for a vocabulary of 49,152 tokens and its merges),
    which every full garbage collection of the process would walk for as long as the model
    lives."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        reader = GGUFReader(str(self.path))
        self.metadata = {key: entry.contents() for key, entry in reader.fields.items()}
        self.tensors = list(reader.tensors)
        self._by_name = {t.name: t for t in self.tensors}

    def field(self, key: str, default: Any = None) -> Any:
        """A metadata value (a number, a string, or a list of them)."""
        return self.metadata.get(key, default)

    def tensor_info(self, name: str) -> ReaderTensor:
        try:
            return self._by_name[name]
        except KeyError:
            raise KeyError(f"{self.path.name} holds no tensor {name!r}") from None

    def tensor(self, name: str) -> np.ndarray:
        """Tensor `name` as float32, row-major (a Linear's weight is (out, in))."""
        info = self.tensor_info(name)
        shape = tuple(int(d) for d in reversed(info.shape))
        return dequantize(info.data, info.tensor_type).astype(np.float32, copy=False).reshape(shape)

    def quantization(self, name: str) -> str:
        """The storage type of tensor `name` (F32, Q4_1, Q8_0, ...)."""
        return self.tensor_info(name).tensor_type.name
