"""The runtime: desc handling, the shim's visibility, version alignment, the debug log."""

import numpy as np
import pytest

import ixl
from ixl.hixl import ShapeMismatch, UnknownOp
from ixl.nixl import KernelStartFailed, TensorDesc
from tests.helpers import device_with_kernel


def test_padded_desc_keeps_logical_and_storage_apart():
    d = TensorDesc.padded_last_dim((3, 7), "float16", 32)
    assert d.shape == (3, 7) and d.storage_shape == (3, 16) and d.nbytes == 96
    assert d.strides == (16, 1) and d.is_padded


def test_padded_tensor_round_trips_its_logical_view(dev):
    desc = TensorDesc.padded_last_dim((3, 7), "float32", 32)
    t = dev.empty(desc.shape, desc.dtype, "p", desc)
    x = np.arange(21, dtype=np.float32).reshape(3, 7)
    dev.write(t, x)
    np.testing.assert_array_equal(t.numpy(), x)
    assert t.storage().shape == (3, 8)
    t.free()


def test_python_contract(dev):
    a = dev.tensor(np.ones((4, 8), np.float16))
    b = dev.tensor(np.full((4, 8), 2, np.float16))
    out = dev.run("Add", a, b)
    assert (out.numpy() == 3).all()
    assert dev.last_profile.path == "native" and dev.last_profile.kernel == "add_kernel"
    assert dev.last_profile.time_us > 0


def test_shim_says_so(dev):
    a = dev.tensor(np.ones((4, 8), np.int32))
    b = dev.tensor(np.ones((8,), np.int32))
    out = dev.run("Add", a, b)
    assert (out.numpy() == 2).all()
    assert dev.last_profile.path == "shim" and "no int32 path" in dev.last_profile.reason


def test_kernel_built_for_another_runtime_does_not_start():
    dev = device_with_kernel(lambda ctx, *t: None, built_for="2.0")
    a = dev.tensor(np.ones(4, np.float32))
    with pytest.raises(KernelStartFailed, match=r"kernel start failed: kernel <lambda> was built "
                                                r"for runtime 2.0, this runtime is 1.0.0"):
        dev.run("Add", a, a)
    a.free()
    assert dev.allocator.stats.live_bytes == 0


def test_bad_calls_leave_nothing_allocated(dev):
    a = dev.tensor(np.ones((3, 4), np.float16))
    b = dev.tensor(np.ones((5,), np.float16))
    with pytest.raises(ShapeMismatch, match=r"shapes \(3, 4\) and \(5,\) do not broadcast"):
        dev.run("Add", a, b)
    with pytest.raises(UnknownOp, match=r"did you mean Add"):
        dev.run("add", a, a)
    live = dev.allocator.stats.live_bytes
    assert live == 2 * 512


def test_freed_input_does_not_start(dev):
    a = dev.tensor(np.ones(4, np.float16))
    a.free()
    with pytest.raises(KernelStartFailed, match="was freed"):
        dev.run("Relu", a)


def test_debug_log_prints_descs_addresses_and_tiling(monkeypatch, capsys):
    monkeypatch.setenv("IXL_LOG", "debug")
    dev = ixl.device("910B1")
    a = dev.tensor(np.ones(4096, np.float16), name="x")
    dev.run("Relu", a)
    log = capsys.readouterr().err
    assert "[ixl] launch Relu kernel=relu_kernel chip=910B1 block_dim=" in log
    assert "in x: float16[4096] ND addr=0x" in log
    assert "tiling ElementwiseTiling: {'total': 4096" in log


def test_tile_follows_the_chip_not_the_code():
    from ixl.ascend import get_chip
    from ixl.nixl import REGISTRY
    desc = TensorDesc.nd((1 << 20,), "float16")
    tiling = REGISTRY.native("Add").tiling
    t910 = tiling([desc, desc], [desc], {}, get_chip("910B1"), None).tiling.tile
    t310 = tiling([desc, desc], [desc], {}, get_chip("310P3"), None).tiling.tile
    # the 910B1's largest tile gives up a 512-byte GM step so the second input's queue can
    # start half a bank-group cycle on (kernels/ub_place.py); the 310P3's banks are unknown
    assert t910 == (196608 // (2 * 3 * 2) - 1) // 256 * 256
    assert t310 == 262144 // (2 * 3 * 2) // 128 * 128
