"""ixl: port an operator library from its semantics (HIXL) onto a runtime (NIXL) and a
simulated Ascend AI Core that obeys Ascend C's rules and models a 910B's time."""

from .nixl import Device, device

__version__ = "0.1.0"
__all__ = ["Device", "device", "__version__"]
