"""Debug mode's checks, each an observer of the cores (see observe.py): order-based pipe
hazards and use after free (hazards.py), cross-core GM races (races.py), uninitialised reads
(uninit.py) and writes into inputs (inputs.py)."""

from __future__ import annotations

from ..observe import Observer
from .hazards import PipeHazards
from .inputs import ReadOnlyInputs
from .races import CrossCoreRaces
from .uninit import UninitReads


def debug_checks() -> list[Observer]:
    """A fresh set of the checks for one launch."""
    return [PipeHazards(), CrossCoreRaces(), UninitReads(), ReadOnlyInputs()]


__all__ = ["CrossCoreRaces", "PipeHazards", "ReadOnlyInputs", "UninitReads", "debug_checks"]
