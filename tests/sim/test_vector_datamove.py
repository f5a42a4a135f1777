"""The data-movement and sort instructions: Gather, GatherMask, CreateVecIndex, TransDataTo5HD,
Sort32, MrgSort: semantics, the rules the chip enforces, and their cost rows."""

import ml_dtypes
import numpy as np
import pytest

from ixl.ascend import lang as asc
from ixl.ascend.errors import AicoreOutOfBound, IllegalInstruction
from ixl.ascend.vector_sort import PAIR_BYTES
from tests.helpers import ub_tensor


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.int32, ml_dtypes.bfloat16])
def test_gather_reads_byte_offsets(core, dtype):
    data = np.arange(64).astype(dtype)
    src = ub_tensor(core, dtype, 64, data)
    picks = np.array([5, 0, 63, 7, 7, 1, 2, 3], np.int64)
    itemsize = np.dtype(dtype).itemsize
    offs = ub_tensor(core, np.uint32, 8, picks * itemsize)
    dst = ub_tensor(core, dtype, 16, 0)
    asc.gather(dst, src, offs, 0, 8)
    np.testing.assert_array_equal(dst.numpy()[:8], data[picks])
    asc.gather(dst, src, offs, 2 * itemsize, 2)             # the base shifts every offset
    np.testing.assert_array_equal(dst.numpy()[:2], data[picks[:2] + 2])


def test_gather_past_ub_and_past_its_source_fault(core):
    src = ub_tensor(core, np.float32, 8, 1)
    dst = ub_tensor(core, np.float32, 8, 0)
    offs = ub_tensor(core, np.uint32, 8, 0)
    offs.view()[3] = 8 * 4                                  # one past src's 8 elements
    with pytest.raises(AicoreOutOfBound, match="local buffer overrun"):
        asc.gather(dst, src, offs, 0, 8)
    offs.view()[3] = 1 << 30
    with pytest.raises(AicoreOutOfBound, match="ub address out of bounds"):
        asc.gather(dst, src, offs, 0, 8)


def test_gather_refuses_aliasing_and_8_bit_elements(core):
    src = ub_tensor(core, np.float32, 16, 1)
    offs = ub_tensor(core, np.uint32, 8, 0)
    with pytest.raises(IllegalInstruction, match="aliasing"):
        asc.gather(src, src, offs, 0, 8)
    b = ub_tensor(core, np.uint8, 32, 0)
    with pytest.raises(IllegalInstruction, match="16- and 32-bit"):
        asc.gather(b, b, offs, 0, 8)


def test_gather_costs_five_elements_a_cycle(core):
    src = ub_tensor(core, np.float16, 1024, 0)
    offs = ub_tensor(core, np.uint32, 1000, 0)
    dst = ub_tensor(core, np.float16, 1024, 0)
    asc.gather(dst, src, offs, 0, 1000)
    start, end = core.timeline.last
    assert end - start == pytest.approx(core.costs.vector("gather", 2, 1000))
    assert core.costs.vector("gather", 2, 1000) - core.costs.vector("gather", 2, 0) == 200


@pytest.mark.parametrize("pattern, picked", [(1, [0, 2, 4, 6, 8]), (2, [1, 3, 5, 7, 9]),
                                             (3, [0, 4, 8]), (6, [3, 7]), (7, list(range(10)))])
def test_gather_mask_builtin_patterns(core, pattern, picked):
    src = ub_tensor(core, np.int32, 16, np.arange(16))
    dst = ub_tensor(core, np.int32, 16, -1)
    assert asc.gather_mask(dst, src, pattern, 10) == len(picked)
    np.testing.assert_array_equal(dst.numpy()[:len(picked)], picked)


def test_gather_mask_takes_the_low_words_of_int64(core):
    values = np.array([3, -2, 1 << 40, -(1 << 33)], np.int64)
    src = ub_tensor(core, np.int32, 8, values.view(np.int32))
    dst = ub_tensor(core, np.int32, 8, 0)
    asc.gather_mask(dst, src, 1, 8)
    np.testing.assert_array_equal(dst.numpy()[:4], values.astype(np.int32))


def test_create_vec_index(core):
    dst = ub_tensor(core, np.int32, 16, 0)
    asc.create_vec_index(dst, -3, 10)
    np.testing.assert_array_equal(dst.numpy()[:10], np.arange(10) - 3)


def _blocks(t, rows, pitch):
    return [t[r * pitch] for r in range(rows)]


def test_trans_data_to_5hd_b16_transposes_16_by_16_per_repeat(core):
    data = np.arange(16 * 32).reshape(16, 32).astype(np.float16)    # two 16 x 16 blocks
    src = ub_tensor(core, np.float16, 16 * 32, data.reshape(-1))
    dst = ub_tensor(core, np.float16, 32 * 16, 0)
    params = asc.TransDataTo5HDParams(repeat_times=2, src_rep_stride=1, dst_rep_stride=16)
    asc.trans_data_to_5hd(_blocks(dst, 16, 16), _blocks(src, 16, 32), params)
    np.testing.assert_array_equal(dst.numpy().reshape(32, 16), data.T)


def test_trans_data_to_5hd_b32_fills_destination_blocks_in_pairs(core):
    data = np.arange(16 * 8).reshape(16, 8).astype(np.float32)
    src = ub_tensor(core, np.float32, 128, data.reshape(-1))
    dst = ub_tensor(core, np.float32, 128, 0)
    asc.trans_data_to_5hd(_blocks(dst, 16, 8), _blocks(src, 16, 8), asc.TransDataTo5HDParams())
    np.testing.assert_array_equal(dst.numpy().reshape(8, 16), data.T)


def test_trans_data_to_5hd_with_one_repeat_still_adds_the_strides(core):
    data = np.arange(32 * 16).astype(np.float16)
    src = ub_tensor(core, np.float16, 32 * 16, data)
    dst = ub_tensor(core, np.float16, 32 * 16, 0)
    params = asc.TransDataTo5HDParams(repeat_times=1, src_rep_stride=16, dst_rep_stride=0)
    asc.trans_data_to_5hd(_blocks(dst, 16, 16), _blocks(src, 16, 16), params)
    want = data[256:].reshape(16, 16).T                     # the second 16 x 16 block
    np.testing.assert_array_equal(dst.numpy()[:256].reshape(16, 16), want)


def test_trans_data_to_5hd_refuses_aliasing_and_short_lists(core):
    t = ub_tensor(core, np.float16, 256, 0)
    with pytest.raises(IllegalInstruction, match="aliasing"):
        asc.trans_data_to_5hd(_blocks(t, 16, 16), _blocks(t, 16, 16), asc.TransDataTo5HDParams())
    with pytest.raises(IllegalInstruction, match="16 destination"):
        asc.trans_data_to_5hd(_blocks(t, 8, 16), _blocks(t, 16, 16), asc.TransDataTo5HDParams())


def _decode(pairs: np.ndarray, score_dtype) -> tuple[np.ndarray, np.ndarray]:
    raw = pairs.reshape(-1, PAIR_BYTES)
    scores = raw[:, :np.dtype(score_dtype).itemsize].copy().view(score_dtype).reshape(-1)
    return scores, raw[:, 4:].copy().view(np.uint32).reshape(-1)


@pytest.mark.parametrize("dtype", [np.float16, np.float32])
def test_sort32_sorts_each_repeat_descending_ties_by_position(core, dtype):
    rng = np.random.default_rng(1)
    vals = (rng.integers(-4, 4, 64) / 2).astype(dtype)      # many ties
    scores = ub_tensor(core, dtype, 64, vals)
    idx = ub_tensor(core, np.uint32, 64, np.arange(64))
    dst = ub_tensor(core, np.uint8, 64 * PAIR_BYTES, 0)
    asc.sort32(dst, scores, idx, 2)
    got_s, got_i = _decode(dst.numpy(), dtype)
    for r in range(2):
        block = vals[32 * r:32 * r + 32].astype(np.float64)
        order = np.argsort(-block, kind="stable") + 32 * r
        np.testing.assert_array_equal(got_i[32 * r:32 * r + 32], order)
        np.testing.assert_array_equal(got_s[32 * r:32 * r + 32], vals[order])


def test_mrg_sort_merges_lists_keeping_list_order_on_ties(core):
    def pairs(scores, first):
        raw = np.zeros((len(scores), PAIR_BYTES), np.uint8)
        raw[:, :4] = np.asarray(scores, np.float32).view(np.uint8).reshape(-1, 4)
        raw[:, 4:] = np.arange(first, first + len(scores), dtype=np.uint32).view(np.uint8) \
            .reshape(-1, 4)
        return raw.reshape(-1)
    a = ub_tensor(core, np.uint8, 4 * PAIR_BYTES, pairs([5, 3, 3, 1], 0))
    b = ub_tensor(core, np.uint8, 4 * PAIR_BYTES, pairs([4, 3, 2, 1], 4))
    dst = ub_tensor(core, np.uint8, 8 * PAIR_BYTES, 0)
    asc.mrg_sort(dst, [a, b], [4, 4], np.float32)
    scores, idx = _decode(dst.numpy(), np.float32)
    np.testing.assert_array_equal(scores, [5, 4, 3, 3, 3, 2, 1, 1])
    np.testing.assert_array_equal(idx, [0, 4, 1, 2, 5, 6, 3, 7])


def test_mrg_sort_limits(core):
    a = ub_tensor(core, np.uint8, 8 * PAIR_BYTES, 0)
    dst = ub_tensor(core, np.uint8, 16 * PAIR_BYTES, 0)
    with pytest.raises(IllegalInstruction, match="2 to 4 lists"):
        asc.mrg_sort(dst, [a], [8], np.float32)
    with pytest.raises(IllegalInstruction, match="4095"):
        asc.mrg_sort(dst, [a, a], [4096, 1], np.float32)


def test_sort_instructions_cost_two_elements_a_cycle(core):
    assert core.costs.vector("sort", 4, 3200) - core.costs.vector("sort", 4, 0) == 1600
    assert core.costs.vector("transpose", 2, 1280) - core.costs.vector("transpose", 2, 0) == 10
