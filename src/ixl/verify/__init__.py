"""Verification (R8): golden comparison under per-dtype tolerances, sample and boundary cases."""

from .cases import CaseResult, host_bytes, run_case, sample_specs, verify_op_cases
from .compare import Comparison, compare

__all__ = ["CaseResult", "host_bytes", "run_case", "sample_specs", "verify_op_cases",
           "Comparison", "compare"]
