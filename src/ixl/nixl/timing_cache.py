"""Timing reused: a timing-only launch's record, kept per launch signature.

A timing-only launch computes no data, so its timeline is a function of what the kernel's
control flow can see: the kernel, its tiling, the core count, the mode, and what the backend
names in its `timing_signature` (the chip, its model's version, the GM windows' dtypes, sizes
and addresses on the burst grid). MiniLM runs each launch six times per sentence and an LLM
decode runs every launch once per token; simulating each signature once is enough.

What is never reused:
- runs that compute data (the data must be produced), debug runs (their checks must run),
  recording runs (traces keep their own slices) and runs on a backend with observers attached
  (they must hear every instruction: its signature is None);
- a launch whose scalar unit read a value from an on-core memory (GetValue): its control flow
  could follow data, which a timing-only run does not compute, so it is simulated every time;
- a tiling that cannot be hashed (it holds arrays): its signature is not known exactly.

If the timing model ever reads more of an address (an L2 model) or carries state from one launch
to the next, that must join the backend's signature.
"""

from __future__ import annotations

import copy
import threading
from collections import OrderedDict
from typing import Callable, Hashable

from ..ascend.simulator import LaunchRecord

CAPACITY = 4096          # signatures kept (least recently used dropped first) [U: bounds memory]


class TimingCache:
    """A bounded, thread-safe map from launch signature to its LaunchRecord."""

    def __init__(self, capacity: int = CAPACITY):
        self.capacity = capacity
        self._records: OrderedDict[Hashable, LaunchRecord] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def get(self, key: Hashable) -> LaunchRecord | None:
        """A copy of the record kept under `key` (callers may annotate their own), or None."""
        with self._lock:
            record = self._records.get(key)
            if record is None:
                self.misses += 1
                return None
            self._records.move_to_end(key)
            self.hits += 1
        return copy.copy(record)

    def put(self, key: Hashable, record: LaunchRecord) -> None:
        with self._lock:
            self._records[key] = copy.copy(record)
            self._records.move_to_end(key)
            while len(self._records) > self.capacity:
                self._records.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._records.clear()
            self.hits = self.misses = 0

    def __len__(self) -> int:
        return len(self._records)


TIMING_CACHE = TimingCache()


def reusable(device) -> bool:
    """Whether `device`'s launches may reuse a timing (see the module docstring)."""
    return device.timing_only and not device.debug and not device.record


def signature(kernel: Callable, kind, plan, mode, backend, windows) -> Hashable | None:
    """The launch's signature, or None when it has none (the backend gives none, or the
    tiling cannot be hashed). `windows` are the GM windows (GlobalTensor) the kernel takes, in
    order, workspace included."""
    chip_side = backend.timing_signature(windows)
    if chip_side is None:
        return None
    key = (kernel, kind, plan.tiling, plan.block_dim, mode, chip_side)
    try:
        hash(key)
    except (TypeError, ValueError):
        return None
    return key
