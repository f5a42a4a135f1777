"""The op database as a whole: every op complete, its sample cases valid and at the boundaries."""

import math

import pytest

from ixl.hixl import ArgSpec, TileMultiple, all_ops
from ixl.hixl.schema import contents

OPS = list(all_ops().values())
PLANNED = {
    "ReduceSum", "ReduceMax", "ReduceMin", "ReduceMean", "Softmax", "LogSoftmax",
    "LayerNormalization", "RMSNormalization", "MatMul", "Gemm", "Conv", "Gather", "TopK",
    "Sort", "Transpose", "Reshape", "Flatten", "Squeeze", "Unsqueeze", "Concat", "Slice",
    "Expand", "Erf", "Identity", "Constant", "Shape", "CastLike", "ConstantOfShape", "Range",
    "Equal", "Less", "Greater", "Not", "ArgMax", "Add", "Mul", "Relu", "Sub", "Div", "Maximum",
    "Minimum", "Pow", "LeakyRelu", "Gelu", "Silu", "Sigmoid", "Tanh", "Exp", "Log", "Sqrt",
    "Rsqrt", "Reciprocal", "Abs", "Neg", "Clip", "Adds", "Muls", "Cast", "Where",
    # the model families (issue 16)
    "BatchNormalization", "MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool",
    "Resize", "HardSigmoid", "HardSwish", "Softplus", "Mish", "PRelu", "Elu", "Selu", "Sign",
    "Floor", "Ceil", "Round", "Mod", "Cos", "Sin", "And", "Or", "Xor", "GreaterOrEqual",
    "LessOrEqual", "Trilu", "CumSum", "ScatterND", "OneHot", "Einsum", "InstanceNormalization",
    "GroupNormalization", "ReduceProd", "ReduceL2", "ReduceLogSumExp", "If", "ConvTranspose",
    "Split", "Tile", "Pad", "GatherElements", "GatherND", "ArgMin",
}
TIERS = {"S": {"elementwise", "compare"}, "A": {"reduce", "norm", "pool", "position"},
         "B": {"matmul", "conv", "format"}, "C": {"index", "shape", "resize", "control"}}


def test_every_planned_op_is_in_the_database():
    assert PLANNED - set(all_ops()) == set()


@pytest.mark.parametrize("schema", OPS, ids=[s.name for s in OPS])
def test_each_op_is_complete(schema):
    assert schema.family in TIERS[schema.tier]
    assert schema.doc and schema.samples and schema.dtypes
    assert set(schema.host_inputs) <= set(schema.inputs)
    for case in schema.samples:
        assert len(case.shapes) <= len(schema.inputs) or schema.variadic
        assert set(case.values) <= set(schema.inputs)


def _specs(schema, case, dtype):
    names = schema.input_names(len(case.shapes))
    return [None if s is None else ArgSpec(
                (s.tiles * 64 + s.plus,) if isinstance(s, TileMultiple) else tuple(s), d,
                contents(case.values[n]) if n in case.values else None)
            for s, n, d in zip(case.shapes, names, schema.input_dtypes(dtype, len(names)))]


# The smallest non-empty tensor an op takes, where it is not one element.
SMALLEST = {"ApplyRotaryPosEmb": 2}     # a head row is two halves: one pair


@pytest.mark.parametrize("schema", OPS, ids=[s.name for s in OPS])
def test_sample_cases_are_accepted_and_reach_the_boundaries(schema):
    """R8: every op is sampled on one element (or its smallest tensor) and on an empty tensor
    (a dim of size 0)."""
    sizes = set()
    for case in schema.samples:
        for dtype in case.dtypes or schema.dtypes:
            specs = _specs(schema, case, dtype)
            outs = schema.infer(specs, case.attrs)
            sizes.update(math.prod(s.shape) for s in [*specs, *outs] if s is not None)
    assert 0 in sizes and SMALLEST.get(schema.name, 1) in sizes
