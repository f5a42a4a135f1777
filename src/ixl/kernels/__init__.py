"""The ported ops: per op a host tiling function and a device kernel, registered in nixl.

Only the registry's loader imports this package; importing it registers every kernel and the
fusion provider.
"""

from . import (channel_norm, conv, conv_transpose, elementwise_ops,  # noqa: F401
               fusion_provider, gemm, matmul, matmul_fusion, norm, pool, reduce, resize,
               transdata)  # (registration)
from .version import BUILT_FOR_RUNTIME, KERNEL_LIBRARY_VERSION

__all__ = ["BUILT_FOR_RUNTIME", "KERNEL_LIBRARY_VERSION"]
