import os
import tempfile
import numpy as np
import pytest

import ixl
from ixl.nixl import KernelEntry, LaunchPlan
from ixl.nixl.registry import Registry


@pytest.fixture
def dev():
    d = ixl.device("910B1", debug=True)
    yield d
    d.close()


def device_with_kernel(kernel, *, op="Add", block_dim=1, tiling=None, built_for="1.0",
                       debug=True, chip="910B1"):
    """A device whose registry holds only `kernel` for `op` (for deliberately broken kernels)."""
    reg = Registry()
    reg._loaded = True
    reg.register(KernelEntry(
        op=op, kernel=kernel,
        tiling=lambda ins, outs, attrs, c, config: LaunchPlan(block_dim, tiling),
        dtypes=("float16", "bfloat16", "float32"), built_for_runtime=built_for))
    return ixl.device(chip, debug=debug, registry=reg)


def random_pair(shape, dtype=np.float16, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(shape).astype(dtype), rng.standard_normal(shape).astype(dtype))


# Tests never read or write the user's tuning cache.
os.environ["IXL_TUNING_CACHE"] = os.path.join(tempfile.mkdtemp(prefix="ixl-tests-"), "tuning.json")
