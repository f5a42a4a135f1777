"""ONNX's own backend node tests, through ixl.onnx.IxlBackend.

Nobody here wrote these cases: they check HIXL's semantics (the golden every kernel is held to)
against ONNX's definitions. The selection (every node case of an op in ixl's list, `_expanded`
function bodies included, plus PyTorch-converted Conv2d / Linear / Embedding / Softmax) is
`ixl.onnx.node_cases.node_cases()`. onnx is pinned to 1.22.0, which ships the cases as files
(under a second to load; later versions build them in memory, about 10 s per process).

Every case runs, in debug mode; none is skipped. The expected failures are all listed here,
with the reason, and are strict: a case that starts passing fails the run until its entry is
removed.
"""

import re

import pytest

from ixl.executor import ProcessPool
from ixl.hixl import all_ops
from ixl.onnx.node_cases import (
    backend_test_cases,
    count,
    debug_backend,
    node_case_counts,
    node_cases,
    run_cases,
)
from ixl.onnx.translate import NOT_ONNX

NARROW_INTS = ("8-bit, 16-bit and unsigned integers are outside the dtypes ixl computes on "
               "(float16, bfloat16, float32, float64, int32, int64)")
XFAIL = {
    r"^test_(add|sub|mul|div|max|min|equal|less|greater|greater_equal|less_equal)_"
    r"(int8|int16|uint\d+)(_expanded)?$": NARROW_INTS,
    r"^test_mod_(mixed_sign_int8|mixed_sign_int16|uint\d+)$": NARROW_INTS,
    r"^test_pow_types_float32_uint(32|64)$": NARROW_INTS,
    r"^test_top_k_uint64$": NARROW_INTS,
    # (test_clip_default_int8_inbounds_expanded passes: its body is a bare Identity)
    r"^test_clip_default_int8_(inbounds|max|min|max_expanded|min_expanded)$": NARROW_INTS,
    r"^test_cast(like)?_.*(FLOAT8|FLOAT4|INT4|INT2|UINT4|UINT2)":
        "float8, float4, 4-bit and 2-bit integer dtypes: ixl has no such dtype",
    r"^test_equal_string": "string tensors: ixl computes on numbers and booleans only",
    r"^test_(identity|if)_(opt|sequence|seq)$|^test_loop(13_seq|16_seq_none)$":
        "optional and sequence values: ixl runs tensors only",
    r"^test_batchnorm_.*_training_mode$":
        "BatchNormalization in training mode (batch statistics, running averages): ixl runs "
        "inference",
    r"^test_resize_.*_antialias$": "Resize with antialias=1 is not implemented",
    r"^test_training_dropout":
        "Dropout whose training_mode is a graph input (true: a random mask): ixl runs Dropout "
        "at inference, where training_mode is absent or a constant false",
}


def xfail_reason(case: str) -> str | None:
    return next((reason for pattern, reason in XFAIL.items() if re.search(pattern, case)), None)


def _mark(case: str, fn):
    reason = xfail_reason(case)
    return fn if reason is None else pytest.mark.xfail(reason=reason, strict=True)(fn)


globals().update(backend_test_cases(debug_backend(), __name__, _mark))


def test_every_onnx_op_of_the_list_is_exercised():
    exercised = set(node_cases().values())
    onnx_ops = {name for name in all_ops() if name not in NOT_ONNX} | {"Maximum", "Minimum"}
    assert onnx_ops - exercised == set()


def test_recorded_counts_match_the_cases_and_the_xfail_table():
    """node_cases.json (for `ixl list`) is what this file enforces: every case passes except
    the listed ones. Regenerate it with `python -m ixl.onnx.node_cases`."""
    expected = count({case: xfail_reason(case) is None for case in node_cases()})
    assert node_case_counts() == expected


def test_the_runner_gives_the_same_verdicts_in_a_process_pool():
    """`python -m ixl.onnx.refresh_counts` runs the cases as a sweep: on two worker processes a
    few of them (passing and expected to fail) get the verdicts they get here, which are the
    xfail table's."""
    names = [n for n in node_cases() if n.startswith(("test_add", "test_softmax_axis_0"))]
    here = run_cases(names=names)
    assert here == {name: xfail_reason(name) is None for name in names}
    assert run_cases(ProcessPool(2), names) == here
