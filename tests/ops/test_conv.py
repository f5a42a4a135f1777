"""Tier B: Conv and ConvTranspose on the Cube through NC1HWC0 and img2col, natively, against
their goldens (hypothesis over geometries and dtypes, debug mode); the fused ReLU; the
ResNet-like layer's profile. Every sample case runs natively in test_sample_cases.py."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ixl
from ixl.hixl import ArgSpec, get_op, to_numpy
from ixl.nixl import Graph
from ixl.profile.metrics import launch_metrics
from ixl.verify.compare import compare
from tests.helpers import run_arrays


@pytest.fixture(scope="module")
def dev():
    d = ixl.device("910B1", debug=True)
    yield d
    assert d.close() == []


def _check(dev, op, arrays, attrs, dtype):
    """Run natively or not, compare with the golden; returns the run record."""
    (got,), rec = run_arrays(dev, op, arrays, **attrs)
    schema = get_op(op)
    bound = schema.check([ArgSpec(a.shape, dtype) for a in arrays], attrs)
    c = compare(got, schema.reference(*arrays, **bound)[0], schema.tolerance(dtype))
    assert c.ok, c.summary()
    return rec


def _inputs(rng, dtype, *shapes):
    return [rng.uniform(-1, 1, s).astype(to_numpy(dtype)) for s in shapes]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_conv_is_native_over_geometries_and_dtypes(dev, data):
    dtype = data.draw(st.sampled_from(["float16", "bfloat16", "float32"]))
    rank = data.draw(st.sampled_from([1, 2]))
    groups = data.draw(st.sampled_from([1, 1, 2, 3]))
    cin, cout = groups * data.draw(st.integers(1, 7)), groups * data.draw(st.integers(1, 5))
    dims = [data.draw(st.integers(1, 11)) for _ in range(rank)]
    kernel = [data.draw(st.integers(1, 4)) for _ in range(rank)]
    strides = [data.draw(st.integers(1, 3)) for _ in range(rank)]
    dilations = [data.draw(st.integers(1, 2)) for _ in range(rank)]
    pads = [data.draw(st.integers(0, 2)) for _ in range(2 * rank)]
    if any(d + p0 + p1 < (k - 1) * dl + 1 for d, p0, p1, k, dl in
           zip(dims, pads[:rank], pads[rank:], kernel, dilations)):
        kernel = [1] * rank
    n = data.draw(st.integers(1, 2))
    bias = data.draw(st.booleans())
    rng = np.random.default_rng(data.draw(st.integers(0, 99)))
    arrays = _inputs(rng, dtype, (n, cin, *dims), (cout, cin // groups, *kernel),
                     *([(cout,)] if bias else []))
    attrs = {"group": groups, "strides": strides, "dilations": dilations, "pads": pads}
    rec = _check(dev, "Conv", arrays, attrs, dtype)
    assert rec.path == "native", rec.reason
    assert rec.launch.kind.value == "mix"


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_conv_transpose_is_native_over_geometries_and_dtypes(dev, data):
    dtype = data.draw(st.sampled_from(["float16", "bfloat16", "float32"]))
    rank = data.draw(st.sampled_from([1, 2]))
    groups = data.draw(st.sampled_from([1, 2]))
    cin, cout = groups * data.draw(st.integers(1, 5)), data.draw(st.integers(1, 4))
    dims = [data.draw(st.integers(1, 7)) for _ in range(rank)]
    kernel = [data.draw(st.integers(1, 3)) for _ in range(rank)]
    strides = [data.draw(st.integers(1, 3)) for _ in range(rank)]
    extra = [data.draw(st.integers(0, s - 1)) for s in strides]
    full = [s * (n - 1) + e + k for n, s, e, k in zip(dims, strides, extra, kernel)]
    begin = [data.draw(st.integers(0, min(k - 1, f - 1))) for k, f in zip(kernel, full)]
    end = [data.draw(st.integers(0, min(k - 1, f - 1 - b))) for k, f, b in
           zip(kernel, full, begin)]          # at least one output position
    pads = begin + end
    rng = np.random.default_rng(data.draw(st.integers(0, 99)))
    arrays = _inputs(rng, dtype, (1, cin, *dims), (cin, cout, *kernel), (cout * groups,))
    attrs = {"group": groups, "strides": strides, "pads": pads, "output_padding": extra}
    rec = _check(dev, "ConvTranspose", arrays, attrs, dtype)
    assert rec.path == "native", rec.reason


def test_a_conv_transpose_cropped_to_nothing_is_empty_on_the_shim(dev):
    rng = np.random.default_rng(0)
    arrays = _inputs(rng, "float16", (1, 2, 1, 1), (2, 3, 2, 2))
    rec = _check(dev, "ConvTranspose", arrays, {"pads": [1, 1, 1, 1]}, "float16")
    assert rec.path == "shim" and "no output positions" in rec.reason


def test_a_depthwise_conv_runs_natively(dev):
    rng = np.random.default_rng(0)
    arrays = _inputs(rng, "float16", (1, 24, 9, 9), (24, 1, 3, 3), (24,))
    rec = _check(dev, "Conv", arrays, {"group": 24, "pads": [1, 1, 1, 1]}, "float16")
    assert rec.path == "native"


def test_a_3d_conv_transpose_says_it_runs_on_the_shim(dev):
    rng = np.random.default_rng(0)
    arrays = _inputs(rng, "float16", (1, 2, 3, 3, 3), (2, 2, 2, 2, 2))
    rec = _check(dev, "ConvTranspose", arrays, {}, "float16")
    assert rec.path == "shim" and "1-D and 2-D" in rec.reason


@pytest.mark.parametrize("op", ["Conv", "ConvTranspose"])
def test_a_following_relu_runs_in_the_fixpipe(dev, op):
    g = Graph(inputs=["x", "w", "b"], outputs=["y"])
    g.add("Relu", g.add(op, "x", "w", "b", pads=[1, 1, 1, 1]), outputs=("y",))
    rng = np.random.default_rng(1)
    x, w, b = _inputs(rng, "float16", (1, 8, 10, 10), (8, 8, 3, 3), (8,))
    y = dev.run_graph(g, {"x": x, "w": w, "b": b}, fuse=True)["y"]
    runs = dev.last_graph.runs
    assert [r.op for r in runs] == [f"Fused[{op}+Relu]"] and runs[0].path == "native"
    ref = np.maximum(get_op(op).reference(x, w, b, pads=[1, 1, 1, 1])[0], 0)
    assert compare(y.numpy(), ref, get_op(op).tolerance("float16")).ok
    y.free()


@pytest.mark.slow
def test_a_resnet_layer_profiles_its_cube_utilisation():
    """N=1, C=K=256, 56 x 56, 3 x 3, float16 (timing only): the modeled Cube utilisation the
    README reports, consistent with the Mmads' work over the launch's time."""
    dev = ixl.device("910B1", timing_only=True)
    x, w = dev.empty((1, 256, 56, 56), "float16"), dev.empty((256, 256, 3, 3), "float16")
    y = dev.run("Conv", x, w, pads=[1, 1, 1, 1])
    rec = dev.last_profile
    m = launch_metrics(rec.launch).values
    flops = 2 * 56 * 56 * 256 * 256 * 9
    assert rec.path == "native" and m["kernel_type"] == "mix"
    assert m["cube_tflops"] >= flops / (rec.time_us * 1e-6) / 1e12 * 0.99   # padding counts
    assert 0 < m["cube_util"] < 1
    for t in (x, w, y):
        t.free()
    dev.close()
