"""The machine: a simulated Ascend AI Core that knows no ops, only instructions.

`chips` holds the chip specs, `simulator` the chip (GM plus cores), `lang` the kernel language.
"""

from .chips import CHIPS, ChipSpec, UnknownChipError, get_chip
from .core import AICore, Mode
from .errors import (AicoreOutOfBound, ChipError, CrossCoreRace, HazardError, IllegalInstruction,
                     InputWritten, KernelTimeout, ResourceLimit, TruncatedCopy, UbOverflow,
                     UninitialisedRead, UseAfterFree)
from .simulator import CHIP_MODEL_VERSION, LaunchRecord, SimulatedChip

__all__ = [
    "CHIPS", "ChipSpec", "UnknownChipError", "get_chip", "AICore", "Mode", "AicoreOutOfBound",
    "ChipError", "CrossCoreRace", "HazardError", "IllegalInstruction", "InputWritten",
    "KernelTimeout", "ResourceLimit", "TruncatedCopy", "UbOverflow", "UninitialisedRead",
    "UseAfterFree", "CHIP_MODEL_VERSION", "LaunchRecord",
    "SimulatedChip",
]
