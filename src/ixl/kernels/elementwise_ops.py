"""Native elementwise kernels: each is its compute body on the shared template."""

from __future__ import annotations

from ..ascend import lang as asc
from ..nixl import KernelEntry, register_kernel
from . import BUILT_FOR_RUNTIME
from .elementwise import make_kernel, plan, same_shapes, tile_unit

FLOATS = ("float16", "bfloat16", "float32")


def _register(op: str, arity: int, body) -> None:
    register_kernel(KernelEntry(
        op=op, kernel=make_kernel(f"{op.lower()}_kernel", arity, body),
        tiling=lambda ins, outs, attrs, chip, config: plan(arity, outs[0], chip, config),
        dtypes=FLOATS, built_for_runtime=BUILT_FOR_RUNTIME, declines=same_shapes,
        tile_unit=tile_unit(arity), tuning_space={"buffer_num": (1, 2, 4, 8)}))


_register("Add", 2, lambda y, xs, n: asc.add(y, xs[0], xs[1], n))
_register("Mul", 2, lambda y, xs, n: asc.mul(y, xs[0], xs[1], n))
_register("Relu", 1, lambda y, xs, n: asc.relu(y, xs[0], n))
