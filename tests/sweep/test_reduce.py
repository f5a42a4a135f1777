"""The reductions on the axis template over its boundaries: the reduced length at block and
repeat edges and where a unit stops fitting UB (resident -> streamed), reduced axes innermost
(row layout) or not (column layout) or several, keepdims, few outputs over long axes (the
split across cores)."""

from functools import lru_cache

from hypothesis import assume, given
from hypothesis import strategies as st

from ixl.hixl import SampleCase, all_ops, get_op
from ixl.nixl import REGISTRY

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

OPS = [op for op in sorted(all_ops())
       if REGISTRY.native(op) is not None and get_op(op).family == "reduce"]


@lru_cache
def length_edges(op: str, dtype: str, attrs: tuple = ()) -> list[int]:
    """Block and repeat edges and the reduced length where a row stops being resident."""
    def resident(n):
        case = SampleCase("", ((2, n),), dict(attrs)) if get_op(op).family == "norm" \
            else SampleCase("", ((2, n), (1,)), values={"axes": [-1]})
        return "resident" in (path_of(op, case, dtype) or "resident")
    edge = change_point(resident, 1, MAX_ELEMENTS // 2) or 0
    return small_edges(dtype) + near(edge, 2 * edge, 4096)


@given(data=st.data())
@sweep_settings()
def test_reduce_shapes(debug_dev, data):
    op = data.draw(st.sampled_from(OPS), label="op")
    dtype = dtype_of(data, op)
    edges = length_edges(op, dtype)
    rank = data.draw(st.integers(1, 4), label="rank")
    shape = tuple(data.draw(dim(edges, 3 * max(edges)) if i == rank - 1
                            else dim(near(1, 2, 16, 48), 64), label="dim") for i in range(rank))
    axes = sorted(data.draw(st.sets(st.integers(0, rank - 1), min_size=1), label="axes"))
    axes = [a - rank if data.draw(st.booleans()) else a for a in axes]
    assume(fits(shape))
    if data.draw(st.integers(0, 3)) == 0:         # a column reduction: the last dim kept
        shape = shape[::-1]
    attrs = {"keepdims": data.draw(st.sampled_from([0, 1]))}
    check(debug_dev, op, SampleCase("sweep", (shape, (len(axes),)), attrs,
                                    values={"axes": axes}), dtype)
