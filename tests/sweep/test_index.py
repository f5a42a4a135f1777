"""Gather, GatherElements, GatherND and ScatterND over their boundaries: row lengths at block
edges (a row move of one element to many blocks), tables longer than UB, every axis, indices of
one element to many rows, ScatterND's reductions."""

from hypothesis import assume, given
from hypothesis import strategies as st

from ixl.hixl import SampleCase

from .space import check, dim, dtype_of, fits, near, small_edges, sweep_settings


def _data(data, dtype: str, rank_lo: int = 1) -> tuple[int, ...]:
    rank = data.draw(st.integers(rank_lo, 3), label="rank")
    dims = [data.draw(dim(near(1, 2, 16, 48, 100), 200), label="d") for _ in range(rank - 1)]
    last = data.draw(dim(small_edges(dtype) + near(576, 4096), 9000), label="row")
    shape = tuple(dims) + (last,)
    assume(fits(shape))
    return shape


@given(data=st.data())
@sweep_settings()
def test_gather_shapes(debug_dev, data):
    op = data.draw(st.sampled_from(["Gather", "GatherElements", "GatherND"]), label="op")
    dtype = dtype_of(data, op)
    x = _data(data, dtype)
    rank = len(x)
    if op == "Gather":
        axis = data.draw(st.integers(-rank, rank - 1), label="axis")
        indices = tuple(data.draw(dim(near(1, 16, 32), 64), label="i")
                        for _ in range(data.draw(st.integers(0, 2), label="indices rank")))
        case = SampleCase("sweep", (x, indices), {"axis": axis})
    elif op == "GatherElements":
        axis = data.draw(st.integers(-rank, rank - 1), label="axis")
        indices = tuple(data.draw(st.integers(1, d), label="i") if i == axis % rank
                        else d for i, d in enumerate(x))
        case = SampleCase("sweep", (x, indices), {"axis": axis})
    else:
        depth = data.draw(st.integers(1, rank), label="index depth")
        lookups = tuple(data.draw(dim(near(1, 16), 40), label="i")
                        for _ in range(data.draw(st.integers(1, 2), label="lookup rank")))
        case = SampleCase("sweep", (x, lookups + (depth,)))
    check(debug_dev, op, case, dtype)


@given(data=st.data())
@sweep_settings()
def test_scatter_shapes(debug_dev, data):
    dtype = dtype_of(data, "ScatterND")
    x = _data(data, dtype)
    depth = data.draw(st.integers(1, len(x)), label="index depth")
    updates = data.draw(dim(near(1, 16), 40), label="updates")
    assume(updates <= x[0])
    reduction = data.draw(st.sampled_from(["none", "add", "mul", "max", "min"]))
    check(debug_dev, "ScatterND", SampleCase(
        "sweep", (x, (updates, depth), (updates,) + x[depth:]), {"reduction": reduction}), dtype)
