"""Vector instruction semantics: mask, repeat, strides, count form, cast round modes."""

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ixl.ascend import lang as asc
from ixl.ascend.errors import IllegalInstruction
from ixl.ascend.vector import RoundMode, round_to
from tests.helpers import ub_tensor


def test_continuous_mask_leaves_masked_lanes_untouched(core):
    a = ub_tensor(core, np.float16, 256, np.arange(256) % 7)
    b = ub_tensor(core, np.float16, 256, 1)
    d = ub_tensor(core, np.float16, 256, -5)
    asc.add(d, a, b, 100, 2, asc.BinaryRepeatParams())    # 100 of 128 lanes, 2 repeats
    got = d.numpy()
    want = np.full(256, -5, np.float16)
    for r in range(2):
        want[r * 128:r * 128 + 100] = (np.arange(r * 128, r * 128 + 100) % 7) + 1
    np.testing.assert_array_equal(got, want)


def test_bitwise_mask_selects_lanes_lsb_first(core):
    a = ub_tensor(core, np.float32, 64, np.arange(64))
    d = ub_tensor(core, np.float32, 64, 0)
    asc.muls(d, a, 2.0, [0b1011, 0], 1)
    want = np.zeros(64, np.float32)
    want[[0, 1, 3]] = [0, 2, 6]
    np.testing.assert_array_equal(d.numpy(), want)


def test_repeat_zero_is_a_noop_that_still_costs_time(core):
    a = ub_tensor(core, np.float32, 64, 3)
    d = ub_tensor(core, np.float32, 64, 9)
    before = core.timeline.stats[asc.Pipe.V].count
    asc.add(d, a, a, 64, 0, asc.BinaryRepeatParams())
    assert (d.numpy() == 9).all()
    assert core.timeline.stats[asc.Pipe.V].count == before + 1


def test_block_and_repeat_strides(core):
    # src block stride 2: each repeat reads every other 32-byte block.
    src = ub_tensor(core, np.float32, 256, np.arange(256))
    dst = ub_tensor(core, np.float32, 64, 0)
    asc.abs(dst, src, 64, 1, asc.UnaryRepeatParams(dst_blk_stride=1, src_blk_stride=2,
                                                    dst_rep_stride=8, src_rep_stride=16))
    want = np.concatenate([np.arange(k * 16, k * 16 + 8) for k in range(8)])
    np.testing.assert_array_equal(dst.numpy(), want)


def test_src_block_stride_zero_rereads_the_first_block(core):
    src = ub_tensor(core, np.float16, 128, np.arange(128))
    dst = ub_tensor(core, np.float16, 128, 0)
    asc.relu(dst, src, 128, 1, asc.UnaryRepeatParams(src_blk_stride=0))
    np.testing.assert_array_equal(dst.numpy(), np.tile(np.arange(16), 8))


def test_count_form_handles_any_count(core):
    a = ub_tensor(core, np.float16, 1000, np.linspace(-3, 3, 1000))
    d = ub_tensor(core, np.float16, 1000, 0)
    asc.exp(d, a, 999)
    want = np.exp(np.linspace(-3, 3, 1000).astype(np.float16).astype(np.float32)).astype(np.float16)
    np.testing.assert_array_equal(d.numpy()[:999], want[:999])
    assert d.numpy()[999] == 0


def test_whole_reduce_sum_and_max_one_value_per_repeat(core):
    src = ub_tensor(core, np.float32, 192, np.arange(192) % 10)
    s = ub_tensor(core, np.float32, 8, -1)
    m = ub_tensor(core, np.float32, 8, -1)
    asc.whole_reduce_sum(s, src, 64, 3)
    asc.whole_reduce_max(m, src, 10, 3)
    x = (np.arange(192) % 10).reshape(3, 64)
    np.testing.assert_array_equal(s.numpy()[:3], x.sum(axis=1))
    np.testing.assert_array_equal(m.numpy()[:3], x[:, :10].max(axis=1))
    assert (s.numpy()[3:] == -1).all()


def test_duplicate_and_scalar_ops(core):
    d = ub_tensor(core, np.int32, 64, 0)
    asc.duplicate(d, 7, 64)
    asc.adds(d, d, 5, 64)
    assert (d.numpy() == 12).all()


def test_cast_path_that_the_chip_lacks(core):
    a = ub_tensor(core, np.float16, 64, 1)
    d = ub_tensor(core, ml_dtypes.bfloat16, 64, 0)
    with pytest.raises(IllegalInstruction, match=r"cast from float16 to bfloat16 has no path"):
        asc.cast(d, a, RoundMode.CAST_RINT, 64)


def test_cast_rejects_round_mode_outside_the_table(core):
    a = ub_tensor(core, np.float16, 64, 1)
    d = ub_tensor(core, np.float32, 64, 0)
    with pytest.raises(IllegalInstruction, match=r"float16->float32 does not take CAST_FLOOR"):
        asc.cast(d, a, RoundMode.CAST_FLOOR, 64)


finite32 = st.floats(min_value=-60000, max_value=60000, width=32, allow_nan=False)


@settings(max_examples=200, deadline=None)
@given(finite32)
def test_round_modes_bracket_the_value(x):
    x64 = np.float64(x)
    f = lambda m: float(round_to(np.array([x]), np.dtype(np.float16), m)[0])  # noqa: E731
    lo, hi = f(RoundMode.CAST_FLOOR), f(RoundMode.CAST_CEIL)
    assert lo <= x64 <= hi
    assert f(RoundMode.CAST_TRUNC) in (lo, hi) and abs(f(RoundMode.CAST_TRUNC)) <= abs(x64)
    nearest = f(RoundMode.CAST_RINT)
    assert nearest == float(np.float16(x))
    r = f(RoundMode.CAST_ROUND)
    assert abs(r - x64) <= abs(nearest - x64)
    odd = f(RoundMode.CAST_ODD)
    if lo == hi:
        assert odd == x64
    else:
        assert int(np.float16(odd).view(np.uint16)) & 1 == 1


def test_round_half_away_from_zero_on_ties():
    # 2049 lies exactly between the float16 neighbours 2048 and 2050.
    xs = np.array([2049.0, -2049.0, 2051.0])
    np.testing.assert_array_equal(round_to(xs, np.dtype(np.float16), RoundMode.CAST_ROUND),
                                  [2050, -2050, 2052])
    np.testing.assert_array_equal(round_to(xs, np.dtype(np.float16), RoundMode.CAST_RINT),
                                  [2048, -2048, 2052])


def test_float_to_int_round_modes_saturate():
    xs = np.array([2.5, -2.5, 1e10, -1e10])
    np.testing.assert_array_equal(round_to(xs, np.dtype(np.int32), RoundMode.CAST_ROUND),
                                  [3, -3, 2**31 - 1, -2**31])
    np.testing.assert_array_equal(round_to(xs[:2], np.dtype(np.int32), RoundMode.CAST_RINT),
                                  [2, -2])
