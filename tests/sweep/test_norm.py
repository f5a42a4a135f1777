"""Softmax, LogSoftmax and the normalisations over their boundaries: the normalised length at
block and repeat edges and where a row stops fitting UB (resident -> streamed), any axis
(LayerNorm and RMSNorm normalise every dim from it on), scale and bias present or not; the
channel norms (Batch, Instance, Group) over channel counts, spatial sizes and groups."""

from hypothesis import assume, given
from hypothesis import strategies as st

from ixl.hixl import SampleCase

from .space import check, dim, dtype_of, fits, near, small_edges, sweep_settings
from .test_reduce import length_edges

AXIS_OPS = ("Softmax", "LogSoftmax", "LayerNormalization", "RMSNormalization")


@given(data=st.data())
@sweep_settings()
def test_axis_norm_shapes(debug_dev, data):
    op = data.draw(st.sampled_from(AXIS_OPS), label="op")
    dtype = dtype_of(data, op)
    edges = length_edges(op, dtype, (("axis", -1),))
    rank = data.draw(st.integers(1, 4), label="rank")
    shape = tuple(data.draw(dim(edges, 3 * max(edges)) if i == rank - 1
                            else dim(near(1, 2, 16, 48), 64), label="dim") for i in range(rank))
    assume(fits(shape))
    axis = data.draw(st.integers(-rank, rank - 1), label="axis")
    shapes: tuple = (shape,)
    if op in ("LayerNormalization", "RMSNormalization"):
        params = 1 + (op == "LayerNormalization" and data.draw(st.booleans()))
        normalised = shape[axis:]
        param = normalised[data.draw(st.integers(0, len(normalised) - 1)):] \
            if data.draw(st.booleans()) else normalised     # broadcast from a suffix
        shapes += (param,) * params
    check(debug_dev, op, SampleCase("sweep", shapes, {"axis": axis}), dtype)


@given(data=st.data())
@sweep_settings()
def test_channel_norm_shapes(debug_dev, data):
    op = data.draw(st.sampled_from(["BatchNormalization", "InstanceNormalization",
                                    "GroupNormalization"]), label="op")
    dtype = dtype_of(data, op)
    n = data.draw(dim(near(1, 2), 4), label="n")
    c = data.draw(dim(near(1, 16, 32, 64), 96), label="c")
    spatial = tuple(data.draw(dim(small_edges(dtype) + near(56, 224), 300), label="hw")
                    for _ in range(data.draw(st.integers(0 if op == "BatchNormalization"
                                                         else 1, 3), label="spatial rank")))
    x = (n, c) + spatial
    assume(fits(x))
    attrs = {}
    if op == "GroupNormalization":
        groups = [g for g in range(1, c + 1) if c % g == 0]
        attrs["num_groups"] = data.draw(st.sampled_from(groups), label="groups")
    params = 4 if op == "BatchNormalization" else 2
    check(debug_dev, op, SampleCase("sweep", (x,) + ((c,),) * params, attrs), dtype)
