"""The row-move ops and Transpose over their boundaries: rows at block edges, every
permutation, several inputs and parts along every axis, slices with steps of either sign,
Expand, Pad (constant, edge, reflect), Tile."""

from hypothesis import assume, given
from hypothesis import strategies as st

from ixl.hixl import SampleCase

from .space import check, dim, dtype_of, fits, near, small_edges, sweep_settings


def _shape(data, dtype: str, rank_lo: int = 1, rank_hi: int = 4) -> tuple[int, ...]:
    rank = data.draw(st.integers(rank_lo, rank_hi), label="rank")
    shape = tuple(data.draw(dim(small_edges(dtype) if i == rank - 1 else near(1, 2, 16, 33),
                                600 if i == rank - 1 else 64), label="d")
                  for i in range(rank))
    assume(fits(shape, limit=1 << 18))
    return shape


@given(data=st.data())
@sweep_settings()
def test_transpose_shapes(debug_dev, data):
    dtype = dtype_of(data, "Transpose")
    x = _shape(data, dtype, 2)
    perm = data.draw(st.permutations(range(len(x))), label="perm")
    check(debug_dev, "Transpose", SampleCase("sweep", (x,), {"perm": list(perm)}), dtype)


@given(data=st.data())
@sweep_settings()
def test_concat_split_slice_shapes(debug_dev, data):
    op = data.draw(st.sampled_from(["Concat", "Split", "Slice"]), label="op")
    dtype = dtype_of(data, op)
    x = _shape(data, dtype)
    rank = len(x)
    axis = data.draw(st.integers(-rank, rank - 1), label="axis")
    if op == "Concat":
        others = [x[:axis % rank] + (data.draw(dim(near(1, 16), 40), label="part"),)
                  + x[axis % rank + 1:] for _ in range(data.draw(st.integers(0, 3)))]
        case = SampleCase("sweep", tuple([x] + others), {"axis": axis})
    elif op == "Split":
        length = x[axis]
        cuts = sorted(data.draw(st.lists(st.integers(0, length), max_size=3), label="cuts"))
        parts = [b - a for a, b in zip([0] + cuts, cuts + [length])]
        case = SampleCase("sweep", (x, (len(parts),)), {"axis": axis},
                          values={"split": parts})
    else:
        length = x[axis]
        step = data.draw(st.sampled_from([1, 1, 2, 3, -1, -2]), label="step")
        start = data.draw(st.integers(-length - 2, length + 2), label="start")
        end = data.draw(st.integers(-length - 2, length + 2), label="end")
        case = SampleCase("sweep", (x, (1,), (1,), (1,), (1,)), values={
            "starts": [start], "ends": [end], "axes": [axis], "steps": [step]})
    check(debug_dev, op, case, dtype)


@given(data=st.data())
@sweep_settings()
def test_expand_pad_tile_shapes(debug_dev, data):
    op = data.draw(st.sampled_from(["Expand", "Pad", "Tile"]), label="op")
    dtype = dtype_of(data, op)
    x = _shape(data, dtype, 1, 3)
    rank = len(x)
    if op == "Expand":
        target = [d if d != 1 else data.draw(dim(near(1, 16), 40), label="to") for d in x]
        target = [data.draw(st.sampled_from([1, 2, 3]), label="lead")
                  for _ in range(data.draw(st.integers(0, 1)))] + target
        assume(fits(target, limit=1 << 18))
        case = SampleCase("sweep", (x, (len(target),)), values={"shape": target})
    elif op == "Pad":
        mode = data.draw(st.sampled_from(["constant", "edge", "reflect"]), label="mode")
        lo = -1 if mode == "constant" else 0
        pads = [data.draw(st.integers(max(lo, -d + 1) if lo < 0 else 0,
                                      min(3, d - 1) if mode == "reflect" else 17), label="pad")
                for d in x + x]
        out = [d + a + b for d, a, b in zip(x, pads[:rank], pads[rank:])]
        assume(fits(out, limit=1 << 18) and min(out) > 0)
        case = SampleCase("sweep", (x, (2 * rank,)), {"mode": mode}, values={"pads": pads})
    else:
        repeats = [data.draw(st.integers(0, 3), label="repeat") for _ in x]
        assume(fits([d * r for d, r in zip(x, repeats)], limit=1 << 18))
        case = SampleCase("sweep", (x, (rank,)), values={"repeats": repeats})
    check(debug_dev, op, case, dtype)
