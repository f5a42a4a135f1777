"""A sweep: many tasks of one kind, run on a backend, their outcomes streamed into one table
(and, given a results file, into the file as each finishes, so the sweep can resume)."""

from __future__ import annotations

import hashlib
import time
from collections.abc import Sequence
from contextlib import closing
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from .backends import Backend, InProcess
from .results import ResultsFile
from .task import ERROR, FAILED, Outcome, Task

T = TypeVar("T", bound=Task)


@dataclass
class Sweep(Generic[T]):
    """`kind` and `params` say what the tasks are (and must match to resume a results file);
    the tasks are in the order the final table lists them."""

    kind: str
    params: dict
    tasks: Sequence[T]

    def __post_init__(self):
        ids = [t.id for t in self.tasks]
        if len(set(ids)) != len(ids):
            raise ValueError(f"{self.kind} sweep: task ids repeat")

    def header(self) -> dict:
        digest = hashlib.sha256("\n".join(t.id for t in self.tasks).encode()).hexdigest()
        return {"kind": self.kind, "params": self.params, "tasks": len(self.tasks),
                "plan": digest[:16]}


@dataclass
class Report:
    """Every outcome in the sweep's order (all of them, unless it was interrupted), and how
    the run went."""

    outcomes: list[Outcome]
    resumed: int                  # outcomes read from the results file, not run now
    backend: str
    seconds: float
    total: int
    results: str | None = None
    by_id: dict[str, Outcome] = field(init=False)

    def __post_init__(self):
        self.by_id = {o.id: o for o in self.outcomes}

    def count(self, status: str) -> int:
        return sum(o.status == status for o in self.outcomes)

    @property
    def errors(self) -> list[Outcome]:
        return [o for o in self.outcomes if o.status == ERROR]

    @property
    def all_ok(self) -> bool:
        return len(self.outcomes) == self.total and all(o.ok for o in self.outcomes)


class Observer:
    """Told of each outcome as it arrives (a progress bar); does nothing by default."""

    def start(self, total: int, done: int, failed: int) -> None: ...

    def finished(self, task: Task, outcome: Outcome) -> None: ...


def run_sweep(sweep: Sweep, backend: Backend | None = None, results: str | None = None,
              resume: bool = False, observer: Observer | None = None) -> Report:
    """Run the tasks `results` does not hold yet (all of them without one). Each outcome is
    appended to the file as it arrives; an interruption leaves the file valid and whole."""
    backend = backend or InProcess()
    observer = observer or Observer()
    file = ResultsFile(results, sweep.header(), resume) if results else None
    recorded = file.recorded if file else {}
    todo = [t for t in sweep.tasks if t.id not in recorded]
    by_id = {t.id: t for t in todo}
    fresh: dict[str, Outcome] = {}
    start = time.perf_counter()
    try:
        observer.start(len(sweep.tasks), len(recorded),
                       sum(o.status in (FAILED, ERROR) for o in recorded.values()))
        with closing(backend.run(todo)) as stream:
            for outcome in stream:
                if file:
                    file.append(outcome)
                fresh[outcome.id] = outcome
                observer.finished(by_id[outcome.id], outcome)
    finally:
        if file:
            file.close()
    outcomes = [o for t in sweep.tasks
                if (o := fresh.get(t.id) or recorded.get(t.id)) is not None]
    return Report(outcomes, len(recorded), backend.describe(), time.perf_counter() - start,
                  len(sweep.tasks), results)

