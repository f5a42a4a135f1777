"""The machine: a simulated Ascend AI Core that knows no ops, only instructions.

`chips` holds the chip specs, `simulator` the chip (GM plus cores), `lang` the kernel language.
"""

from .chips import CHIPS, ChipSpec, UnknownChipError, get_chip
from .core import AICore, CoreId, CoreKind, Mode
from .errors import (
    AccumulationWithoutInit,
    AicoreOutOfBound,
    BufferOverflow,
    ChipError,
    CrossCoreRace,
    HazardError,
    IllegalInstruction,
    InputWritten,
    KernelTimeout,
    ResourceLimit,
    TruncatedCopy,
    UbOverflow,
    UninitialisedRead,
    UseAfterFree,
)
from .schedule import KernelType
from .simulator import CHIP_MODEL_VERSION, LaunchRecord, SimulatedChip

__all__ = [
    "CHIPS", "ChipSpec", "UnknownChipError", "get_chip", "AICore", "CoreId", "CoreKind", "Mode",
    "AccumulationWithoutInit", "AicoreOutOfBound", "BufferOverflow", "ChipError",
    "CrossCoreRace", "HazardError", "IllegalInstruction", "InputWritten", "KernelTimeout",
    "ResourceLimit", "TruncatedCopy", "UbOverflow", "UninitialisedRead", "UseAfterFree",
    "KernelType", "CHIP_MODEL_VERSION", "LaunchRecord", "SimulatedChip",
]
