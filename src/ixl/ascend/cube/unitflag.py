"""UnitFlag: an Mmad and the Fixpipe draining its result hand L0C over 512 bytes at a time,
in hardware, with no set_flag/wait_flag between them [UF].

Each 512-byte unit of L0C has a flag. An Mmad with unit_flag 2 or 3 waits for a unit's flag to
be 0 (no Fixpipe still reading it) before writing it; with 3 (the last Mmad of a tile's K loop)
it sets the flag to 1 as each unit is done. A Fixpipe with unit_flag 3 waits for 1, reads the
unit and sets 0. So the Fixpipe streams out a tile while its last Mmad is still computing, and
the next tile's first Mmad into the same buffer starts as soon as the Fixpipe has read its
first units.

The model keeps, per L0C buffer (keyed by its start address, which both sides must use), the
last Mmad with flag 3 not yet drained and the last Fixpipe not yet followed by an Mmad: the
waiting side starts no earlier than the other side's first unit and ends no earlier than one
unit after the other side's end. A wait nothing will satisfy (a Fixpipe with unit_flag 3 after
no Mmad with 3; a second Mmad with 3 before a Fixpipe cleared the first's) is the chip's
hang. To the debug checks the hand-over is a flag pair (M_FIX from the Mmad, FIX_M back), so
the pipe-hazard check sees the ordering the hardware gives.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..errors import IllegalInstruction, KernelTimeout
from ..observe import SyncKind
from ..timeline import Pipe

if TYPE_CHECKING:
    from ..core import AICore

MMAD_MODES = (0, 2, 3)
FIXPIPE_MODES = (0, 3)


class UnitFlags:
    """One Cube core's L0C unit flags, per buffer. An instruction that uses them calls `wait`
    before it is timed, `done` after (with its own cycles), then `signal` once it has been
    reported to the observers."""

    def __init__(self) -> None:
        self.filled: dict[int, tuple] = {}      # buffer -> (start, end, units) of an Mmad (3)
        self.drained: dict[int, tuple] = {}     # buffer -> (start, end, units) of a Fixpipe (3)

    def wait(self, core: AICore, pipe: Pipe, buffer: int, mode: int) -> tuple | None:
        """Before an Mmad (pipe M, unit_flag 2 or 3) or a Fixpipe (FIX, 3) on `buffer`: the
        other side's record it waits for (None for an Mmad no Fixpipe drained before)."""
        tl = core.timeline
        if pipe is Pipe.M:
            if buffer in self.filled:
                raise KernelTimeout(
                    f"AI Core execution timed out: core {core.core_id} mmad with unit_flag "
                    f"{mode} waits for L0C {buffer:#x}'s unit flags to clear, but the last "
                    f"mmad with unit_flag 3 into it was never drained by a fixpipe with "
                    f"unit_flag 3 [UF]")
            other = self.drained.pop(buffer, None)
        else:
            other = self.filled.pop(buffer, None)
            if other is None:
                raise KernelTimeout(
                    f"AI Core execution timed out: core {core.core_id} fixpipe with unit_flag "
                    f"3 waits for L0C {buffer:#x}'s unit flags, which no mmad with unit_flag 3 "
                    f"into that buffer sets [UF]")
        if other is not None:
            first_unit = other[0] + (other[1] - other[0]) / other[2]
            tl.hold(pipe, first_unit)
            _edge(core, SyncKind.WAIT, Pipe.FIX if pipe is Pipe.M else Pipe.M, pipe, buffer,
                  other[0], first_unit)
        return other

    def done(self, core: AICore, pipe: Pipe, buffer: int, mode: int, units: int,
             other: tuple | None, cycles: float) -> None:
        """After timing it: the instruction ends no earlier than one unit after the side it
        waited for; an Mmad with 3 and every Fixpipe leave a record for the other side."""
        tl = core.timeline
        start, end = tl.last
        if other is not None:
            end = tl.stretch(pipe, other[1] + cycles / units)
        if pipe is Pipe.FIX:
            self.drained[buffer] = (start, end, units)
        elif mode == 3:
            self.filled[buffer] = (start, end, units)

    def signal(self, core: AICore, pipe: Pipe, buffer: int, mode: int) -> None:
        """After the instruction was reported: the flag the other side will wait for."""
        if pipe is Pipe.FIX or mode == 3:
            _edge(core, SyncKind.SET, pipe, Pipe.FIX if pipe is Pipe.M else Pipe.M, buffer,
                  core.timeline.last[1], core.timeline.last[1])

    def unfinished(self) -> list[str]:
        """Buffers an Mmad with unit_flag 3 filled that no Fixpipe drained."""
        return [f"L0C {b:#x}" for b in self.filled]


def check_mode(mode: int, allowed: tuple, what: str) -> None:
    if mode not in allowed:
        raise IllegalInstruction(f"{what} unit_flag {mode}: one of {', '.join(map(str, allowed))} "
                                 f"(0 off; 2 on every Mmad of a K loop but the last; 3 on the "
                                 f"last Mmad and on its Fixpipe) [UF]")


def _edge(core, kind: SyncKind, src: Pipe, dst: Pipe, buffer: int, fired: float,
          time: float) -> None:
    if core.observers:
        core.unit_flag_sync(kind, src, dst, buffer, fired, time)
