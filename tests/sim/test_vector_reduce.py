"""Block reductions (BlockReduceSum/Max/Min): one result per 32-byte block, masks, strides, cost."""

import numpy as np
import pytest

from ixl.ascend import lang as asc
from ixl.ascend.errors import AicoreOutOfBound
from tests.helpers import ub_tensor


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize("name, fn", [("sum", np.sum), ("max", np.max), ("min", np.min)])
def test_one_result_per_block(core, dtype, name, fn):
    lanes = 256 // np.dtype(dtype).itemsize
    blk = 32 // np.dtype(dtype).itemsize
    data = np.random.default_rng(0).uniform(-4, 4, 3 * lanes).astype(dtype)
    src = ub_tensor(core, dtype, 3 * lanes, data)
    dst = ub_tensor(core, dtype, 24, 0)
    getattr(asc, f"block_reduce_{name}")(dst, src, lanes, 3)
    want = fn(data.astype(np.float32).reshape(24, blk), axis=1).astype(dtype)
    np.testing.assert_allclose(dst.numpy().astype(np.float32), want.astype(np.float32),
                               rtol=1e-3 if dtype == np.float16 else 1e-6)


def test_masked_lanes_take_no_part_and_empty_blocks_keep_their_value(core):
    src = ub_tensor(core, np.float32, 64, np.arange(64))
    dst = ub_tensor(core, np.float32, 8, -1)
    asc.block_reduce_sum(dst, src, 12, 1)        # lanes 0..11: block 0 whole, block 1 half
    np.testing.assert_array_equal(dst.numpy(), [28, 8 + 9 + 10 + 11, -1, -1, -1, -1, -1, -1])


def test_dst_rep_stride_counts_one_repeats_results(core):
    src = ub_tensor(core, np.float32, 128, 1)
    dst = ub_tensor(core, np.float32, 24, 0)
    asc.block_reduce_max(dst, src, 64, 2, dst_rep_stride=2)
    np.testing.assert_array_equal(dst.numpy(), [1] * 8 + [0] * 8 + [1] * 8)


def test_dst_overrun_is_an_out_of_bound_error(core):
    src = ub_tensor(core, np.float32, 128, 1)
    dst = ub_tensor(core, np.float32, 8, 0)
    with pytest.raises(AicoreOutOfBound):
        asc.block_reduce_sum(dst, src, 64, 2)


def test_cost_is_the_simple_rate_in_float32_and_the_reduce_rate_in_float16(core):
    def cycles(dtype, fn):
        n = 32 * 256 // np.dtype(dtype).itemsize
        a = ub_tensor(core, dtype, n, 1)
        d = ub_tensor(core, dtype, n, 0)
        before = core.timeline.stats[asc.Pipe.V].busy - sum(core.bank_conflicts)
        fn(d, a, n)
        # the rates alone: d and a share UB banks, which costs an add (not modeled for the
        # reductions) a pass per repeat (tests/sim/test_ub_banks.py)
        return core.timeline.stats[asc.Pipe.V].busy - sum(core.bank_conflicts) - before

    lanes32, lanes16 = 64, 128
    add32 = cycles(np.float32, lambda d, a, n: asc.add(d, a, a, n))
    block32 = cycles(np.float32, lambda d, a, n: asc.block_reduce_sum(d, a, lanes32, n // lanes32))
    whole16 = cycles(np.float16, lambda d, a, n: asc.whole_reduce_sum(d, a, lanes16, n // lanes16))
    block16 = cycles(np.float16, lambda d, a, n: asc.block_reduce_sum(d, a, lanes16, n // lanes16))
    # differences of a running float sum: equal up to its rounding
    assert block32 == pytest.approx(add32)
    assert block16 == pytest.approx(whole16) and whole16 > block32
