"""Data type names as the op database and the command line spell them."""

from __future__ import annotations

import ml_dtypes
import numpy as np
from numpy.typing import DTypeLike

from .errors import DtypeError

DTYPES: dict[str, np.dtype] = {
    "float16": np.dtype(np.float16),
    "bfloat16": np.dtype(ml_dtypes.bfloat16),
    "float32": np.dtype(np.float32),
    "float64": np.dtype(np.float64),
    "int8": np.dtype(np.int8),
    "int16": np.dtype(np.int16),
    "int32": np.dtype(np.int32),
    "int64": np.dtype(np.int64),
    "uint8": np.dtype(np.uint8),
    "bool": np.dtype(np.bool_),
}

HALF = frozenset({"float16", "bfloat16"})
FLOATS = ("float16", "bfloat16", "float32")   # what ops are listed, sampled and ported for
# Wider sets an op accepts (through `constraints`), as ONNX models and node tests use them.
ANY_FLOAT = FLOATS + ("float64",)
INDEX = ("int64", "int32")                     # indices, axes, shapes (first: the default)
NUMERIC = ANY_FLOAT + ("int32", "int64")
ALL = tuple(DTYPES)                            # data movement: every dtype


def to_numpy(name: str) -> np.dtype:
    try:
        return DTYPES[name]
    except KeyError:
        raise DtypeError(f"unknown dtype {name!r}; known: {', '.join(DTYPES)}") from None


def name_of(dtype: DTypeLike) -> str:
    dtype = np.dtype(dtype)
    for name, dt in DTYPES.items():
        if dt == dtype:
            return name
    raise DtypeError(f"dtype {dtype} has no name in the op database; known: {', '.join(DTYPES)}")


def is_float(name: str) -> bool:
    return name in FLOATS or name == "float64"
