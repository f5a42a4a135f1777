"""Matrix products (tier B): MatMul (numpy semantics), Gemm (ONNX's 2-D GEMM) and Einsum."""

from __future__ import annotations

import numpy as np

from ..database import register
from ..dtypes import FLOATS, NUMERIC
from ..errors import AttrError, ShapeMismatch
from ..schema import ArgSpec, Attr, OpSchema, SampleCase, Tolerance, broadcast_shapes, broadcasts_to

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
    assert a is not None and b is not None      # required inputs: check() saw them
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
    # a classifier head: few rows and columns, K long enough to split over more than 16 parts
    SampleCase("classifier head 1 x 1280 . 1280 x 4", ((1, 1280), (1280, 4))),
    SampleCase("GEMV of 3 rows, K 2048, N 4", ((3, 2048), (2048, 4))),
    SampleCase("one row, K 2048, N 16", ((1, 2048), (2048, 16))),
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
    SampleCase("classifier head (transB, bias) 1 x 1280 . 1280 x 4", ((1, 1280), (4, 1280), (4,)),
               {"transB": 1}),
    SampleCase("one row, K 1024, N 8, C a row", ((1, 1024), (1024, 8), (8,))),
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


# ---- Einsum ----

def parse_einsum(equation: str, shapes: list[tuple]) -> tuple[list[str], str, dict[str, int]]:
    """The equation's input terms and output term (ellipses spelled out as capital letters,
    which ONNX equations never use) and each letter's size; a clear error for a bad equation."""
    text = equation.replace(" ", "")
    lhs, arrow, rhs = text.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(shapes):
        raise AttrError(f"Einsum: equation {equation!r} has {len(terms)} input term(s) for "
                        f"{len(shapes)} input(s)")
    letters = set("".join(terms).replace(".", "")) | set(rhs.replace(".", ""))
    if not all(c.isalpha() and c.islower() for c in letters):
        raise AttrError(f"Einsum: equation {equation!r} may hold lower-case letters, ',', '->' "
                        f"and '...' only")
    sizes: dict[str, int] = {}
    batch = 0
    spelled = []
    for term, shape in zip(terms, shapes):
        named = term.replace("...", "")
        if term.count("...") > 1 or len(named) > len(shape) or \
                ("..." not in term and len(named) != len(shape)):
            raise ShapeMismatch(f"Einsum: term {term!r} does not fit an input of shape {shape}")
        extra = len(shape) - len(named)
        batch = max(batch, extra)
        ell = "".join(chr(ord("A") + 26 - extra + i) for i in range(extra))
        full = term.replace("...", ell)
        spelled.append(full)
        for c, d in zip(full, shape):
            if c.islower() and sizes.setdefault(c, d) != d:
                raise ShapeMismatch(f"Einsum: index {c!r} is {sizes[c]} in one place and {d} in "
                                    f"another ({equation!r} over {shapes})")
    for full, shape in zip(spelled, shapes):      # ellipsis dims broadcast
        for c, d in zip(full, shape):
            if c.isupper():
                sizes[c] = broadcast_shapes("Einsum", [(sizes.get(c, 1),), (d,)])[0]
    ell = "".join(chr(ord("A") + 26 - batch + i) for i in range(batch))
    if arrow:
        out = rhs.replace("...", ell)
        unknown = [c for c in out if c not in sizes]
        if unknown or len(set(out)) != len(out):
            raise AttrError(f"Einsum: output term {rhs!r} names {unknown or 'an index twice'}, "
                            f"not the inputs' indices once each")
    else:
        every = "".join(spelled)
        out = ell + "".join(sorted(c for c in set(every) if c.islower() and every.count(c) == 1))
    return spelled, out, sizes


def _infer_einsum(schema: OpSchema, specs: list[ArgSpec], attrs: dict) -> list[ArgSpec]:
    _, out, sizes = parse_einsum(attrs["equation"], [s.shape for s in specs])
    return [ArgSpec(tuple(sizes[c] for c in out), specs[0].dtype)]


def _einsum(*operands, equation):
    spelled, out, _ = parse_einsum(equation, [o.shape for o in operands])
    return np.einsum(",".join(spelled) + "->" + out, *operands)


EINSUM_CASES = [
    SampleCase("one element", ((1, 1), (1, 1)), {"equation": "ij,jk->ik"}),
    SampleCase("batched matmul (attention scores)", ((2, 4, 8, 16), (2, 4, 12, 16)),
               {"equation": "bhqd,bhkd->bhqk"}),
    SampleCase("transpose", ((5, 7),), {"equation": "ij->ji"}),
    SampleCase("sum over an axis", ((5, 7),), {"equation": "ij->i"}),
    SampleCase("inner product, implicit output", ((37,), (37,)), {"equation": "i,i"}),
    SampleCase("ellipsis batch", ((3, 2, 5, 6), (6, 4)), {"equation": "...ij,jk->...ik"}),
    SampleCase("outer product", ((5,), (7,)), {"equation": "i,j->ij"}),
    SampleCase("diagonal", ((3, 5, 5),), {"equation": "bii->bi"}),
    SampleCase("a dim of size 0", ((0, 8), (8, 5)), {"equation": "ij,jk->ik"}),
    SampleCase("large", ((256, 512), (512, 256)), {"equation": "ik,kj->ij"}),
]

register(OpSchema(
    name="Einsum", tier="B", family="matmul", inputs=("inputs",), dtypes=FLOATS,
    reference_fn=_einsum, infer_fn=_infer_einsum, constraints=MATMUL_TYPES, variadic=True,
    attrs={"equation": Attr(str, None, "e.g. 'bhqd,bhkd->bhqk'", required=True)},
    samples=EINSUM_CASES, input_range=(-1.0, 1.0), tolerances=TOLERANCES,
    doc="y = the Einstein summation `equation` over the inputs (products summed over the "
        "indices absent from the output)"))
