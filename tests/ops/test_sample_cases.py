"""Every op against its HIXL golden over every sample case and dtype, in debug mode (R8); the
tier A kernels and the Cube's matrix kernels take every one of their cases natively (but the
ones listed, with the reason the kernel gives). The "large" cases are marked slow (the
boundary cases stay in every run)."""

import pytest

import ixl
from ixl.verify.cases import iter_samples, run_case, sample_specs

CASES = [pytest.param(s, c, d, id=f"{s.name}-{c.note}-{d}",
                      marks=[pytest.mark.slow] if c.note.startswith("large") else [])
         for s, c, d in iter_samples()]


MATRIX_OPS = ("MatMul", "Gemm", "Conv", "ConvTranspose")
# their cases left to the shim: (op, case note) -> the reason the kernel declines
MATRIX_SHIM = {("ConvTranspose", "3-D"): "1-D and 2-D convolutions run natively"}


@pytest.fixture(scope="module")
def debug_dev():
    d = ixl.device("910B1", debug=True)
    yield d
    assert d.close() == []


@pytest.mark.parametrize("schema, case, dtype", CASES)
def test_sample_case(debug_dev, schema, case, dtype):
    specs = sample_specs(debug_dev, schema, case, dtype)
    res = run_case(debug_dev, schema, specs, case.attrs, note=case.note)
    assert res.ok, "; ".join(c.summary() for c in res.comparisons)
    if (schema.tier == "A" or schema.name in MATRIX_OPS) \
            and debug_dev.registry.native(schema.name) is not None:
        declined = MATRIX_SHIM.get((schema.name, case.note))
        assert res.path == "native" if declined is None else declined in res.reason, res.reason


def test_native_ops_take_the_native_path_on_same_shapes(debug_dev):
    for name in ("Add", "Mul", "Relu"):
        schema = ixl.hixl.get_op(name)
        specs = [ixl.hixl.ArgSpec((1024,), "float16")] * len(schema.inputs)
        assert run_case(debug_dev, schema, specs).path == "native"
