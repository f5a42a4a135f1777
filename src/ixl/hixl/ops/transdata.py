"""TransData (tier B): store a tensor in another data format (FRACTAL_NZ, NC1HWC0 or ND).

A format is how a tensor is laid out in memory, not what it means: the output holds the same
values, in the same logical shape, stored in `dst_format` (formats.py has the layouts; the
Cube's L1 takes NZ matrices and NC1HWC0 feature maps as they are). So the golden is the
identity on the logical tensor, and the runtime keeps the format in the output's TensorDesc
(its storage shape differs from its logical one): reading it back gives the logical tensor,
and a kernel that wrote the wrong layout reads back wrong.
"""

from __future__ import annotations

import numpy as np

from ..database import register
from ..dtypes import FLOATS
from ..errors import AttrError, ShapeMismatch
from ..schema import ArgSpec, Attr, OpSchema, SampleCase

FORMATS = ("ND", "FRACTAL_NZ", "NC1HWC0")
TYPES = {"T": FLOATS + ("int8", "uint8", "int16", "int32")}   # itemsizes that divide 32 bytes


def _infer(schema: OpSchema, specs: list[ArgSpec], attrs: dict) -> list[ArgSpec]:
    x = specs[0]
    fmt = attrs["dst_format"]
    if fmt not in FORMATS:
        raise AttrError(f"TransData: dst_format {fmt!r} is not a format; one of "
                        f"{', '.join(FORMATS)}")
    if fmt == "FRACTAL_NZ" and len(x.shape) < 2:
        raise ShapeMismatch(f"TransData: FRACTAL_NZ stores matrices (..., M, N), got shape "
                            f"{x.shape}")
    if fmt == "NC1HWC0" and len(x.shape) != 4:
        raise ShapeMismatch(f"TransData: NC1HWC0 stores a 4-D NCHW tensor, got shape {x.shape}")
    return [ArgSpec(x.shape, x.dtype)]


def _trans_data(x, dst_format="FRACTAL_NZ"):
    return np.array(x, copy=True)


NZ, FIVE_HD = {"dst_format": "FRACTAL_NZ"}, {"dst_format": "NC1HWC0"}

register(OpSchema(
    name="TransData", tier="B", family="format", inputs=("x",), dtypes=FLOATS,
    constraints=TYPES, reference_fn=_trans_data, infer_fn=_infer,
    attrs={"dst_format": Attr(str, "FRACTAL_NZ", "the output's storage format: "
                                                 + ", ".join(FORMATS))},
    doc="the same tensor stored in another format (ND, FRACTAL_NZ, NC1HWC0)",
    samples=[
        SampleCase("one 16 x 16 fractal", ((16, 16),), NZ),
        SampleCase("one element", ((1, 1),), NZ),
        SampleCase("rows and columns not whole fractals", ((17, 33),), NZ),
        SampleCase("batched matrices", ((3, 20, 40),), NZ),
        SampleCase("no rows", ((0, 16),), NZ),
        SampleCase("large", ((256, 512),), NZ),
        SampleCase("NCHW to NC1HWC0", ((1, 16, 4, 4),), FIVE_HD),
        SampleCase("channels not whole C0 groups", ((2, 19, 3, 5),), FIVE_HD),
        SampleCase("a 16 x 16 plane", ((1, 32, 16, 16),), FIVE_HD),
        SampleCase("ND stays ND", ((5, 7),), {"dst_format": "ND"}),
    ]))
