"""L0C accumulation without init: an Mmad with cmatrix_init_val False adds A.B onto what L0C
holds, which must be this tile's partial sum. Adding onto bytes nothing wrote in this launch
(stale L0C of an earlier launch), or onto a finished tile a Fixpipe already copied out (the
first Mmad of the next tile forgot cmatrix_init_val=True), gives wrong numbers that no other
check sees: the values are there, only they belong to nothing.

Per Cube core a state per L0C byte: unwritten, a partial sum (an Mmad wrote it), or copied
out (a Fixpipe read it since).
"""

from __future__ import annotations

import numpy as np

from ..errors import AccumulationWithoutInit
from ..observe import Instruction, LaunchInfo, Observer, Space
from ..timeline import Pipe

UNWRITTEN, PARTIAL, COPIED = 0, 1, 2


class L0cAccumulation(Observer):
    def __init__(self) -> None:
        self.state: dict[int, np.ndarray] = {}
        self.l0c_bytes = 0

    def launch_begin(self, launch: LaunchInfo) -> None:
        self.state = {}
        self.l0c_bytes = launch.chip.l0c_bytes

    def _of(self, core: int) -> np.ndarray:
        st = self.state.get(core)
        if st is None:
            st = self.state[core] = np.zeros(self.l0c_bytes, np.uint8)
        return st

    def instruction(self, ins: Instruction) -> None:
        if ins.pipe is Pipe.M:
            for a in ins.reads:
                if a.role == "acc" and a.space is Space.L0C:
                    self._check(ins, a)
            for w in ins.writes:
                if w.space is Space.L0C:
                    w.assign(self._of(ins.core), PARTIAL)
        elif ins.pipe is Pipe.FIX:
            for a in ins.reads:
                if a.space is Space.L0C:
                    a.assign(self._of(ins.core), COPIED)

    def _check(self, ins: Instruction, a) -> None:
        state = a.view(self._of(ins.core)).min(axis=-1)
        bad = state != PARTIAL
        if not bad.any():
            return
        first = int(state[bad].reshape(-1)[0])
        lo, hi = a.span()
        why = ("that nothing wrote in this launch (stale L0C)" if first == UNWRITTEN else
               "whose tile a fixpipe already copied out")
        raise AccumulationWithoutInit(
            f"L0C accumulation without init on core {ins.core}: {ins.name} (CUBE) accumulates "
            f"into L0C [{lo:#x}, {hi:#x}) (cmatrix_init_val False) {why}: start each tile "
            f"with cmatrix_init_val=True (or from the bias)")
