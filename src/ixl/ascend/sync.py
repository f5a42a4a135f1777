"""Synchronisation between the pipes of one core: SetFlag, WaitFlag and PipeBarrier.

SetFlag<X_Y>(id) is issued to pipe X and fires when X's earlier work is done; WaitFlag<X_Y>(id)
holds pipe Y until then. A WaitFlag with no earlier SetFlag of the same event and id leaves the
core waiting forever: the runtime reports a timeout.
"""

from __future__ import annotations

import enum

from .core import current_core
from .errors import ResourceLimit
from .timeline import Pipe


class HardEvent(enum.Enum):
    MTE2_V = (Pipe.MTE2, Pipe.V)
    V_MTE2 = (Pipe.V, Pipe.MTE2)
    V_MTE3 = (Pipe.V, Pipe.MTE3)
    MTE3_V = (Pipe.MTE3, Pipe.V)
    MTE3_MTE2 = (Pipe.MTE3, Pipe.MTE2)
    MTE2_MTE3 = (Pipe.MTE2, Pipe.MTE3)
    S_V = (Pipe.S, Pipe.V)
    V_S = (Pipe.V, Pipe.S)
    S_MTE2 = (Pipe.S, Pipe.MTE2)
    MTE2_S = (Pipe.MTE2, Pipe.S)
    S_MTE3 = (Pipe.S, Pipe.MTE3)
    MTE3_S = (Pipe.MTE3, Pipe.S)

    __hash__ = object.__hash__


def set_flag(event: HardEvent, event_id: int = 0) -> None:
    core = current_core()
    _check_id(core, event_id)
    src, dst = event.value
    core.set_flag(src, dst, event_id)


def wait_flag(event: HardEvent, event_id: int = 0) -> None:
    core = current_core()
    _check_id(core, event_id)
    src, dst = event.value
    core.wait_flag(src, dst, event_id)


def pipe_barrier(pipe: Pipe | None = None) -> None:
    """PipeBarrier<PIPE_X>(); `None` is PIPE_ALL."""
    current_core().barrier(pipe)


def _check_id(core, event_id: int) -> None:
    limit = core.chip.event_ids_per_position
    if not 0 <= event_id < limit:
        raise ResourceLimit(f"event id {event_id} outside [0, {limit}) on {core.chip.name}")
