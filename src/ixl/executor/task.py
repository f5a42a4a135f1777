"""A task is a picklable description of one unit of work, not a closure: a frozen dataclass
naming its op or model, case, configuration and chip, with a stable `id` and a `run()` that
does the work where it lands (this process, a pool worker, a Ray worker).

`run()` returns `(ok, result)`: whether the work passed its own check (a case matched its
golden, a node case passed) and a JSON-able dict. `execute` turns that, or the exception the
task raised, into an `Outcome`, which is what travels back and what the results file holds.
Devices and models are not picklable, so a task gets them from `worker_local`: one per key
(a device per chip and mode, a model per chip and dtype) in each worker process, or in each
in-process sweep, made on first use.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

import numpy as np

OK, FAILED, ERROR = "ok", "failed", "error"


class Task(Protocol):
    @property
    def id(self) -> str:
        """Unique within its sweep and the same in every run of it (resuming matches on it)."""

    def run(self) -> tuple[bool, dict]:
        """Do the work: (passed its own check, JSON-able result)."""


def one_line(error: BaseException) -> str:
    """An error's message on one line (a traceback is for IXL_LOG=debug)."""
    return " ".join(str(error).split())


@dataclass(frozen=True)
class Outcome:
    """How one task ended: ok or failed (it ran; `result` says what it found) or error (it
    raised; `error` holds the exception's type and one-line message)."""

    id: str
    status: str
    result: dict | None = None
    error: dict | None = None
    seconds: float = 0.0          # wall time in the worker (not part of the result)

    @property
    def ok(self) -> bool:
        return self.status == OK

    def error_line(self) -> str:
        return f"{self.error['type']}: {self.error['message']}" if self.error else ""

    @property
    def error_type(self) -> str:
        """The type of the exception an error outcome holds ("" for a task that ran)."""
        return self.error["type"] if self.error else ""

    @property
    def error_message(self) -> str:
        """The one-line message of the exception an error outcome holds."""
        return self.error["message"] if self.error else ""

    @property
    def found(self) -> dict:
        """The result of a task that ran (ok or failed); an error outcome has none."""
        if self.result is None:
            raise TypeError(f"task {self.id} has no result: {self.error_line()}")
        return self.result

    def to_json(self) -> dict:
        return {"id": self.id, "status": self.status, "result": self.result,
                "error": self.error, "seconds": round(self.seconds, 4)}

    @classmethod
    def from_json(cls, obj: dict) -> Outcome:
        if obj.get("status") not in (OK, FAILED, ERROR) or not isinstance(obj.get("id"), str):
            raise ValueError("not a task outcome")
        return cls(obj["id"], obj["status"], obj.get("result"), obj.get("error"),
                   obj.get("seconds", 0.0))


def failure(task_id: str, kind: str, message: str, seconds: float = 0.0) -> Outcome:
    return Outcome(task_id, ERROR, error={"type": kind, "message": message}, seconds=seconds)


def execute(task: Task) -> Outcome:
    """Run one task anywhere; an exception becomes an error outcome (Ctrl-C is not caught)."""
    start = time.perf_counter()
    try:
        ok, result = task.run()
    except Exception as e:      # noqa: BLE001  (a task's failure is a result of the sweep)
        return failure(task.id, type(e).__name__, one_line(e), time.perf_counter() - start)
    return Outcome(task.id, OK if ok else FAILED, jsonable(result),
                   seconds=time.perf_counter() - start)


def jsonable(value: object) -> Any:
    """`value` as plain JSON: numpy arrays and scalars as lists and numbers, tuples as lists,
    and any other object (an If's branch function) by its type name, the same in every
    process."""
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, (np.ndarray, np.generic)):
        return value.tolist()
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return f"<{type(value).__name__}>"


# ---------------------------------------------------------------- per-worker state

T = TypeVar("T")

_PROCESS: dict = {}                 # a worker process's objects, kept until it ends
_PROCESS_LOCK = threading.Lock()
_scope = threading.local()          # an in-process sweep's own objects, on its thread


def worker_local(key: tuple, make: Callable[[], T]) -> T:
    """The object for `key` in this worker, made by `make()` on first use: in a worker
    process, one per process (under a lock, so threads share it); during an in-process sweep,
    one per sweep (`local_scope`), closed when it ends."""
    store = getattr(_scope, "store", None)
    if store is not None:
        if key not in store:
            store[key] = make()
        return store[key]
    with _PROCESS_LOCK:
        if key not in _PROCESS:
            _PROCESS[key] = make()
        return _PROCESS[key]


@contextmanager
def local_scope(store: dict) -> Iterator[None]:
    """While inside, `worker_local` keeps objects in `store` (this thread only)."""
    previous = getattr(_scope, "store", None)
    _scope.store = store
    try:
        yield
    finally:
        _scope.store = previous


def close_all(store: dict) -> None:
    """Close (devices) and forget the objects of an in-process sweep."""
    objects = list(store.values())
    store.clear()
    for obj in objects:
        close = getattr(obj, "close", None)
        if callable(close):
            close()
