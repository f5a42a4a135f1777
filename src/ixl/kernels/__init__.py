"""The ported ops: per op a host tiling function and a device kernel, registered in nixl.

Only the registry's loader imports this package; importing it registers every kernel and the
fusion provider.
"""

from . import (  # noqa: F401 (imported for registration)
    channel_norm,
    concat_split,
    conv,
    conv_transpose,
    elementwise_ops,
    expand_tile,
    fusion_provider,
    gather,
    gemm,
    matmul,
    matmul_fusion,
    norm,
    pad,
    pool,
    reduce,
    resize,
    rotary,
    scatter,
    slice,
    sort,
    transdata,
    transpose,
)
from .version import BUILT_FOR_RUNTIME, KERNEL_LIBRARY_VERSION

__all__ = ["BUILT_FOR_RUNTIME", "KERNEL_LIBRARY_VERSION"]
