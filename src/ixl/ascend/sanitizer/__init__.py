"""Debug mode's checks, each an observer of the cores (see observe.py): order-based pipe
hazards and use after free (hazards.py, over order.py's clocks), cross-core GM races
(races.py), uninitialised reads (uninit.py), writes into inputs (inputs.py) and L0C
accumulation without init (accumulate.py)."""

from __future__ import annotations

from ..observe import Observer
from .accumulate import L0cAccumulation
from .hazards import PipeHazards
from .inputs import ReadOnlyInputs
from .races import CrossCoreRaces
from .uninit import UninitReads


def debug_checks() -> list[Observer]:
    """A fresh set of the checks for one launch."""
    return [PipeHazards(), CrossCoreRaces(), UninitReads(), ReadOnlyInputs(), L0cAccumulation()]


__all__ = ["CrossCoreRaces", "L0cAccumulation", "PipeHazards", "ReadOnlyInputs", "UninitReads",
           "debug_checks"]
