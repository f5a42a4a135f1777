"""Where tasks run: in this process, in a pool of local processes, or on a Ray cluster.

Every backend takes the same picklable tasks and yields their outcomes as they finish (not in
order); closing the stream (the sweep is done, or Ctrl-C) stops the workers at once. A task in
flight when its worker dies (killed, out of memory) runs once more; lost again, it is an error
outcome (WorkerLost in the pool, Ray's own error type on Ray), so a failure is never dropped.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import socket
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Generator, Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from contextlib import contextmanager
from types import ModuleType

from ..hixl import BadInput
from .task import Outcome, Task, close_all, execute, failure, local_scope, one_line

# Tasks queued per worker beyond the one it runs: enough that a worker never waits for the
# next task, few enough that Ctrl-C or a lost worker concerns only a handful.
QUEUED_PER_WORKER = 2
PARENT_POLL_SECONDS = 0.5   # [U] how soon a worker notices that the command was killed
LOST = "WorkerLost"
LOST_MESSAGE = ("its worker process died twice while running it, the second time alone "
                "(killed, out of memory or crashed); the other tasks went on")


def core_count() -> int:
    """The cores this process may run on (its affinity, else the machine's count)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:      # not on Linux
        return os.cpu_count() or 1


class Backend(ABC):
    """Runs tasks; `describe()` says where, for the summary."""

    workers: int = 1

    @abstractmethod
    def run(self, tasks: Iterable[Task]) -> Generator[Outcome, None, None]:
        """Outcomes as tasks finish. Closing the generator stops the workers."""

    @abstractmethod
    def describe(self) -> str:
        ...


class InProcess(Backend):
    """One task after the other in this process (one item, `--workers 1`, tests)."""

    def run(self, tasks: Iterable[Task]) -> Generator[Outcome, None, None]:
        store: dict = {}               # this sweep's devices and models, closed at its end
        try:
            for task in tasks:
                with local_scope(store):
                    outcome = execute(task)
                yield outcome
        finally:
            close_all(store)

    def describe(self) -> str:
        return "in this process"


class _Queue:
    """The tasks still to submit. A task in flight when a worker died is a suspect: it runs
    again, alone, so a task that kills its worker is told apart from those that merely ran
    beside it; lost when alone, it is an error outcome."""

    def __init__(self, tasks: Iterable[Task]) -> None:
        self.todo = iter(tasks)
        self.next = next(self.todo, None)
        self.suspects: list[Task] = []
        self.suspected: set[str] = set()

    def __bool__(self) -> bool:
        return bool(self.suspects) or self.next is not None

    def window(self, pending: Iterable[Task], full: int) -> int:
        """How many tasks may be in flight: one while suspects run, else `full`."""
        if self.suspects or any(t.id in self.suspected for t in pending):
            return 1
        return full

    def pop(self) -> Task:
        if self.suspects:
            return self.suspects.pop(0)
        task, self.next = self.next, next(self.todo, None)
        assert task is not None         # popped only while the queue is not empty
        return task

    def lost(self, tasks: Iterable[Task]) -> Iterator[Outcome]:
        for task in tasks:
            if task.id in self.suspected:
                yield failure(task.id, LOST, LOST_MESSAGE)
            else:
                self.suspected.add(task.id)
                self.suspects.append(task)


def _start_worker(parent: int) -> None:
    """Workers leave Ctrl-C to the command, which stops them (no traceback from each), and end
    when the command is gone (killed: nothing else would tell them, as each holds both ends of
    its task queue)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})     # held while it started

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(PARENT_POLL_SECONDS)
        os._exit(1)
    threading.Thread(target=watch, name="ixl-parent-watch", daemon=True).start()


@contextmanager
def _sigint_held():
    """SIGINT blocked on this thread while it may start a worker: the worker inherits the
    mask, so a Ctrl-C during its start-up (before its initializer ignores SIGINT) prints
    nothing there, and this process receives the Ctrl-C as soon as the mask is restored."""
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def _stop(pool: ProcessPoolExecutor) -> None:
    """Queued tasks dropped, running ones ended at once (their outcomes were not recorded, so
    nothing finished is lost). Python 3.14 has terminate_workers(); before it the processes
    are only reachable through the pool's own table."""
    terminate = getattr(pool, "terminate_workers", None)
    if terminate is not None:
        terminate()
        return
    processes = list((getattr(pool, "_processes", None) or {}).values())
    pool.shutdown(wait=False, cancel_futures=True)
    for process in processes:
        process.terminate()
    for process in processes:
        process.join(timeout=10)


class ProcessPool(Backend):
    """`workers` local processes, started fresh ("spawn": they inherit no state of this one)
    and kept for the whole sweep, each with its own devices."""

    def __init__(self, workers: int) -> None:
        self.workers = workers

    def describe(self) -> str:
        return f"process pool, {self.workers} worker{'s' if self.workers > 1 else ''}"

    def _pool(self) -> ProcessPoolExecutor:
        """A new pool with every worker started, side by side (a worker that dies as it
        starts, as in a script that runs a sweep outside `if __name__ == "__main__":`, is an
        error at once, not a loss of every task)."""
        pool = ProcessPoolExecutor(self.workers, mp_context=multiprocessing.get_context("spawn"),
                                   initializer=_start_worker, initargs=(os.getpid(),))
        try:
            with _sigint_held():       # each submit starts a worker while none is idle yet
                started = [pool.submit(os.getpid) for _ in range(self.workers)]
            for future in started:
                future.result()
        except BrokenProcessPool:
            pool.shutdown(wait=False)
            raise RuntimeError("the sweep's worker processes die as they start (their error is "
                               "above; a script that runs a sweep must do so under `if "
                               "__name__ == \"__main__\":`)") from None
        except BaseException:
            _stop(pool)
            raise
        return pool

    def run(self, tasks: Iterable[Task]) -> Generator[Outcome, None, None]:
        queue = _Queue(tasks)
        pool = self._pool()
        pending: dict = {}
        finished = False
        try:
            while True:
                full = self.workers * (1 + QUEUED_PER_WORKER)
                while queue and len(pending) < queue.window(pending.values(), full):
                    task = queue.pop()
                    with _sigint_held():
                        pending[pool.submit(execute, task)] = task
                if not pending:
                    break
                done, _ = wait(pending, return_when=FIRST_COMPLETED)
                broken = [f for f in done if isinstance(f.exception(), BrokenProcessPool)]
                for future in done:
                    if future not in broken:
                        del pending[future]
                        yield future.result()
                if broken:     # a worker died: the tasks still in flight died with the pool
                    yield from queue.lost(pending.values())
                    pending.clear()
                    _stop(pool)
                    pool = self._pool()
            finished = True
        finally:
            if finished:
                pool.shutdown(wait=True)
            else:
                _stop(pool)


# ---------------------------------------------------------------- Ray

RAY_INSTALL = "pip install 'ixl[ray]'"
CONNECT_SECONDS = 5.0       # [U] a cluster head answers a TCP connect in well under this


def import_ray() -> ModuleType:
    """Ray, imported only when asked for (the optional extra)."""
    try:
        import ray
    except ImportError:
        raise BadInput(f"--ray needs Ray, which is not installed: {RAY_INSTALL} (the optional "
                       f"extra pins the version ixl is tested with)") from None
    return ray


def _ixl_environment() -> dict[str, str]:
    """IXL_* variables, passed to the cluster's workers (a remote node has its own)."""
    return {k: v for k, v in os.environ.items() if k.startswith("IXL_")}


def check_reachable(address: str) -> None:
    """A cluster address (host:port or ray://host:port) answers: Ray itself would retry a
    dead one for minutes before saying so."""
    host, sep, port = address.removeprefix("ray://").rpartition(":")
    if not sep or not port.isdigit():
        raise BadInput(f"--ray {address}: give auto, HOST:PORT (the head node's GCS, as `ray "
                       f"start --head` prints it) or ray://HOST:PORT (Ray Client)")
    try:
        socket.create_connection((host, int(port)), timeout=CONNECT_SECONDS).close()
    except OSError as e:
        raise BadInput(f"--ray {address}: no Ray cluster answers there ({e.strerror or e}); "
                       f"start one (`ray start --head`) or give --ray auto") from None


class RayCluster(Backend):
    """Tasks as Ray tasks. `address` "auto" joins the cluster this machine runs or starts a
    local one; otherwise it is the cluster's address (ray://host:10001, host:6379). When Ray
    is already initialised in this process (a notebook, a test), that cluster is used as is and
    left running. ixl must be installed on the cluster's nodes."""

    def __init__(self, address: str = "auto") -> None:
        self.address = address
        self.ray = import_ray()
        self._started = False

    def describe(self) -> str:
        where = "local or running" if self.address == "auto" else self.address
        return f"Ray ({where}), {self.workers} CPU{'s' if self.workers != 1 else ''}"

    def connect(self) -> None:
        ray = self.ray
        if not ray.is_initialized():
            if self.address != "auto":
                check_reachable(self.address)
            env = _ixl_environment()
            ray.init(address=None if self.address == "auto" else self.address,
                     runtime_env={"env_vars": env} if env else None,
                     log_to_driver=False, logging_level="ERROR", configure_logging=True)
            self._started = True
        self.workers = max(1, int(ray.cluster_resources().get("CPU", 1)))

    def run(self, tasks: Iterable[Task]) -> Generator[Outcome, None, None]:
        ray = self.ray
        self.connect()
        remote = ray.remote(execute).options(max_retries=1)   # once more if its worker dies
        queue = _Queue(tasks)
        pending: dict = {}
        try:
            while True:
                while queue and len(pending) < self.workers * (1 + QUEUED_PER_WORKER):
                    task = queue.pop()
                    pending[remote.remote(task)] = task
                if not pending:
                    break
                done, _ = ray.wait(list(pending), num_returns=1)
                for ref in done:
                    task = pending.pop(ref)
                    try:
                        outcome = ray.get(ref)
                    except ray.exceptions.RayError as e:    # a lost worker or node, not the task
                        outcome = failure(task.id, type(e).__name__, one_line(e))
                    yield outcome
        finally:
            for ref in pending:
                ray.cancel(ref, force=True)
            if self._started:
                ray.shutdown()
                self._started = False
