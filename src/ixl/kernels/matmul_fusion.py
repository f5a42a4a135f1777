"""MatMul and Gemm as anchors of the fusion pass: a chain that starts with a product takes the
elementwise steps after it as the product's epilogue (matmul_epilogue.py), so a Linear
layer's MatMul + Add (+ Gelu, + a residual Add) is one launch. A leading bias Add and a ReLU
run on the Cube (BiasTable, Fixpipe) and keep the kernel a cube kernel; the rest makes it a
mix kernel whose vector cores finish each tile. Nothing may come before the product in the
chain (its operands are read by the Cube as they lie in GM).
"""

from __future__ import annotations

from ..hixl.dtypes import FLOATS
from ..nixl.backend import KernelType
from .fusion_provider import FUSION
from .gemm import gemm_program
from .matmul import TUNING_SPACE, declines, launch_plan, matmul_kernel
from .matmul_epilogue import consumers
from .matmul_tiling import gemm_shape, matmul_shape
from .program import Step


def _shifted(program: tuple[Step, ...], n_inputs: int, by: int) -> tuple[Step, ...]:
    """The chain's steps after the anchor, with the anchor's and their own results moved on
    by `by` (the anchor's own steps come first)."""
    def move(a):
        return a + by if a is not None and a >= n_inputs else a
    return tuple(Step(s.op, s.body, tuple(move(a) for a in s.args), s.attrs) for s in program)


def _named(name: str):
    def kernel(ctx, *gm):
        return matmul_kernel(ctx, *gm)
    kernel.__name__ = kernel.__qualname__ = name
    return kernel


def _anchor(op: str):
    def build(kernel_name, program, at, args, attrs, in_descs, out) -> dict:
        n = len(in_descs)
        gemm = op == "Gemm"
        c = args[2] if gemm and len(args) > 2 else None
        own = gemm_program(attrs, c, n) if gemm else ()
        steps = own + _shifted(program, n, len(own))
        operands = (args[0], args[1])

        def shape_of(descs):
            a, b = descs[operands[0]], descs[operands[1]]
            return gemm_shape(a, b, attrs["transA"], attrs["transB"]) if gemm \
                else matmul_shape(a, b)

        def tiling(ins, outs, _attrs, chip, config):
            shape = shape_of(ins)
            epilogue = consumers(steps, n, operands, ins, shape.n)
            return launch_plan(shape, epilogue, ins, outs[0], chip, config)

        def refuses(descs, _attrs):
            if at != 0:
                return f"{op} runs first in a fused chain: the Cube reads its operands from GM"
            if not out.shape:
                return f"a {op} of a 0-D result has no rows for the vector cores"
            return declines(shape_of(descs), descs)

        return {"kernel": _named(kernel_name), "tiling": tiling, "dtypes": FLOATS,
                "tuning_space": TUNING_SPACE, "declines": refuses, "kind": KernelType.CUBE}
    return build


FUSION.add_anchor("MatMul", _anchor("MatMul"))
FUSION.add_anchor("Gemm", _anchor("Gemm"))
