"""The elementwise template (tier S, the model families, comparisons and logic) over its
boundaries: flat lengths at block, repeat and tile edges and at one tile per core; broadcast
inputs (the row layout: a last dim at block edges, rows around a tile's rows); every dtype the
op takes. Attributes and fixed inputs come from one of the op's own sample cases."""

from functools import lru_cache

from hypothesis import assume, given
from hypothesis import strategies as st

from ixl.hixl import ArgSpec, SampleCase, all_ops, get_op
from ixl.nixl import REGISTRY

from .space import (
    CHIP,
    check,
    dim,
    dtype_of,
    fits,
    near,
    small_edges,
    sweep_settings,
    template,
)

OPS = [op for op in sorted(all_ops())
       if REGISTRY.native(op) is not None and get_op(op).family in ("elementwise", "compare")]


@lru_cache
def _flat_edges(op: str, dtype: str) -> list[int]:
    """Block and repeat edges, the flat tile and one tile on every core."""
    entry = REGISTRY.native(op)
    every_core = entry.tile_unit(ArgSpec((1,), dtype), CHIP) if entry.tile_unit else 0
    tile = every_core // CHIP.aiv_cores
    return small_edges(dtype) + near(tile, 2 * tile, every_core, CHIP.aiv_cores)


def _broadcast_from(data, out: tuple[int, ...]) -> tuple[int, ...]:
    """A shape that broadcasts to `out`: leading dims dropped, some dims set to 1."""
    drop = data.draw(st.integers(0, len(out)))
    return tuple(1 if data.draw(st.booleans()) else d for d in out[drop:])


@given(data=st.data())
@sweep_settings()
def test_elementwise_shapes(debug_dev, data):
    op = data.draw(st.sampled_from(OPS), label="op")
    case = template(data, op)
    dtype = dtype_of(data, op, case)
    names = get_op(op).input_names(len(case.shapes))
    data_inputs = [i for i, (s, n) in enumerate(zip(case.shapes, names))
                   if s is not None and n not in case.values and s != ()]
    edges = _flat_edges(op, dtype)
    if data.draw(st.booleans(), label="flat"):
        out = (data.draw(dim(edges, max(edges)), label="n"),)
        shapes = {i: out for i in data_inputs}
    else:
        outer = tuple(data.draw(dim(near(2, 16), 40), label="outer")
                      for _ in range(data.draw(st.integers(0, 2), label="outer rank")))
        rows = data.draw(dim(small_edges(dtype) + near(100), 600), label="rows")
        last = data.draw(dim(small_edges(dtype) + near(1000), 4000), label="last")
        out = outer + (rows, last)
        shapes = {i: out if i == data_inputs[0] else _broadcast_from(data, out)
                  for i in data_inputs}
        if data.draw(st.booleans()):       # the broadcast one first
            shapes = {i: shapes[j] for i, j in zip(data_inputs, reversed(data_inputs))}
    assume(fits(out, limit=max(edges)))
    new = tuple(shapes.get(i, s) for i, s in enumerate(case.shapes))
    check(debug_dev, op, SampleCase("sweep", new, case.attrs, case.dtypes, case.values), dtype)
