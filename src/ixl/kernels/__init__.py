"""The ported ops: per op a host tiling function and a device kernel, registered in nixl.

Only the registry's loader imports this package; importing it registers every kernel and the
fusion provider.
"""

from . import (concat_split, elementwise_ops, expand_tile, fusion_provider, gather,  # noqa: F401
               norm, pad, reduce, slice, sort, transpose)  # (registration)
from .version import BUILT_FOR_RUNTIME, KERNEL_LIBRARY_VERSION

__all__ = ["BUILT_FOR_RUNTIME", "KERNEL_LIBRARY_VERSION"]
