"""Native Gemm: y = alpha * op(A) @ op(B) + beta * C on the matrix-product kernel (matmul.py).

transA and transB are layouts the Cube loads directly (NZ of the transpose, turned by its 3-D
loads). What follows the product is a program of elementwise steps (`gemm_program`): a Muls
by alpha, a Muls of C by beta, an Add. With alpha = beta = 1 and C a row of N half or float
values, the Add is the Cube's own (C starts each tile from the BiasTable) and the kernel is a
cube kernel; anything else runs on the vector side of a mix kernel (matmul_epilogue.py). K of
0 leaves beta * C.
"""

from __future__ import annotations

from ..hixl.dtypes import FLOATS
from ..nixl import KernelEntry, LaunchPlan, TensorDesc, register_kernel
from ..nixl.backend import KernelType
from .elementwise_ops import BODIES
from .matmul import TUNING_SPACE, declines, launch_plan, matmul_kernel
from .matmul_epilogue import consumers
from .matmul_tiling import gemm_shape
from .program import Step
from .version import BUILT_FOR_RUNTIME


def gemm_program(attrs: dict, c_input: int | None, n_inputs: int) -> tuple[Step, ...]:
    """Gemm's steps after the product (value n_inputs; step p's result n_inputs + 1 + p)."""
    steps: list[Step] = []

    def step(op: str, args: tuple, **step_attrs) -> int:
        steps.append(Step(op, BODIES[op], args, tuple(sorted(step_attrs.items()))))
        return n_inputs + len(steps)

    value = n_inputs
    if attrs["alpha"] != 1:
        value = step("Muls", (value,), scalar=float(attrs["alpha"]))
    if c_input is not None:
        c = c_input if attrs["beta"] == 1 else step("Muls", (c_input,),
                                                      scalar=float(attrs["beta"]))
        step("Add", (value, c))
    return tuple(steps)


def _plan(ins: list[TensorDesc], outs: list[TensorDesc], attrs: dict, chip, config=None
          ) -> LaunchPlan:
    shape = gemm_shape(ins[0], ins[1], attrs["transA"], attrs["transB"])
    c = 2 if len(ins) > 2 and ins[2] is not None else None
    epilogue = consumers(gemm_program(attrs, c, len(ins)), len(ins), (0, 1), ins, shape.n)
    return launch_plan(shape, epilogue, ins, outs[0], chip, config)


def _declines(descs: list, attrs: dict) -> str | None:
    return declines(gemm_shape(descs[0], descs[1], attrs["transA"], attrs["transB"]), descs)


register_kernel(KernelEntry(
    op="Gemm", kernel=matmul_kernel, tiling=_plan, dtypes=FLOATS,
    built_for_runtime=BUILT_FOR_RUNTIME, kind=KernelType.CUBE, tuning_space=TUNING_SPACE,
    declines=_declines))
