"""A model's structure without its weights' bytes, for ONNX's checker and shape inference.

Both serialize the whole model before they start: for SmolLM2's 540 MB of float32 weights
that was 14 of the 15 seconds a conversion took. Neither needs a weight's values, only its type
and shape; what data-dependent shapes read (Reshape's shape, Slice's starts, Tile's repeats,
Resize's sizes) are small integer tensors. So an initializer of more than WEIGHT_ELEMENTS
elements enters the light model as a graph input of its type and shape, and `check_weights`
holds each to the checker's rule for a tensor's storage (one value field); its bytes are
checked against its shape where they are read (convert.initializer_array).
"""

from __future__ import annotations

import math

import onnx

WEIGHT_ELEMENTS = 4096     # [U] above any shape tensor's size (a rank-4096 shape would be)


VALUE_FIELDS = ("raw_data", "float_data", "int32_data", "string_data", "int64_data",
                "double_data", "uint64_data")


def is_weight(tensor: onnx.TensorProto) -> bool:
    """A large tensor stored in the model (external data is left to the checker, which
    finds its file)."""
    return (math.prod(tensor.dims) > WEIGHT_ELEMENTS
            and tensor.data_location != onnx.TensorProto.EXTERNAL)


def check_weights(model: onnx.ModelProto) -> None:
    """What the checker asks of a stored tensor, for the weights `without_weights` took out."""
    for t in model.graph.initializer:
        if is_weight(t) and sum(1 for f in VALUE_FIELDS if len(getattr(t, f))) != 1:
            raise onnx.checker.ValidationError(
                f"TensorProto (tensor name: {t.name}) should contain one and only one value "
                f"field.")


def without_weights(model: onnx.ModelProto) -> onnx.ModelProto:
    """`model` with its weights as typed graph inputs (the model itself when it has none); the
    original is not changed."""
    g = model.graph
    if not any(is_weight(t) for t in g.initializer):
        return model
    declared = {v.name for v in g.input}
    weights = [onnx.helper.make_tensor_value_info(t.name, t.data_type, list(t.dims))
               for t in g.initializer if is_weight(t) and t.name not in declared]
    graph = onnx.helper.make_graph(
        list(g.node), g.name, [*g.input, *weights], list(g.output),
        initializer=[t for t in g.initializer if not is_weight(t)], doc_string=g.doc_string,
        value_info=list(g.value_info), sparse_initializer=list(g.sparse_initializer))
    graph.metadata_props.extend(g.metadata_props)
    light = onnx.ModelProto(ir_version=model.ir_version, producer_name=model.producer_name,
                            producer_version=model.producer_version, domain=model.domain,
                            model_version=model.model_version, doc_string=model.doc_string)
    light.opset_import.extend(model.opset_import)
    light.functions.extend(model.functions)
    light.metadata_props.extend(model.metadata_props)
    light.graph.CopyFrom(graph)
    return light
