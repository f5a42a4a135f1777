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

from contextlib import AbstractContextManager
from typing import Any

from threadpoolctl import OpenBLASController, ThreadpoolController

from .host_hold import HostHold

_controller: ThreadpoolController | None = None
_limiter: Any = None    # restores the user's BLAS threads when the last launch leaves


def _limit() -> None:
    global _controller, _limiter
    if _controller is None:
        _controller = ThreadpoolController()
    OpenBLASController.clear_controlling_thread(force=True)
    _limiter = _controller.limit(limits=1, user_api="blas")


def _restore() -> None:
    global _limiter
    OpenBLASController.clear_controlling_thread(force=True)
    _limiter.restore_original_limits()
    OpenBLASController.clear_controlling_thread(force=True)
    _limiter = None


_hold = HostHold(_limit, _restore)


def one_blas_thread() -> AbstractContextManager[None]:
    """The host's BLAS on one thread until the last running launch ends."""
    return _hold.held()
