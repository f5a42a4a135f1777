import numpy as np

from ixl.hixl import Tolerance
from ixl.verify import compare


def test_reports_errors_count_and_first_index():
    ref = np.zeros((3, 4), np.float32)
    out = ref.copy()
    out[1, 2] = 0.5
    out[2, 3] = 0.25
    c = compare(out, ref, Tolerance(1e-3, 1e-3))
    assert not c.ok and c.mismatches == 2 and c.first_mismatch == (1, 2)
    assert c.max_abs_err == 0.5 and c.got == 0.5 and c.expected == 0.0


def test_within_tolerance_passes_with_error_reported():
    ref = np.array([1.0, 2.0], np.float16)
    out = np.array([1.0, 2.001], np.float16)
    c = compare(out, ref, Tolerance(1e-3, 1e-3))
    assert c.ok and c.max_abs_err > 0


def test_nan_matches_nan_only():
    ref = np.array([np.nan, 1.0], np.float32)
    assert compare(np.array([np.nan, 1.0], np.float32), ref, Tolerance(0, 0)).ok
    c = compare(np.array([np.nan, np.nan], np.float32), ref, Tolerance(1, 1))
    assert not c.ok and c.first_mismatch == (1,) and c.max_abs_err == float("inf")


def test_shape_difference_fails():
    c = compare(np.zeros(3), np.zeros(4), Tolerance(1, 1))
    assert not c.ok and "shape" in c.note
