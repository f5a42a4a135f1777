"""The machine: a simulated Ascend AI Core that knows no ops, only instructions.

`chips` holds the chip specs, `simulator` the chip (GM plus cores), `lang` the kernel language.
"""

from .chips import CHIPS, ChipSpec, UnknownChipError, get_chip
from .core import AICore, Mode
from .errors import (AicoreOutOfBound, ChipError, HazardError, IllegalInstruction,
                     KernelTimeout, ResourceLimit, TruncatedCopy, UbOverflow)
from .simulator import CHIP_MODEL_VERSION, LaunchRecord, SimulatedChip

__all__ = [
    "CHIPS", "ChipSpec", "UnknownChipError", "get_chip", "AICore", "Mode", "AicoreOutOfBound",
    "ChipError", "HazardError", "IllegalInstruction", "KernelTimeout",
    "ResourceLimit", "TruncatedCopy", "UbOverflow", "CHIP_MODEL_VERSION", "LaunchRecord",
    "SimulatedChip",
]
