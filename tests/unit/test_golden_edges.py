"""Goldens at their edges: Conv in 1-D is the 2-D golden over a height of one, and Cast from
floats to int32 saturates exactly as the chip's conversion does."""

import math

import numpy as np
import pytest

from ixl.ascend.vector import RoundMode, round_to
from ixl.hixl import get_op
from ixl.hixl.dtypes import to_numpy


def _as_2d(attrs: dict) -> dict:
    """The same convolution over (1, L): height 1, no padding, stride and dilation 1 in H."""
    out = dict(attrs)
    for name in ("strides", "dilations", "kernel_shape"):
        if out.get(name) is not None:
            out[name] = [1, *out[name]]
    if out.get("pads") is not None:
        begin, end = out["pads"]
        out["pads"] = [0, begin, 0, end]
    return out


ONE_D = [c for c in get_op("Conv").samples if c.note.startswith("1-D")]


@pytest.mark.parametrize("case", ONE_D, ids=[c.note for c in ONE_D])
def test_conv_1d_is_conv_2d_over_a_height_of_one(case):
    conv = get_op("Conv")
    rng = np.random.default_rng(0)
    arrays = [rng.uniform(-1, 1, s).astype(np.float32) for s in case.shapes]
    (y,) = conv.reference(*arrays, **case.attrs)
    lifted = [arrays[0][:, :, None, :], arrays[1][:, :, None, :], *arrays[2:]]
    (y2,) = conv.reference(*lifted, **_as_2d(case.attrs))
    assert y.shape == y2.shape[:2] + y2.shape[3:]
    np.testing.assert_allclose(y, y2[:, :, 0, :], rtol=1e-6, atol=1e-6)


def test_conv_1d_by_hand():
    x = np.arange(6, dtype=np.float32).reshape(1, 1, 6)
    w = np.array([[[1.0, 0.0, -1.0]]], np.float32)
    (y,) = get_op("Conv").reference(x, w, strides=[2], pads=[1, 1])
    # padded x: 0 0 1 2 3 4 5 0; windows at 0, 2, 4: x[i] - x[i+2]
    np.testing.assert_array_equal(y, [[[-1.0, -2.0, -2.0]]])


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32"])
def test_cast_to_int32_saturates_as_the_chip_converts(dtype):
    values = [math.nan, math.inf, -math.inf, 2.7, -2.7, 0.5, -0.0, 65504.0, -65504.0]
    if dtype != "float16":
        values += [3e9, -3e9, 2147483520.0, -2147483648.0, 1e38]
    x = np.array(values, np.float32).astype(to_numpy(dtype))
    (golden,) = get_op("Cast").reference(x, to="int32")
    chip = round_to(x.astype(np.float32), np.dtype(np.int32), RoundMode.CAST_TRUNC)
    np.testing.assert_array_equal(golden, chip)
    assert golden[0] == 0 and golden[1] == 2**31 - 1 and golden[2] == -2**31


def test_cast_between_floats_is_unchanged():
    x = np.array([math.nan, math.inf, 1.5], np.float32)
    (y,) = get_op("Cast").reference(x, to="float16")
    assert np.isnan(y[0]) and y[1] == np.inf and y[2] == 1.5 and y.dtype == np.float16
