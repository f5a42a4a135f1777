"""HIXL's checks: a call an op does not accept fails with what was wrong and what is allowed."""

import numpy as np
import pytest

from ixl.hixl import ArgSpec, AttrError, DtypeError, ShapeMismatch, get_op
from ixl.hixl.schema import contents


def spec(shape, dtype="float32", value=None):
    return ArgSpec(tuple(shape), dtype, None if value is None else contents(value))


def infer(op, *specs, **attrs):
    return get_op(op).infer(list(specs), attrs)


@pytest.mark.parametrize("op, specs, attrs, error, text", [
    ("Add", [spec((3, 4)), spec((5,))], {}, ShapeMismatch,
     r"shapes \(3, 4\) and \(5,\) do not broadcast"),
    ("Pow", [spec((3,)), spec((2, 3), "int64")], {}, None, None),   # exponent: its own dtype
    ("Sub", [spec((3,), "int8"), spec((3,), "int8")], {}, DtypeError,
     "Sub does not support int8 for a"),
    ("Gelu", [spec((3,))], {"approximate": "fast"}, AttrError, "allowed: 'none', 'tanh'"),
    ("Clip", [spec((3,)), spec((2,))], {}, ShapeMismatch, "min must be a scalar"),
    ("Cast", [spec((3,))], {}, AttrError, "attribute to is required"),
    ("Cast", [spec((3,))], {"to": "float8"}, AttrError, "not a dtype ixl has"),
    ("ReduceSum", [spec((2, 3)), spec((1,), "int64", [2])], {}, AttrError,
     r"axes 2 is out of range for a rank-2 input \(allowed: -2..1\)"),
    ("ReduceMax", [spec((2, 3)), spec((2,), "int64", [1, -1])], {}, AttrError, "axis twice"),
    ("Softmax", [spec((2, 3))], {"axis": -3}, AttrError, "allowed: -2..1"),
    ("LayerNormalization", [spec((4, 5)), spec((4,))], {}, ShapeMismatch,
     r"scale of shape \(4,\) does not fit the normalised shape \(5,\)"),
    ("LayerNormalization", [spec((4, 5)), spec((5,))], {"epsilon": 0.0}, AttrError,
     "epsilon must be > 0"),
    ("RMSNormalization", [spec((4, 5)), spec((5,))], {"stash_type": 0}, AttrError,
     "stash_type=0 is not supported"),
    ("MatMul", [spec((3, 4)), spec((5, 2))], {}, ShapeMismatch, "a's last dim 4 must equal"),
    ("MatMul", [spec((2, 3, 4)), spec((3, 4, 2))], {}, ShapeMismatch, "do not broadcast"),
    ("Gemm", [spec((3, 4)), spec((4, 2)), spec((3, 3))], {}, ShapeMismatch,
     r"C of shape \(3, 3\) does not broadcast to the output shape \(3, 2\)"),
    ("Conv", [spec((1, 4, 5, 5)), spec((2, 3, 3, 3))], {}, ShapeMismatch,
     "channels must equal w.shape"),
    ("Conv", [spec((1, 1, 2, 2)), spec((1, 1, 3, 3))], {}, ShapeMismatch,
     "dilated kernel spans 3 but the padded input is only 2"),
    ("Conv", [spec((1, 1, 5, 5)), spec((1, 1, 3, 3))], {"auto_pad": "SAME"}, AttrError,
     "allowed: NOTSET, SAME_UPPER, SAME_LOWER, VALID"),
    ("Conv", [spec((1, 1, 5, 5)), spec((1, 1, 3, 3)), spec((2,))], {}, ShapeMismatch,
     "bias must have shape"),
    ("TopK", [spec((3, 4)), spec((1,), "int64", [5])], {}, AttrError, "k=5 is out of range"),
    ("TopK", [spec((3, 4)), spec((1,), "int64")], {}, ShapeMismatch,
     "depends on the contents of k"),
    ("ArgMax", [spec((3, 0))], {"axis": 1}, ShapeMismatch, "is empty"),
    ("Gather", [spec((3, 4)), spec((2,), "float32")], {}, DtypeError,
     "does not support float32 for indices"),
    ("Transpose", [spec((2, 3))], {"perm": [0, 0]}, AttrError, "not a permutation"),
    ("Reshape", [spec((2, 3)), spec((2,), "int64", [4, 2])], {}, ShapeMismatch,
     "holds 8 elements, the input"),
    ("Reshape", [spec((2, 3)), spec((2,), "int64", [-1, -1])], {}, ShapeMismatch,
     "at most one -1"),
    ("Reshape", [spec((0, 3)), spec((2,), "int64", [0, -1])], {"allowzero": 1}, ShapeMismatch,
     "both 0 and -1"),
    ("Flatten", [spec((2, 3))], {"axis": 3}, AttrError, r"allowed: -2..2"),
    ("Squeeze", [spec((1, 3)), spec((1,), "int64", [1])], {}, ShapeMismatch,
     "only axes of size 1"),
    ("Unsqueeze", [spec((3,)), spec((2,), "int64", [0, -3])], {}, AttrError, "axis twice"),
    ("Concat", [spec((2, 3)), spec((3, 3))], {"axis": 1}, ShapeMismatch, "differ outside axis"),
    ("Concat", [spec((2, 3))], {}, AttrError, "attribute axis is required"),
    ("Concat", [spec((2, 3)), spec((2, 3), "float16")], {"axis": 0}, DtypeError,
     "inputs0 is float32 but inputs1 is float16"),
    ("Slice", [spec((5,)), spec((1,), "int64", [0]), spec((1,), "int64", [5]),
               spec((1,), "int64", [0]), spec((1,), "int64", [0])], {}, AttrError,
     "steps must be non-zero"),
    ("Range", [spec((), "int64", [0]), spec((), "int64", [5]), spec((), "int64", [0])], {},
     AttrError, "delta is 0"),
    ("Where", [spec((3,)), spec((3,)), spec((3,))], {}, DtypeError,
     "does not support float32 for condition"),
    ("ConstantOfShape", [spec((2,), "int64", [2, -1])], {}, ShapeMismatch, "negative dim"),
])
def test_bad_calls_say_what_is_wrong_and_what_is_allowed(op, specs, attrs, error, text):
    if error is None:
        infer(op, *specs, **attrs)
        return
    with pytest.raises(error, match=text):
        infer(op, *specs, **attrs)


def test_gather_indices_out_of_range_fail_in_the_golden_with_the_range():
    with pytest.raises(ShapeMismatch, match=r"index 3 is out of range .* \(allowed: -3..2\)"):
        get_op("Gather").reference(np.zeros((3, 2), np.float32), np.array([0, 3]))


def test_concat_counts_variadic_inputs():
    with pytest.raises(ShapeMismatch, match="Concat takes 1 or more input"):
        infer("Concat", axis=0)
