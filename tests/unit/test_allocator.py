import warnings

import numpy as np
import pytest

import ixl
from ixl.ascend.gm import GlobalMemory
from ixl.nixl.allocator import GMAllocator
from ixl.nixl.errors import OutOfMemory


def test_allocations_are_512_byte_aligned_and_cached():
    alloc = GMAllocator(GlobalMemory(), 1 << 20, 512, "test")
    a = alloc.alloc(100, "a")
    b = alloc.alloc(1000, "b")
    assert a % 512 == 0 and b % 512 == 0 and b - a == 512
    alloc.free(a)
    assert alloc.stats.cached_bytes == 512
    c = alloc.alloc(300, "c")
    assert c == a and alloc.stats.reuses == 1
    assert alloc.stats.live_bytes == 512 + 1024 and alloc.stats.peak_bytes == 1536


def test_out_of_memory_names_the_need_and_what_is_live():
    alloc = GMAllocator(GlobalMemory(), 4096, 512, "tiny")
    alloc.alloc(3000, "big")
    with pytest.raises(OutOfMemory, match=r"out of device memory on tiny: more needs 2000 bytes, "
                                          r"3072 of 4096 are live"):
        alloc.alloc(2000, "more")


def test_out_of_memory_first_empties_the_cache():
    alloc = GMAllocator(GlobalMemory(), 4096, 512, "tiny")
    alloc.free(alloc.alloc(3000, "x"))
    alloc.alloc(3500, "y")      # fits only once the cached 3072 bytes are unmapped
    assert alloc.stats.cached_bytes == 0


def test_translation_is_bounds_checked():
    gm = GlobalMemory()
    alloc = GMAllocator(gm, 1 << 20, 512, "t")
    a = alloc.alloc(512, "a")
    gm.bytes(a, 512)
    with pytest.raises(Exception, match="not mapped"):
        gm.bytes(a + 256, 512)


def test_device_close_reports_leaks():
    dev = ixl.device("910B1")
    keep = dev.tensor(np.zeros(10, np.float32), name="kept")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        leaks = dev.close()
    assert leaks == [f"kept: 40 bytes at {keep.addr:#x}"]
    assert "1 allocation(s) still live at close" in str(caught[0].message)


def test_tensors_free_themselves_when_dropped():
    dev = ixl.device("910B1")
    t = dev.tensor(np.zeros(10, np.float32))
    del t
    assert dev.close() == []
