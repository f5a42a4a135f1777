"""What follows a product on the Cube: its epilogue.

The Cube finishes what it can on the way out of L0C: a bias row (1 x N) is the starting value
of a tile's first Mmad, read from the BiasTable [MMAD][BT], and ReLU is a Fixpipe switch [FIX].
Anything else (Gemm's alpha and beta * C, a scaling, a residual Add, Gelu, ...) is a program of
elementwise bodies (program.py) that the vector cores of a mix kernel run on each finished
tile [CVF]: the AIC writes the tile's float32 values to a GM workspace and sets a cross-core
flag; each of its two AIVs waits for it, takes half the tile's rows through UB (the rows of
the elementwise template, kernels/elementwise.py, with the tile's columns as the row width),
runs the program, converts to the output type and writes y; then it sets a flag back, so the
AIC never runs more than CREDITS tiles ahead (a cross-core flag counts at most 15 pending
sets [XCORE]).

`Epilogue` says which is which; `consumers` splits a fused chain's steps after the product
into the two parts; `EpilogueKernel` is the AIV side.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass, replace

from ..ascend import lang as asc
from ..ascend.chips import ChipSpec
from ..intmath import ceil_div
from ..nixl import KernelContext, TensorDesc
from .broadcast import InputPlan
from .elementwise import ElementwiseTiling, RowKernel, RowTile, plan_given_rows
from .matmul_tiling import MatmulTiling
from .program import Step
from .ub import spread

READY, FREE = 0, 1       # cross-core flags: a tile is in the workspace / its rows are done
CREDITS = 8              # tiles the AIC may finish ahead of its AIVs
BIAS_DTYPES = ("float16", "float32")     # what L1 -> BiasTable takes (half widens) [BT]


@dataclass(frozen=True)
class Epilogue:
    """The product's operands and what follows it. Kernel inputs are named by their index
    among the kernel's inputs; the vector program's values are the product's tile (0), then
    `inputs` in order, then the steps' results."""

    operands: tuple[int, int] = (0, 1)        # A and B
    bias: int | None = None                   # a row added by the Cube (BiasTable)
    relu: bool = False                        # ReLU in the Fixpipe
    steps: tuple[Step, ...] = ()              # the vector program
    inputs: tuple[int | None, ...] = ()       # kernel inputs the vector program reads

    @property
    def vector(self) -> bool:
        """The vector cores have work: a mix kernel."""
        return bool(self.steps)

    @property
    def names(self) -> str:
        parts = ["bias (BiasTable)"] * (self.bias is not None) + ["ReLU (Fixpipe)"] * self.relu
        return ", ".join(parts + [s.op for s in self.steps]) or "none"


def is_bias_row(desc: TensorDesc | None, n: int) -> bool:
    """A row of N values the BiasTable can hold: shape (N,) or (1, ..., 1, N), half or float."""
    return (desc is not None and desc.dtype in BIAS_DTYPES and desc.shape[-1:] == (n,)
            and math.prod(desc.shape) == n and not desc.is_padded)


def consumers(program: tuple[Step, ...], n_inputs: int, operands: tuple[int, int],
              in_descs: list, n: int) -> Epilogue:
    """Split the steps after a product (value n_inputs; step p's result is value
    n_inputs + 1 + p) into the Cube's part (a leading bias Add, then a Relu) and the vector
    program, renumbered for the vector side."""
    result, first, bias, relu = n_inputs, 0, None, False
    if first < len(program) and program[first].op == "Add" and result in program[first].args:
        other = next((a for a in program[first].args if a != result), result)
        if other < n_inputs and is_bias_row(in_descs[other], n):
            bias, result, first = other, n_inputs + 1 + first, first + 1
    if first < len(program) and program[first].op == "Relu":
        relu, result, first = True, n_inputs + 1 + first, first + 1
    rest = program[first:]
    used = tuple(dict.fromkeys(a for s in rest for a in s.args
                               if a is not None and a < n_inputs))
    ids = {result: 0, **{a: 1 + j for j, a in enumerate(used)}}
    for j in range(len(rest)):
        ids[n_inputs + 1 + first + j] = 1 + len(used) + j
    steps = tuple(replace(s, args=tuple(None if a is None else ids[a] for a in s.args))
                  for s in rest)
    return Epilogue(operands, bias, relu, steps, used)


def plan_vector_side(epilogue: Epilogue, in_descs: list, out: TensorDesc, mm: MatmulTiling,
                     chip: ChipSpec) -> ElementwiseTiling:
    """The vector side's row layout: a tile's columns as the row width, at most half its rows
    (one AIV's share) per UB tile."""
    acc = TensorDesc.nd(out.shape, "float32")
    descs = [acc] + [None if i is None else in_descs[i] for i in epilogue.inputs]
    return plan_given_rows(descs, out, chip, epilogue.steps, mm.base_n,
                           ceil_div(mm.base_m, chip.aiv_per_aic))


class EpilogueKernel(RowKernel):
    """One AIV of a mix kernel: its half of the rows of each tile its AIC finishes."""

    def __init__(self, ctx: KernelContext, mm: MatmulTiling, srcs: list,
                 y: asc.GlobalTensor) -> None:
        """`srcs`: the workspace (the product's float32 tiles) and the program's inputs."""
        super().__init__(replace(ctx, tiling=mm.vector), srcs, y)
        self.mm, self.ctx = mm, ctx

    def fill_constant(self, buf: asc.LocalTensor, row: asc.LocalTensor, cap: int,
                      p: InputPlan) -> None:
        """A single element (the only input built once here) spread over a whole tile."""
        spread(buf, row, self.tiling.tile * self.tiling.row_pad)

    # On a mix kernel's vector side the tiles wait on the AIC's flags: process is a generator
    # here, unlike the plain row kernel's.
    def process(self) -> Iterator[object]:  # type: ignore[override]
        mm, ctx = self.mm, self.ctx
        shape, rows_per = mm.shape, self.tiling.tile
        group = ctx.block_idx // ctx.task_ratio
        for index in mm.core_tiles(group, ctx.block_num):
            yield asc.cross_core_wait_flag(READY)
            matrix, m0, n0 = mm.tile(index)
            bm, bn = min(mm.base_m, shape.m - m0), min(mm.base_n, shape.n - n0)
            half = ceil_div(bm, ctx.task_ratio)
            lo, hi = ctx.sub_block_idx * half, min(bm, (ctx.sub_block_idx + 1) * half)
            for r in range(lo, hi, rows_per):
                rows = min(rows_per, hi - r)
                tile = RowTile(matrix * shape.m + m0 + r, rows, n0, bn,
                               rows * self.tiling.row_pad)
                self.copy_in(tile)
                self.compute(tile)
                self.copy_out(tile)
            asc.cross_core_set_flag(2, asc.Pipe.MTE3, FREE)
