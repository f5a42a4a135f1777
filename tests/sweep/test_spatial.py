"""Conv, ConvTranspose, the pools, Resize and TransData over their boundaries: channels at
C0 edges (16 halves, 8 floats), spatial sizes at block edges, kernels, strides, pads and
dilations; depthwise groups; Resize's modes and scales; TransData's fractal tails."""

from hypothesis import assume, given
from hypothesis import strategies as st

from ixl.hixl import SampleCase

from .space import check, dim, dtype_of, fits, near, small_edges, sweep_settings


def _window(data, rank: int, name: str) -> dict:
    kernel = [data.draw(st.integers(1, 5), label=f"{name} kernel") for _ in range(rank)]
    attrs = {"kernel_shape": kernel,
             "strides": [data.draw(st.integers(1, 3), label="stride") for _ in range(rank)]}
    if data.draw(st.booleans()):
        pads = [data.draw(st.integers(0, k - 1), label="pad") for k in kernel * 2]
        attrs["pads"] = pads
    return attrs


@given(data=st.data())
@sweep_settings()
def test_conv_shapes(debug_dev, data):
    op = data.draw(st.sampled_from(["Conv", "ConvTranspose"]), label="op")
    dtype = dtype_of(data, op)
    rank = data.draw(st.integers(1, 2), label="spatial rank")
    n = data.draw(dim(near(1), 2), label="n")
    c = data.draw(dim(near(1, 8, 16, 32), 40), label="c")
    m = data.draw(dim(near(1, 8, 16, 32), 40), label="m")
    group = c if data.draw(st.integers(0, 4)) == 0 and op == "Conv" else 1
    if group > 1:
        m = c * data.draw(st.integers(1, 2), label="multiplier")
    hw = tuple(data.draw(dim(near(1, 7, 16, 33), 48), label="hw") for _ in range(rank))
    attrs = _window(data, rank, op)
    kernel = attrs.pop("kernel_shape")
    if data.draw(st.booleans()):
        attrs["dilations"] = [data.draw(st.integers(1, 2), label="dilation") for _ in kernel]
    if op == "ConvTranspose":
        w = (c, m) + tuple(kernel)
        if data.draw(st.booleans()):
            attrs["output_padding"] = [data.draw(st.integers(0, s - 1), label="output pad")
                                       for s in attrs["strides"]]
    else:
        w = (m, c // group) + tuple(kernel)
        attrs["group"] = group
    x = (n, c) + hw
    assume(fits(x, w, limit=1 << 17))
    shapes = (x, w, (w[1] if op == "ConvTranspose" else m,)) if data.draw(st.booleans()) \
        else (x, w)
    check(debug_dev, op, SampleCase("sweep", shapes, attrs), dtype)


@given(data=st.data())
@sweep_settings()
def test_pool_shapes(debug_dev, data):
    op = data.draw(st.sampled_from(["MaxPool", "AveragePool", "GlobalAveragePool",
                                    "GlobalMaxPool"]), label="op")
    dtype = dtype_of(data, op)
    rank = data.draw(st.integers(1, 2), label="spatial rank")
    x = (data.draw(dim(near(1), 3), label="n"), data.draw(dim(near(1, 16), 40), label="c")) \
        + tuple(data.draw(dim(small_edges(dtype), 130), label="hw") for _ in range(rank))
    assume(fits(x, limit=1 << 18))
    attrs = {} if op.startswith("Global") else _window(data, rank, op)
    if op == "AveragePool" and data.draw(st.booleans()):
        attrs["count_include_pad"] = 1
    if not op.startswith("Global") and data.draw(st.integers(0, 3)) == 0:
        attrs["ceil_mode"] = 1
    check(debug_dev, op, SampleCase("sweep", (x,), attrs), dtype)


@given(data=st.data())
@sweep_settings()
def test_resize_shapes(debug_dev, data):
    dtype = dtype_of(data, "Resize")
    x = (1, data.draw(dim(near(1, 3, 16), 20), label="c"),
         data.draw(dim(near(1, 16, 32), 70), label="h"),
         data.draw(dim(small_edges(dtype), 140), label="w"))
    mode = data.draw(st.sampled_from(["nearest", "linear", "cubic"]), label="mode")
    attrs = {"mode": mode, "coordinate_transformation_mode": data.draw(st.sampled_from(
        ["half_pixel", "asymmetric", "align_corners", "pytorch_half_pixel"]), label="ctm")}
    if data.draw(st.booleans()):
        scales = [1.0, 1.0] + [data.draw(st.sampled_from([0.5, 1.0, 1.5, 2.0, 3.0]),
                                         label="scale") for _ in range(2)]
        sizes = [int(d * s) for d, s in zip(x, scales)]
        case = SampleCase("sweep", (x, None, (4,)), attrs, values={"scales": scales})
    else:
        sizes = list(x[:2]) + [data.draw(st.integers(1, 2 * d + 3), label="size") for d in x[2:]]
        case = SampleCase("sweep", (x, None, None, (4,)), attrs, values={"sizes": sizes})
    assume(min(sizes) > 0 and fits(x, sizes, limit=1 << 18))
    check(debug_dev, "Resize", case, dtype)


@given(data=st.data())
@sweep_settings()
def test_transdata_shapes(debug_dev, data):
    dtype = dtype_of(data, "TransData")
    fmt = data.draw(st.sampled_from(["FRACTAL_NZ", "NC1HWC0"]), label="format")
    if fmt == "FRACTAL_NZ":
        x = tuple(data.draw(dim(near(1, 16, 32, 48), 300), label="d")
                  for _ in range(data.draw(st.integers(2, 3), label="rank")))
    else:
        x = (data.draw(dim(near(1), 3), label="n"), data.draw(dim(near(1, 8, 16, 32), 40)),
             data.draw(dim(near(1, 16), 40), label="h"), data.draw(dim(near(1, 16), 40)))
    assume(fits(x, limit=1 << 18))
    check(debug_dev, "TransData", SampleCase("sweep", (x,), {"dst_format": fmt}), dtype)
