"""Ops that only re-describe a contiguous tensor: the runtime answers them with a view of the
same device memory (no kernel, no copy, no modeled time), as a production runtime does. In a
graph run with fusion on, a Split whose parts each lie contiguous in its input is views at
offsets and a Transpose that only MatMuls read as B a transposed view (graph.py); a Split or a
Transpose run as an op runs its kernel."""

from __future__ import annotations

import math

from .tensor_desc import Format, TensorDesc

VIEW_OPS = frozenset({"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity"})


def contiguous_parts(x: TensorDesc, axis: int) -> bool:
    """Every part of a Split of `x` along `axis` is one contiguous range of its bytes: `x`
    stored ND without padding and nothing but ones before the axis."""
    rank = len(x.shape)
    axis = axis + rank if axis < 0 else axis
    return not x.is_padded and x.format is Format.ND and 0 <= axis < rank \
        and math.prod(x.shape[:axis]) == 1
