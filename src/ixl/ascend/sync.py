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
    # A Cube core's pipes [SYNC][BPB]
    MTE2_MTE1 = (Pipe.MTE2, Pipe.MTE1)
    MTE1_MTE2 = (Pipe.MTE1, Pipe.MTE2)
    MTE1_M = (Pipe.MTE1, Pipe.M)
    M_MTE1 = (Pipe.M, Pipe.MTE1)
    MTE2_M = (Pipe.MTE2, Pipe.M)
    M_MTE2 = (Pipe.M, Pipe.MTE2)
    M_FIX = (Pipe.M, Pipe.FIX)
    FIX_M = (Pipe.FIX, Pipe.M)
    MTE2_FIX = (Pipe.MTE2, Pipe.FIX)
    FIX_MTE2 = (Pipe.FIX, Pipe.MTE2)
    MTE1_FIX = (Pipe.MTE1, Pipe.FIX)
    FIX_MTE1 = (Pipe.FIX, Pipe.MTE1)
    FIX_MTE3 = (Pipe.FIX, Pipe.MTE3)
    MTE3_MTE1 = (Pipe.MTE3, Pipe.MTE1)
    MTE1_MTE3 = (Pipe.MTE1, Pipe.MTE3)
    FIX_S = (Pipe.FIX, Pipe.S)
    S_FIX = (Pipe.S, Pipe.FIX)
    M_S = (Pipe.M, Pipe.S)
    S_M = (Pipe.S, Pipe.M)
    MTE1_S = (Pipe.MTE1, Pipe.S)
    S_MTE1 = (Pipe.S, Pipe.MTE1)

    __hash__ = object.__hash__


def set_flag(event: HardEvent, event_id: int = 0) -> None:
    core = current_core()
    src, dst = _check(core, event, event_id, "set_flag")
    core.set_flag(src, dst, event_id)


def wait_flag(event: HardEvent, event_id: int = 0) -> None:
    core = current_core()
    src, dst = _check(core, event, event_id, "wait_flag")
    core.wait_flag(src, dst, event_id)


def pipe_barrier(pipe: Pipe | None = None) -> None:
    """PipeBarrier<PIPE_X>(); `None` is PIPE_ALL."""
    core = current_core()
    if pipe is not None:
        core.has_pipe(pipe, "pipe_barrier")
    core.barrier(pipe)


def _check(core, event: HardEvent, event_id: int, what: str) -> tuple[Pipe, Pipe]:
    limit = core.chip.event_ids_per_position
    if not 0 <= event_id < limit:
        raise ResourceLimit(f"event id {event_id} outside [0, {limit}) on {core.chip.name}")
    src, dst = event.value
    core.has_pipe(src, f"{what}({event.name})")
    core.has_pipe(dst, f"{what}({event.name})")
    return src, dst
