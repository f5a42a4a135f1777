"""Python's cyclic garbage collector paused while cores are simulated.

A launch allocates a few objects per instruction (parameter tuples, L2 batches, timeline
intervals), nearly all freed by reference counting, yet each allocation counts towards the next
collection, and a collection walks the suspended frames of every core of the launch (the cores
run interleaved as greenlets): a 48-core launch of 128-byte copies spent a quarter of its host
time collecting. The first launch to start pauses the collector and the last to end restores
it, if it was on (host_hold.py). Only the host's speed changes.
"""

from __future__ import annotations

import gc
from contextlib import AbstractContextManager

from .host_hold import HostHold

_was_enabled = False      # the collector's state when the first running launch started


def _pause() -> None:
    global _was_enabled
    _was_enabled = gc.isenabled()
    gc.disable()


def _resume() -> None:
    if _was_enabled:
        gc.enable()


_hold = HostHold(_pause, _resume)


def collector_paused() -> AbstractContextManager[None]:
    return _hold.held()
