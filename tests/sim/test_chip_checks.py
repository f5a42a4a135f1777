"""Each check the chip enforces, hit by a deliberately broken kernel, with the error text."""

import ml_dtypes
import numpy as np
import pytest

from ixl.ascend import lang as asc
from ixl.ascend.errors import (
    AicoreOutOfBound,
    IllegalInstruction,
    KernelTimeout,
    ResourceLimit,
    TruncatedCopy,
    UbOverflow,
)
from tests.helpers import device_with_kernel, random_pair


def _run(kernel, shape=(1024,), debug=True, **kw):
    dev = device_with_kernel(kernel, debug=debug, **kw)
    a, b = random_pair(shape)
    ta, tb = dev.tensor(a), dev.tensor(b)
    try:
        return dev, dev.run("Add", ta, tb), (a, b)
    except Exception:
        ta.free()
        tb.free()
        assert dev.allocator.stats.live_bytes == 0, "a failed run must leave nothing allocated"
        raise


def _fresh_vecin_tensor():
    """A kernel's first steps: a pipe, one 4 KB VECIN buffer, a float16 tensor from it."""
    pipe = asc.TPipe()
    q = asc.TQue(asc.TPosition.VECIN)
    pipe.init_buffer(q, 1, 4096)
    return q.alloc_tensor(np.float16)


def test_ub_overflow_names_required_and_available_bytes():
    def kernel(ctx, x, y, z):
        pipe = asc.TPipe()
        q = asc.TQue(asc.TPosition.VECIN)
        pipe.init_buffer(q, 2, 100 * 1024)   # 200 KB > 192 KB of UB

    with pytest.raises(UbOverflow, match=r"ub overflow: requires 204800 bytes, 196608 available"):
        _run(kernel)


def test_misaligned_ub_address_is_an_illegal_instruction():
    def kernel(ctx, x, y, z):
        t = _fresh_vecin_tensor()
        asc.data_copy(t[3], x, 16)      # 6 bytes into the buffer

    with pytest.raises(IllegalInstruction, match=r"unaligned UUB addresses.*UB address 0x6 "
                                                 r"is not 32-byte aligned"):
        _run(kernel)


def test_gm_out_of_bounds_names_core_address_tensor_and_extent():
    def kernel(ctx, x, y, z):
        t = _fresh_vecin_tensor()
        asc.data_copy(t, x[1024 - 16], 32)    # 16 elements past the end of x

    with pytest.raises(AicoreOutOfBound) as info:
        _run(kernel)
    msg = str(info.value)
    assert "aicore memory out of bound: core 0 reads GM" in msg
    assert "(64 bytes) outside tensor 'a'" in msg
    assert "(2048 bytes)" in msg


def test_truncated_copy_is_an_error_in_debug_mode_naming_the_bytes_lost():
    def kernel(ctx, x, y, z):
        t = _fresh_vecin_tensor()
        asc.data_copy(t, x, 31)          # 62 bytes

    with pytest.raises(TruncatedCopy, match=r"62 bytes is not a multiple of 32 bytes: the chip "
                                            r"copies 32 and silently loses the last 30 bytes"):
        _run(kernel)


def test_truncated_copy_silently_drops_the_tail_in_release_mode():
    def kernel(ctx, x, y, z):
        pipe = asc.TPipe()
        q = asc.TQue(asc.TPosition.VECOUT)
        pipe.init_buffer(q, 1, 4096)
        t = q.alloc_tensor(np.float16)
        asc.duplicate(t, 7.0, 64)
        q.enque(t)
        t = q.deque()
        asc.data_copy(z, t, 31)          # only 16 elements (32 bytes) land
        q.free_tensor(t)

    dev, out, _ = _run(kernel, shape=(31,), debug=False)
    got = out.numpy()
    assert (got[:16] == 7).all() and (got[16:] == 0).all()


def test_debug_mode_fills_a_fresh_buffer_with_nan(core):
    pipe = asc.TPipe()
    q = asc.TQue(asc.TPosition.VECIN)
    pipe.init_buffer(q, 1, 2048)
    assert np.isnan(q.alloc_tensor(np.float16).numpy()).all()


def test_wait_without_set_times_out():
    def kernel(ctx, x, y, z):
        asc.TPipe()
        asc.wait_flag(asc.HardEvent.MTE2_V, 3)

    with pytest.raises(KernelTimeout, match=r"vector core execution timed out: core 0 waits "
                                            r"for flag MTE2_V id 3"):
        _run(kernel)


def test_set_never_waited_times_out_in_debug_mode():
    def kernel(ctx, x, y, z):
        asc.set_flag(asc.HardEvent.V_MTE3, 1)

    with pytest.raises(KernelTimeout, match=r"ended with flags set and never waited: V_MTE3 id 1"):
        _run(kernel)


def test_queue_buffers_beyond_event_ids_per_position():
    def kernel(ctx, x, y, z):
        pipe = asc.TPipe()
        for _ in range(5):
            pipe.init_buffer(asc.TQue(asc.TPosition.VECIN), 2, 256)

    with pytest.raises(ResourceLimit, match=r"10 queue buffers at VECIN: the chip has 8 event ids"):
        _run(kernel)


def test_more_than_64_buffers():
    def kernel(ctx, x, y, z):
        pipe = asc.TPipe()
        for _ in range(65):
            pipe.init_buffer(asc.TBuf(), 32)

    with pytest.raises(ResourceLimit, match=r"at most 64 buffers"):
        _run(kernel)


def test_init_buffer_rounds_lengths_up_to_32_bytes():
    seen = {}

    def kernel(ctx, x, y, z):
        pipe = asc.TPipe()
        q = asc.TQue(asc.TPosition.VECIN)
        pipe.init_buffer(q, 2, 33)
        b = asc.TBuf()
        pipe.init_buffer(b, 1)
        seen["offsets"] = [s.offset for s in q.slots] + [b.offset]
        seen["cursor"] = pipe.cursor

    _run(kernel)
    assert seen == {"offsets": [0, 64, 128], "cursor": 160}


def test_vector_repeat_above_255_is_illegal():
    def kernel(ctx, x, y, z):
        pipe = asc.TPipe()
        b = asc.TBuf()
        pipe.init_buffer(b, 65536)
        t = b.get(np.float16)
        asc.add(t, t, t, 128, 256, asc.BinaryRepeatParams())

    with pytest.raises(IllegalInstruction, match=r"repeat_times 256 outside \[0, 255\]"):
        _run(kernel)


def test_bfloat16_arithmetic_is_refused_by_the_vector_unit():
    def kernel(ctx, x, y, z):
        pipe = asc.TPipe()
        b = asc.TBuf()
        pipe.init_buffer(b, 1024)
        t = b.get(ml_dtypes.bfloat16)
        asc.add(t, t, t, 64)

    with pytest.raises(IllegalInstruction, match=r"add does not support bfloat16.*cast to float32"):
        _run(kernel)
