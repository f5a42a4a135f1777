"""Inputs are read-only: a kernel that writes into one of its GM inputs (using it as scratch)
corrupts the caller's tensor, unless the op declares that input in-place."""

from __future__ import annotations

from ..errors import InputWritten
from ..observe import GmRole, Instruction, LaunchInfo, Observer, Space


class ReadOnlyInputs(Observer):
    def __init__(self) -> None:
        self.launch: LaunchInfo | None = None

    def launch_begin(self, launch: LaunchInfo) -> None:
        self.launch = launch

    def instruction(self, ins: Instruction) -> None:
        assert self.launch is not None              # launch_begin comes first
        for w in ins.writes:
            if w.space is not Space.GM or w.empty:
                continue
            arg = self.launch.arg(w)
            if arg is not None and arg.role is GmRole.INPUT:
                lo, hi = w.span()
                raise InputWritten(
                    f"input written on core {ins.core}: {ins.name} ({ins.pipe.lane}) writes GM "
                    f"[{lo:#x}, {hi:#x}) of input '{arg.name}' (its bytes [{lo - arg.addr}, "
                    f"{hi - arg.addr})), which the op does not declare in-place: inputs are "
                    f"read-only; write into an output, or use the workspace as scratch")
