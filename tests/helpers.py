"""Helpers the tests share (fixtures stay in conftest.py; helpers are imported from here)."""

import numpy as np

import ixl
from ixl.ascend import lang as asc
from ixl.nixl import KernelEntry, LaunchPlan
from ixl.nixl.registry import Registry


def device_with_kernel(kernel, *, op="Add", block_dim=1, tiling=None, built_for="1.0",
                       debug=True, chip="910B1"):
    """A device whose registry holds only `kernel` for `op` (for deliberately broken kernels)."""
    reg = Registry(load_library=False)
    reg.register(KernelEntry(
        op=op, kernel=kernel,
        tiling=lambda ins, outs, attrs, c, config: LaunchPlan(block_dim, tiling),
        dtypes=("float16", "bfloat16", "float32"), built_for_runtime=built_for))
    return ixl.device(chip, debug=debug, registry=reg)


def random_pair(shape, dtype=np.float16, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(shape).astype(dtype), rng.standard_normal(shape).astype(dtype))


def ub_tensor(core, dtype, count, fill=None):
    """A fresh UB scratch tensor of `count` elements on `core`, optionally filled."""
    pipe = core.pipes[0] if core.pipes else asc.TPipe()
    b = asc.TBuf()
    pipe.init_buffer(b, count * np.dtype(dtype).itemsize)
    t = b.get(dtype, count)
    if fill is not None:
        t.view()[:] = fill
    return t
