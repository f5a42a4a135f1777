"""Launches hold the host's BLAS to one thread and give the user's setting back after the last
overlapping launch, on any thread."""

import threading

import pytest
from threadpoolctl import threadpool_info, threadpool_limits

from ixl.ascend.host_blas import one_blas_thread


def _blas_threads() -> set[int]:
    return {lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"}


def test_one_thread_inside_and_the_users_setting_after_overlapping_launches():
    with threadpool_limits(limits=2, user_api="blas"):
        if not _blas_threads():
            pytest.skip("no BLAS that threadpoolctl controls is loaded")
        inside = threading.Event()
        leave = threading.Event()

        def other_launch():
            with one_blas_thread():
                inside.set()
                leave.wait(10)

        worker = threading.Thread(target=other_launch)
        worker.start()
        inside.wait(10)
        with one_blas_thread():
            assert _blas_threads() == {1}
        assert _blas_threads() == {1}       # the other launch still runs
        leave.set()
        worker.join()
        assert _blas_threads() == {2}
