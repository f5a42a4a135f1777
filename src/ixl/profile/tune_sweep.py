"""`ixl tune OP` as a sweep: every point of the tuning ladder (the single, double and 4-slot
versions, each configuration of the tuning space, and with a following op each fused one) is
a task, so the ladder runs in this process, on every core or on a Ray cluster.

The ladder's rules (which points, which is best, which variant is chosen) stay in one place,
`Tuner.ladder()`. A sweep runs it twice without launching anything: once on a tuner that
only notes the points it asks for (the sweep's tasks), once on a tuner that answers each
point from the sweep's outcomes. The outcome is therefore the in-process ladder's, whichever
way the points ran.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass

from ..executor import ERROR, Outcome, Sweep, worker_local
from ..hixl import ArgSpec
from ..nixl import NixlError
from ..nixl.tuning import ConfigDoesNotFit
from .tune import NotTunable, Tuner, Variant

FUSED = "fused"


class TuningPointFailed(NixlError):
    """A point of the ladder raised another error than the tuner's own; its message keeps the
    `ixl explain` hint of the error it quotes."""

    symptom = "kernel start failed"

    def __init__(self, message: str) -> None:
        if "ixl explain" in message:
            RuntimeError.__init__(self, message)
        else:
            super().__init__(message)


REPLAYED = {cls.__name__: cls for cls in (ConfigDoesNotFit, NotTunable)}


def point_id(variant: str, config: dict) -> str:
    return f"{variant} {json.dumps(config, sort_keys=True)}"


@dataclass(frozen=True)
class LadderPoint:
    """One point of the ladder of `op` (then `then`) on inputs `specs` with `attrs`: the ops
    one by one (`variant` names the row) or, for FUSED, the fused kernel, at `config`."""

    chip: str
    op: str
    specs: tuple[ArgSpec, ...]
    attrs: str                      # JSON (attribute values may be lists: not hashable)
    then: tuple[str, ...]
    variant: str
    config: tuple[tuple[str, object], ...]

    @property
    def id(self) -> str:
        return point_id(self.variant, dict(self.config))

    def run(self) -> tuple[bool, dict]:
        case = (self.chip, self.op, self.specs, self.attrs, self.then)
        tuner = worker_local(("tuner", *case), lambda: Tuner(
            self.chip, self.op, list(self.specs), json.loads(self.attrs), list(self.then)))
        config = dict(self.config)
        variant = tuner.fused(config) if self.variant == FUSED \
            else tuner.unfused(self.variant, config)
        return True, {"variant": None if variant is None else asdict(variant)}


class _Planner(Tuner):
    """Launches nothing: notes each point `ladder()` asks for and answers with a placeholder."""

    def __init__(self, *args) -> None:
        super().__init__(*args)
        self.asked: list[tuple[str, dict]] = []

    def unfused(self, name: str, config: dict) -> Variant:
        self.asked.append((name, config))
        return Variant(name, 0.0, 0.0, 0.0, config)

    def fused(self, config: dict) -> Variant:
        self.asked.append((FUSED, config))
        return Variant(FUSED, 0.0, 0.0, 0.0, config)


class _Replayer(Tuner):
    """Launches nothing: answers each point from the sweep's outcomes, raising the error a
    point raised (ConfigDoesNotFit, which the ladder skips, or any other, which ends it)."""

    def __init__(self, *args, outcomes: dict[str, Outcome]) -> None:
        super().__init__(*args)
        self.outcomes = outcomes

    def _read(self, variant: str, config: dict) -> Variant | None:
        outcome = self.outcomes[point_id(variant, config)]
        if outcome.status == ERROR:
            kind, message = outcome.error_type, outcome.error_message
            if kind in REPLAYED:        # as raised in this process (the hint added once)
                cls = REPLAYED[kind]
                raise cls(message.removesuffix(f" (see: ixl explain '{cls.symptom}')"))
            raise TuningPointFailed(f"tuning {outcome.id}: {kind}: {message}")
        found = outcome.found["variant"]
        return None if found is None else Variant(**found)

    def unfused(self, name: str, config: dict) -> Variant | None:
        return self._read(name, config)

    def fused(self, config: dict) -> Variant | None:
        return self._read(FUSED, config)


@dataclass
class LadderSweep:
    """The sweep of one ladder, and how to read the ladder back from its outcomes."""

    chip: str
    op: str
    specs: list[ArgSpec]
    attrs: dict
    then: list[str]

    def _args(self) -> tuple:
        return self.chip, self.op, self.specs, self.attrs, self.then

    def sweep(self) -> Sweep:
        planner = _Planner(*self._args())
        try:
            planner.ladder()
        finally:
            planner.close()
        attrs = json.dumps(self.attrs, sort_keys=True)
        tasks = [LadderPoint(self.chip, self.op, tuple(self.specs), attrs, tuple(self.then),
                             variant, tuple(config.items()))
                 for variant, config in planner.asked]
        return Sweep("tune", {"chip": self.chip, "op": self.op, "then": self.then,
                              "inputs": [f"{list(s.shape)}:{s.dtype}" for s in self.specs],
                              "attrs": attrs}, tasks)

    def ladder(self, outcomes: list[Outcome]) -> tuple[list[Variant], Variant]:
        """`Tuner.ladder()` over the sweep's outcomes: its rows and the chosen variant."""
        replayer = _Replayer(*self._args(), outcomes={o.id: o for o in outcomes})
        try:
            return replayer.ladder()
        finally:
            replayer.close()
