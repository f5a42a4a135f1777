"""Sort, TopK, ArgMax and ArgMin over their boundaries: rows at Sort32's 32 and the merge
sort's 4-way edges, rows longer than UB, every axis, k from 1 to the whole row, ties
(select_last_index)."""

from hypothesis import assume, given
from hypothesis import strategies as st

from ixl.hixl import SampleCase

from .space import check, dim, dtype_of, fits, near, sweep_settings

ROW_EDGES = near(1, 32, 64, 128, 512, 2048, 4096, 8192)


@given(data=st.data())
@sweep_settings()
def test_sort_shapes(debug_dev, data):
    op = data.draw(st.sampled_from(["Sort", "TopK", "ArgMax", "ArgMin"]), label="op")
    dtype = dtype_of(data, op)
    rank = data.draw(st.integers(1, 3), label="rank")
    x = tuple(data.draw(dim(ROW_EDGES, 10000) if i == rank - 1 else dim(near(1, 2, 8), 20),
                        label="d") for i in range(rank))
    assume(fits(x, limit=1 << 17))
    axis = -1 if data.draw(st.integers(0, 2)) else data.draw(st.integers(-rank, rank - 1))
    if op == "Sort":
        case = SampleCase("sweep", (x,), {"axis": axis,
                                          "descending": data.draw(st.sampled_from([0, 1]))})
    elif op == "TopK":
        k = data.draw(st.one_of(st.sampled_from([1, x[axis]]), st.integers(1, x[axis])),
                      label="k")
        case = SampleCase("sweep", (x, (1,)), {"axis": axis, "largest": data.draw(
            st.sampled_from([0, 1])), "sorted": 1}, values={"k": [k]})
    else:
        case = SampleCase("sweep", (x,), {"axis": axis, "keepdims": data.draw(
            st.sampled_from([0, 1])), "select_last_index": data.draw(st.sampled_from([0, 1]))})
    check(debug_dev, op, case, dtype)
