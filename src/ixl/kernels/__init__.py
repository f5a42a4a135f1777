"""The ported ops: per op a host tiling function and a device kernel, registered in nixl.

Only the registry's loader imports this package; importing it registers every kernel and the
fusion provider.
"""

from . import (channel_norm, elementwise_ops, fusion_provider, gemm, matmul,  # noqa: F401
               matmul_fusion, norm, pool, reduce, resize, transdata)  # (registration)
from .version import BUILT_FOR_RUNTIME, KERNEL_LIBRARY_VERSION

__all__ = ["BUILT_FOR_RUNTIME", "KERNEL_LIBRARY_VERSION"]
