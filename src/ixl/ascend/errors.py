"""Errors the simulated chip raises, worded as an engineer sees them on a real 910B.

Each carries the R12 symptom it belongs to, so that the message can point at `ixl explain`.
"""

from __future__ import annotations


class ChipError(RuntimeError):
    """A fault the AI Core itself would report (or, in debug mode, a sanitizer finding)."""

    symptom = "aicore memory out of bound"

    def __init__(self, message: str) -> None:
        super().__init__(f"{message} (see: ixl explain '{self.symptom}')")


class AicoreOutOfBound(ChipError):
    symptom = "aicore memory out of bound"


class UbOverflow(AicoreOutOfBound):
    symptom = "ub overflow"


class BufferOverflow(AicoreOutOfBound):
    """The buffers of a Cube core (L1, L0A, L0B, L0C, BiasTable, Fixpipe buffer) ask for more
    than the memory holds."""

    symptom = "buffer overflow"


class IllegalInstruction(ChipError):
    """Misaligned UB addresses and malformed instruction parameters."""

    symptom = "illegal instruction"


class ResourceLimit(ChipError):
    """Buffer or event-id limits of TPipe and TQue."""

    symptom = "ub overflow"


class TruncatedCopy(ChipError):
    """Debug mode: a DataCopy whose length the chip would silently truncate."""

    symptom = "truncated copy"


class KernelTimeout(ChipError):
    """Unpaired flags: on the chip the core waits forever and the runtime reports a timeout."""

    symptom = "timed out"


class HazardError(ChipError):
    """Debug mode: two pipes touch the same bytes, one writing, and no sync orders them."""

    symptom = "pipe hazard"


class UseAfterFree(HazardError):
    """Debug mode: a tensor used after free_tensor gave its buffer back to the queue."""

    symptom = "use after free"


class CrossCoreRace(ChipError):
    """Debug mode: two cores write the same GM bytes, or one reads what another writes, with
    no SyncAll between them."""

    symptom = "cross-core race"


class UninitialisedRead(ChipError):
    """Debug mode: a value made from bytes nothing wrote in this launch reaches GM or the
    scalar unit."""

    symptom = "uninitialised read"


class AccumulationWithoutInit(ChipError):
    """Debug mode: an Mmad accumulates into L0C values that are not a live partial sum (never
    written in this launch, or already copied out by a Fixpipe)."""

    symptom = "accumulation without init"


class InputWritten(ChipError):
    """Debug mode: a kernel writes into an input the op does not declare in-place."""

    symptom = "input written"
