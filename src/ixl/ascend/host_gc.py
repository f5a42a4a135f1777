"""Python's cyclic garbage collector paused while cores are simulated.

A launch allocates a few objects per instruction (parameter tuples, L2 batches, timeline
intervals), nearly all freed by reference counting, yet each allocation counts towards the next
collection, and a collection walks the suspended frames of every core of the launch (the cores
run interleaved as greenlets): a 48-core launch of 128-byte copies spent a quarter of its host
time collecting. Launches overlap across chips and threads, so the first to start pauses the
collector and the last to end restores it (if it was on). Only the host's speed changes.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_lock = threading.Lock()
_running = 0              # launches inside `collector_paused`
_was_enabled = False      # the collector's state when the first of them started


@contextmanager
def collector_paused() -> Iterator[None]:
    global _running, _was_enabled
    with _lock:
        if _running == 0:
            _was_enabled = gc.isenabled()
            gc.disable()
        _running += 1
    try:
        yield
    finally:
        with _lock:
            _running -= 1
            if _running == 0 and _was_enabled:
                gc.enable()
