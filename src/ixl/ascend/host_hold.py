"""A host setting held while any launch runs: launches overlap across chips and threads, so the
first to start applies it and the last to end restores it (host_blas.py, host_gc.py)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager


class HostHold:
    def __init__(self, apply: Callable[[], None], restore: Callable[[], None]) -> None:
        self._apply, self._restore = apply, restore
        self._lock = threading.Lock()
        self._running = 0          # launches inside the hold

    @contextmanager
    def held(self) -> Iterator[None]:
        with self._lock:
            if self._running == 0:
                self._apply()
            self._running += 1
        try:
            yield
        finally:
            with self._lock:
                self._running -= 1
                if self._running == 0:
                    self._restore()
