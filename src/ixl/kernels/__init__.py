"""The ported ops: per op a host tiling function and a device kernel, registered in nixl.

Only the registry's loader imports this package.
"""

KERNEL_LIBRARY_VERSION = "0.1.0"
BUILT_FOR_RUNTIME = "1.0"   # the nixl runtime these kernels were built against

from . import elementwise_ops  # noqa: E402,F401  (registers the kernels)
from . import norm, reduce  # noqa: E402,F401  (tier A: reductions and normalisations)
