"""Matrix products (tier B): MatMul (numpy semantics) and Gemm (ONNX's 2-D GEMM)."""

from __future__ import annotations

import numpy as np

from ..database import register
from ..dtypes import FLOATS, NUMERIC
from ..errors import ShapeMismatch
from ..schema import (ArgSpec, Attr, OpSchema, SampleCase, Tolerance, broadcast_shapes,
                      broadcasts_to)

MATMUL_TYPES = {"T": NUMERIC}
# float32 products accumulate K terms: a float32 accumulator (the Cube's) drifts past 1e-5.
TOLERANCES = {"float32": Tolerance(1e-4, 1e-4)}


def matmul_shape(op: str, a: tuple, b: tuple) -> tuple[int, ...]:
    """numpy.matmul's output shape: 1-D operands gain and lose a dim, batch dims broadcast."""
    if not a or not b:
        raise ShapeMismatch(f"{op}: operands must have at least one dim, got {a} and {b}")
    a2 = (1,) + a if len(a) == 1 else a
    b2 = b + (1,) if len(b) == 1 else b
    if a2[-1] != b2[-2]:
        raise ShapeMismatch(f"{op}: a {a} and b {b} do not multiply: a's last dim {a2[-1]} "
                            f"must equal b's {'only' if len(b) == 1 else 'second-to-last'} "
                            f"dim {b2[-2]}")
    batch = broadcast_shapes(op, [a2[:-2], b2[:-2]])
    return batch + (a2[-2],) * (len(a) > 1) + (b2[-1],) * (len(b) > 1)


def _infer_matmul(schema: OpSchema, specs: list[ArgSpec], attrs: dict) -> list[ArgSpec]:
    a, b = specs
    return [ArgSpec(matmul_shape("MatMul", a.shape, b.shape), a.dtype)]


def _gemm_mk(spec: ArgSpec, name: str, trans: int) -> tuple[int, int]:
    if len(spec.shape) != 2:
        raise ShapeMismatch(f"Gemm: {name} must be 2-D, got shape {spec.shape}")
    rows, cols = spec.shape
    return (cols, rows) if trans else (rows, cols)


def _infer_gemm(schema: OpSchema, specs: list[ArgSpec], attrs: dict) -> list[ArgSpec]:
    a, b, c = (specs + [None])[:3]
    m, k = _gemm_mk(a, "A", attrs["transA"])
    kb, n = _gemm_mk(b, "B", attrs["transB"])
    if k != kb:
        raise ShapeMismatch(f"Gemm: op(A) is {(m, k)} and op(B) is {(kb, n)} (after transA="
                            f"{attrs['transA']}, transB={attrs['transB']}): inner dims differ")
    if c is not None and not broadcasts_to(c.shape, (m, n)):
        raise ShapeMismatch(f"Gemm: C of shape {c.shape} does not broadcast to the output "
                            f"shape {(m, n)}")
    return [ArgSpec((m, n), a.dtype)]


def _gemm(a, b, c=None, alpha=1.0, beta=1.0, transA=0, transB=0):
    y = alpha * ((a.T if transA else a) @ (b.T if transB else b))
    return y if c is None else y + beta * c


MATMUL_CASES = [
    SampleCase("one element", ((1, 1), (1, 1))),
    SampleCase("vector . vector", ((37,), (37,))),
    SampleCase("vector @ batched matrix", ((4,), (2, 4, 3))),
    SampleCase("batched matrix @ vector", ((2, 3, 4), (4,))),
    SampleCase("K of size 0: zeros", ((3, 0), (0, 5))),
    SampleCase("M of size 0", ((0, 8), (8, 5))),
    SampleCase("N of 7: row bytes not a multiple of 32", ((5, 16), (16, 7))),
    SampleCase("prime dims", ((13, 31), (31, 17))),
    SampleCase("batch broadcast", ((3, 1, 6, 8), (2, 8, 5))),
    SampleCase("large", ((256, 512), (512, 256))),
]

GEMM_CASES = [
    SampleCase("one element", ((1, 1), (1, 1), (1, 1))),
    SampleCase("no C", ((6, 10), (10, 3))),
    SampleCase("C a row vector", ((4, 10), (10, 8), (8,))),
    SampleCase("C a scalar", ((4, 10), (10, 8), ())),
    SampleCase("transA, transB, alpha, beta", ((10, 4), (8, 10), (4, 1)),
               {"transA": 1, "transB": 1, "alpha": 0.25, "beta": 0.5}),
    SampleCase("K of size 0: beta * C", ((3, 0), (0, 5), (3, 5))),
    SampleCase("N of 7: row bytes not a multiple of 32", ((5, 16), (16, 7), (7,))),
    SampleCase("prime dims", ((13, 31), (31, 17), (17,))),
    SampleCase("large (a Linear layer)", ((256, 512), (256, 512), (256,)), {"transB": 1}),
]

register(OpSchema(
    name="MatMul", tier="B", family="matmul", inputs=("a", "b"), dtypes=FLOATS,
    reference_fn=np.matmul, infer_fn=_infer_matmul, constraints=MATMUL_TYPES,
    samples=MATMUL_CASES, input_range=(-1.0, 1.0), tolerances=TOLERANCES,
    doc="y = a @ b as numpy.matmul: batched, batch dims broadcast, 1-D operands"))
register(OpSchema(
    name="Gemm", tier="B", family="matmul", inputs=("a", "b", "c"), dtypes=FLOATS,
    reference_fn=_gemm, infer_fn=_infer_gemm, optional=1, constraints=MATMUL_TYPES,
    attrs={"alpha": Attr(float, 1.0, "scales op(A) @ op(B)"),
           "beta": Attr(float, 1.0, "scales C"),
           "transA": Attr(int, 0, "use A transposed"),
           "transB": Attr(int, 0, "use B transposed")},
    samples=GEMM_CASES, input_range=(-1.0, 1.0), tolerances=TOLERANCES,
    doc="y = alpha * op(A) @ op(B) + beta * C; A, B 2-D; C broadcasts to (M, N)"))
