"""MatMul and Gemm over the Cube kernel's boundaries: M and N at fractal edges, the base block
and the 512-byte burst; K from one fractal to far longer than M and N (split-K and its GEMV
sums, L1 chunks, base_k tails); batch dims broadcast, 1-D operands; Gemm's layouts, C's
shapes, alpha and beta."""

from functools import lru_cache

from hypothesis import assume, given
from hypothesis import strategies as st

from ixl.hixl import SampleCase

from .space import (
    MAX_ELEMENTS,
    change_point,
    check,
    dim,
    dtype_of,
    fits,
    near,
    path_of,
    small_edges,
    sweep_settings,
)


@lru_cache
def _edges(dtype: str) -> tuple[list[int], list[int]]:
    """(M / N edges, K edges) from the tiling of a large product and of a one-row one."""
    def unsplit(k):
        return "no split-K" in (path_of("MatMul", SampleCase("", ((1, k), (k, 16))), dtype) or "")
    split = change_point(unsplit, 16, 1 << 14) or 0
    mn = small_edges(dtype) + near(128, 256, 512)
    return mn, sorted(set(mn + near(split, 1024, 2048, 4096, 8192)))


def _mnk(data, op: str) -> tuple[str, int, int, int]:
    """(dtype, m, n, k): M and N up to 600, K up to 9000, boundaries most of the time."""
    dtype = dtype_of(data, op)
    mn, ks = _edges(dtype)
    m, n = (data.draw(dim(mn, 600), label=x) for x in "mn")
    return dtype, m, n, data.draw(dim(ks, 9000), label="k")


@given(data=st.data())
@sweep_settings()
def test_matmul_shapes(debug_dev, data):
    dtype, m, n, k = _mnk(data, "MatMul")
    batch: tuple[int, ...] = data.draw(st.sampled_from([(), (), (3,), (2, 1)]), label="batch")
    b_batch = data.draw(st.sampled_from([(), batch, batch[-1:] and (1,) + batch[1:]]))
    a = batch + (m, k)
    b = tuple(b_batch) + (k, n)
    if data.draw(st.integers(0, 9)) == 0:          # 1-D operands: a row, a column
        a, b = ((k,), b) if data.draw(st.booleans()) else (a, (k,))
    assume(fits(a, b, batch + (m, n), limit=2 * MAX_ELEMENTS))
    check(debug_dev, "MatMul", SampleCase("sweep", (a, b)), dtype)


@given(data=st.data())
@sweep_settings()
def test_gemm_shapes(debug_dev, data):
    dtype, m, n, k = _mnk(data, "Gemm")
    assume(fits((m, k), (k, n), (m, n), limit=2 * MAX_ELEMENTS))
    trans_a, trans_b = data.draw(st.booleans()), data.draw(st.booleans())
    a = (k, m) if trans_a else (m, k)
    b = (n, k) if trans_b else (k, n)
    c = data.draw(st.sampled_from([None, (n,), (m, n), (1, n), (m, 1), ()]), label="c")
    attrs = {"transA": int(trans_a), "transB": int(trans_b)}
    if data.draw(st.booleans()):
        attrs |= {"alpha": data.draw(st.sampled_from([0.5, -1.0, 2.0])),
                  "beta": data.draw(st.sampled_from([0.0, 0.25, 1.0]))}
    shapes = (a, b) if c is None else (a, b, c)
    check(debug_dev, "Gemm", SampleCase("sweep", shapes, attrs), dtype)
