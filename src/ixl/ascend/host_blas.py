"""The host's BLAS on one thread while cores are simulated.

A simulated Mmad is one small matrix product on the host (a few hundred rows). OpenBLAS
splits even those over its threads, and on a busy host the threads' hand-offs cost far more
than the product: a 128 x 256 x 128 float32 product measured 50 ms on two threads of a shared
2-core machine and 0.06 ms on one. Launches hold the BLAS to one thread (threadpoolctl, the
library scikit-learn uses for this) and give the user's setting back when the last running
launch ends. Only the host's speed changes: the simulated cores' numbers and modeled times
do not.

OpenBLAS's thread pool is one per process, and threadpoolctl lets only one "controlling"
thread set it (others silently do nothing); launches run on any thread and overlap across
chips, so the first to start and the last to end hand that role over under one lock.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from threadpoolctl import OpenBLASController, ThreadpoolController

_lock = threading.Lock()
_controller: ThreadpoolController | None = None
_running = 0            # launches inside `one_blas_thread` (launches of several chips overlap)
_limiter: Any = None    # restores the user's BLAS threads when the last one leaves


@contextmanager
def one_blas_thread() -> Iterator[None]:
    global _controller, _running, _limiter
    with _lock:
        if _running == 0:
            if _controller is None:
                _controller = ThreadpoolController()
            OpenBLASController.clear_controlling_thread(force=True)
            _limiter = _controller.limit(limits=1, user_api="blas")
        _running += 1
    try:
        yield
    finally:
        with _lock:
            _running -= 1
            if _running == 0:
                OpenBLASController.clear_controlling_thread(force=True)
                _limiter.restore_original_limits()
                OpenBLASController.clear_controlling_thread(force=True)
                _limiter = None
