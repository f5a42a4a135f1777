"""Fusion around the axis ops (the fusion pass's anchors): which chains an axis kernel takes,
and the fused kernel that runs them.

A fused kernel loads the prologue's inputs segment by segment as it would x, side by side in
one queue slot, runs their elementwise bodies (in the compute dtype) into the tile of x and
puts the op's identity back in its pad lanes; the epilogue's bodies run on the finished tile
before it is converted and copied out. Streamed segments recompute the prologue on each pass,
as they reload x. Producers read x-shaped tiles or scalars (no broadcasting inside a row);
consumers read scalars only.
"""

from __future__ import annotations

from collections.abc import Callable

from ..ascend import lang as asc
from ..hixl.dtypes import FLOATS
from ..intmath import round_up
from ..nixl import KernelContext, TensorDesc
from .axis_kernel import AxisKernel, AxisOp, Chain
from .axis_layout import Segment, Tile
from .axis_plan import padded_storage
from .axis_ub import Fusion
from .program import BodyArgs, resolve_program
from .ub import convert, read_scalars


def fuse(op: str, program: tuple, at: int, args: tuple, in_descs: list,
         out: TensorDesc) -> tuple[Fusion, str | None]:
    """The fusion of `program` (the other steps) around axis op `op`, step `at`, which reads
    x and its parameters as `args`; and why the axis kernel declines it (None: it takes it)."""
    n = len(in_descs)
    tiles, scalars, consts = [], [], []
    reason = padded_storage(in_descs)
    for k, step in enumerate(program):
        data = len(step.args) - len(step.body.scalars)
        for j, a in enumerate(step.args):
            if a is None or a >= n:
                continue
            d = in_descs[a]
            if j >= data:
                scalars.append(a)
            elif k < at and d.shape == out.shape and d.dtype == out.dtype:
                tiles.append(a)
            elif d.size == 1 and d.dtype in FLOATS:
                scalars.append(a)
                consts.append(a)
            elif reason is None:
                where, takes = (("before", "x's tiles or scalars") if k < at
                                else ("after", "scalars"))
                reason = (f"{step.op} {where} {op} reads a {d.dtype} tensor of shape "
                          f"{list(d.shape)}; the fused {op} kernel takes {takes} there "
                          f"(x: {out.dtype} {list(out.shape)})")
    fusion = Fusion(program[:at], program[at:], _unique(tiles) if at else (args[0],),
                    _unique(scalars), _unique(consts), tuple(args[1:]))
    return fusion, reason


def _unique(ids: list) -> tuple:
    return tuple(dict.fromkeys(ids))


class FusedAxisKernel(AxisKernel):
    """An axis kernel with elementwise bodies before its op (computing x) and after it."""

    def __init__(self, ctx: KernelContext, op: AxisOp, fusion: Fusion, inputs: tuple,
                 y: asc.GlobalTensor) -> None:
        """`inputs`: the kernel's inputs by value id (the bodies' tiles and scalars)."""
        params = [None if i is None else inputs[i] for i in fusion.params]
        params += [None] * (op.params - len(params))          # omitted trailing parameters
        super().__init__(ctx, op, [inputs[i] for i in fusion.tiles], params, y, [], fusion)
        self._init_bodies(inputs)

    def _init_bodies(self, inputs: tuple) -> None:
        """The bodies' buffers, carved from one in the order Fusion.buffers counts them; the
        scalars read and spread once per block; the programs resolved."""
        fusion = self.fusion
        counts = fusion.buffers(self.widen)
        bodies = self._alloc("bodies")
        tiles = iter([bodies[k * self.ub.body_stride] for k in range(sum(counts))])
        self.converted, self.results, self.temps, consts = (
            [next(tiles) for _ in range(c)] for c in counts)
        values = read_scalars(self.pipe, self.chip, {i: inputs[i] for i in fusion.scalars})
        self.base = [None] * len(inputs)         # per kernel input: its tile, if a body reads one
        for buf, i in zip(consts, fusion.consts):
            asc.duplicate(buf, values[i], self.span)
            self.base[i] = buf
        self.prologue = resolve_program(fusion.prologue, values)
        self.epilogue = resolve_program(fusion.epilogue, values)

    def run_steps(self, program: list, values: list, tile: Tile,
                  last: asc.LocalTensor | None) -> asc.LocalTensor:
        """Run a program's bodies over the whole tile (pad lanes too); each result goes to the
        next result buffer, the last to `last` (None: a result buffer too). A chain's step
        reads only its predecessor's result, so two buffers in turn suffice."""
        nv = round_up(tile.size, self.chip.lanes(2))
        for j, (fn, args, attrs) in enumerate(program):
            out = last if j == len(program) - 1 and last is not None else self.results[j % 2]
            fn(BodyArgs(out, [values[a] for a in args], self.temps, tile.size, nv, attrs))
            values.append(out)
        return values[-1]

    def load(self, tile: Tile, seg: Segment) -> asc.LocalTensor:
        """x computed from the prologue's input tiles; its pad lanes get the op's identity
        back, as bodies leave anything there."""
        if not self.prologue:
            return super().load(tile, seg)
        self.copy_in(tile, seg)
        slot = self.in_q.deque()
        values = list(self.base)
        for k, i in enumerate(self.fusion.tiles):
            values[i] = slot[k * self.ub.in_stride]
            if self.widen:
                convert(self.converted[k], values[i], tile.size)
                values[i] = self.converted[k]
        x = self.run_steps(self.prologue, values, tile, self.work)
        self.in_q.free_tensor(slot)
        tile.fill_pads(x, self.op.pad, tile.count)
        return x

    def finish(self, tile: Tile, y: asc.LocalTensor, x: asc.LocalTensor,
               st: list) -> asc.LocalTensor:
        """The op's output, then the epilogue's bodies on it."""
        result = self.op.finish(tile, Chain(self, x, y), x, st)
        if self.epilogue:
            values = self.base + [None] * len(self.prologue) + [result]
            result = self.run_steps(self.epilogue, values, tile, None if self.widen else y)
        return result


def make_fused_kernel(name: str, op: AxisOp, fusion: Fusion) -> Callable[..., None]:
    """The device kernel of a fusion around `op`: the GM tensors are the kernel's inputs (by
    value id), then y."""

    def kernel(ctx: KernelContext, *gm: asc.GlobalTensor) -> None:
        FusedAxisKernel(ctx, op, fusion, gm[:-1], gm[-1]).process()

    kernel.__name__ = kernel.__qualname__ = name
    return kernel
