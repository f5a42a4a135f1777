"""Shape and data-movement ops (tier C): outputs whose shape the host decides at run time.

Shapes, axes, starts and ends come as int64 inputs (ONNX's current form); the host reads them
(`host_inputs`) to size the outputs, which is what makes these ops dynamic-shape on the chip.
Data is only moved, never computed, so every dtype is accepted.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any, Literal

import numpy as np

from ..database import register
from ..dtypes import ALL, DTYPES, FLOATS, INDEX, NUMERIC, name_of
from ..errors import AttrError, ShapeMismatch
from ..schema import (
    ArgSpec,
    Attr,
    OpSchema,
    SampleCase,
    broadcast_shapes,
    host_value,
    normalize_axes,
    normalize_axis,
    uniform,
)
from .elementwise import infer_same

MOVE_TYPES = {"T": ALL, "I": ("int64",)}
ONE = ("float32",)      # cases that do not depend on a data dtype run once


def _values(schema: OpSchema, specs: list[ArgSpec]) -> list[tuple | None]:
    """The contents of each host input (None when omitted)."""
    by_name = dict(zip(schema.inputs, specs))
    return [None if by_name.get(n) is None else host_value(schema.name, by_name[n], n)
            for n in schema.host_inputs]


def shape_op(name: str, reference: Callable[..., Any], infer: Callable[..., list[ArgSpec]],
             doc: str, inputs: tuple[str, ...] = ("data",), samples: Sequence[SampleCase] = (),
             **kw: Any) -> OpSchema:
    """A data-movement op of tier C: any dtype; int64 host inputs."""
    kw.setdefault("constraints", MOVE_TYPES)
    kw.setdefault("type_of", {n: "I" for n in kw.get("host_inputs", ())})
    return register(OpSchema(
        name=name, tier="C", family="shape", inputs=inputs, dtypes=FLOATS,
        reference_fn=reference, infer_fn=infer, samples=list(samples), doc=doc, **kw))


# ---- Transpose, Flatten, Identity ----

def _perm(rank: int, perm) -> tuple[int, ...]:
    """Output axis i is input axis perm[i]; default: the axes reversed."""
    if perm is None:
        return tuple(reversed(range(rank)))
    perm = tuple(int(p) for p in perm)
    if sorted(perm) != list(range(rank)):
        raise AttrError(f"Transpose: perm {list(perm)} is not a permutation of the "
                        f"{rank} axes (0..{rank - 1})")
    return perm


def _infer_transpose(schema, specs, attrs):
    x = specs[0]
    return [ArgSpec(tuple(x.shape[p] for p in _perm(len(x.shape), attrs["perm"])), x.dtype)]


def flatten_shape(shape: tuple, axis: int) -> tuple[int, int]:
    """Dims before axis times dims from axis on; axis in [-rank, rank]."""
    rank = len(shape)
    if not -rank <= axis <= rank:
        raise AttrError(f"Flatten: axis {axis} is out of range for a rank-{rank} input "
                        f"(allowed: {-rank}..{rank})")
    split = axis + rank if axis < 0 else axis
    return (math.prod(shape[:split]), math.prod(shape[split:]))


def _infer_flatten(schema, specs, attrs):
    return [ArgSpec(flatten_shape(specs[0].shape, attrs["axis"]), specs[0].dtype)]


# ---- Reshape, Expand, Squeeze, Unsqueeze ----

def reshape_target(data: tuple, shape: tuple, allowzero: int) -> tuple[int, ...]:
    """ONNX Reshape: 0 copies the input dim (unless allowzero), one -1 is inferred."""
    if allowzero and 0 in shape and -1 in shape:
        raise ShapeMismatch(f"Reshape: shape {list(shape)} holds both 0 and -1 with allowzero=1")
    if shape.count(-1) > 1 or any(d < -1 for d in shape):
        raise ShapeMismatch(f"Reshape: shape {list(shape)} may hold at most one -1 and no other "
                            f"negative dims")
    out = []
    for i, d in enumerate(shape):
        if d == 0 and not allowzero:
            if i >= len(data):
                raise ShapeMismatch(f"Reshape: shape {list(shape)} copies dim {i} (a 0) but the "
                                    f"input {data} has only {len(data)} dims")
            d = data[i]
        out.append(int(d))
    size, known = math.prod(data), math.prod(d for d in out if d != -1)
    if -1 in out:
        if known == 0 or size % known:
            raise ShapeMismatch(f"Reshape: cannot infer the -1 in {list(shape)} for an input "
                                f"of shape {data} ({size} elements)")
        out[out.index(-1)] = size // known
    elif known != size:
        raise ShapeMismatch(f"Reshape: shape {list(shape)} holds {known} elements, the input "
                            f"{data} holds {size}")
    return tuple(out)


def _infer_reshape(schema, specs, attrs):
    (shape,) = _values(schema, specs)
    assert shape is not None                    # a required input
    return [ArgSpec(reshape_target(specs[0].shape, shape, attrs["allowzero"]), specs[0].dtype)]


def _infer_expand(schema, specs, attrs):
    (shape,) = _values(schema, specs)
    assert shape is not None                    # a required input
    return [ArgSpec(broadcast_shapes("Expand", [specs[0].shape, shape]), specs[0].dtype)]


def squeezed(shape: tuple, axes: Sequence[int] | None) -> tuple[int, ...]:
    """The shape without the given axes (each of size 1), or without every size-1 axis."""
    if axes is None:
        return tuple(d for d in shape if d != 1)
    drop = normalize_axes("Squeeze", axes, len(shape))
    wide = [a for a in drop if shape[a] != 1]
    if wide:
        raise ShapeMismatch(f"Squeeze: axis {wide[0]} of shape {shape} has size "
                            f"{shape[wide[0]]}; only axes of size 1 can be squeezed")
    return tuple(d for i, d in enumerate(shape) if i not in drop)


def unsqueezed(shape: tuple, axes: Sequence[int]) -> tuple[int, ...]:
    """The shape with size-1 axes at the given positions of the output."""
    rank = len(shape) + len(axes)
    new = normalize_axes("Unsqueeze", axes, rank)
    dims = iter(shape)
    return tuple(1 if i in new else next(dims) for i in range(rank))


def _infer_squeeze(schema, specs, attrs):
    return [ArgSpec(squeezed(specs[0].shape, _values(schema, specs)[0]), specs[0].dtype)]


def _infer_unsqueeze(schema, specs, attrs):
    (axes,) = _values(schema, specs)
    assert axes is not None                     # a required input
    return [ArgSpec(unsqueezed(specs[0].shape, axes), specs[0].dtype)]


def _axes_list(axes) -> list[int] | None:
    return None if axes is None else axes.reshape(-1).tolist()


# ---- Slice ----

def slice_bounds(shape: tuple, starts: Sequence[int], ends: Sequence[int],
                 axes: Sequence[int] | None, steps: Sequence[int] | None) -> list[slice]:
    """One slice per dim, with ONNX's clamping of starts and ends to the dim."""
    rank = len(shape)
    axes = normalize_axes("Slice", range(len(starts)) if axes is None else axes, rank)
    steps = [1] * len(starts) if steps is None else list(steps)
    if not len(starts) == len(ends) == len(axes) == len(steps):
        raise ShapeMismatch(f"Slice: starts, ends, axes and steps differ in length "
                            f"({len(starts)}, {len(ends)}, {len(axes)}, {len(steps)})")
    out = [slice(None)] * rank
    for start, end, axis, step in zip(starts, ends, axes, steps):
        if step == 0:
            raise AttrError(f"Slice: step of axis {axis} is 0 (steps must be non-zero)")
        dim = shape[axis]
        if step > 0:
            begin, stop = _clamp(start, dim, 0, dim), _clamp(end, dim, 0, dim)
        else:
            begin, stop = _clamp(start, dim, 0, dim - 1), _clamp(end, dim, -1, dim - 1)
        out[axis] = slice(begin, None if stop < 0 else stop, step)
    return out


def _clamp(index: int, dim: int, lo: int, hi: int) -> int:
    """A negative index counts from the end; then clamped to [lo, hi]."""
    return min(max(index + dim if index < 0 else index, lo), hi)


def _sliced_shape(shape, bounds) -> tuple[int, ...]:
    return tuple(len(range(*b.indices(d))) for b, d in zip(bounds, shape))


def _infer_slice(schema, specs, attrs):
    starts, ends, axes, steps = _values(schema, specs)
    assert starts is not None and ends is not None      # required inputs
    bounds = slice_bounds(specs[0].shape, starts, ends, axes, steps)
    return [ArgSpec(_sliced_shape(specs[0].shape, bounds), specs[0].dtype)]


def _slice(data, starts, ends, axes=None, steps=None):
    bounds = slice_bounds(data.shape, starts.reshape(-1).tolist(), ends.reshape(-1).tolist(),
                          _axes_list(axes), _axes_list(steps))
    return data[tuple(bounds)]


# ---- Concat ----

def _infer_concat(schema, specs, attrs):
    first = specs[0]
    axis = normalize_axis("Concat", attrs["axis"], len(first.shape))
    for s in specs[1:]:
        if len(s.shape) != len(first.shape) or any(
                a != b for i, (a, b) in enumerate(zip(s.shape, first.shape)) if i != axis):
            raise ShapeMismatch(f"Concat: shapes {first.shape} and {s.shape} differ outside "
                                f"axis {attrs['axis']}")
    total = sum(s.shape[axis] for s in specs)
    return [ArgSpec(first.shape[:axis] + (total,) + first.shape[axis + 1:], first.dtype)]


# ---- Shape, Size ----

def _shape_range(rank: int, start: int, end) -> slice:
    """ONNX Shape's start/end: negative counts from the end, both clamped to [0, rank]."""
    return slice(_clamp(start, rank, 0, rank), rank if end is None else _clamp(end, rank, 0, rank))


def _infer_shape(schema, specs, attrs):
    dims = range(len(specs[0].shape))[_shape_range(len(specs[0].shape), attrs["start"],
                                                    attrs["end"])]
    return [ArgSpec((len(dims),), "int64")]


# ---- Constant, ConstantOfShape, Range ----

def _constant_array(op: str, value) -> np.ndarray:
    array = np.asarray(value)
    if array.dtype not in DTYPES.values():
        raise AttrError(f"{op}: value of dtype {array.dtype} is not a dtype ixl has "
                        f"(allowed: {', '.join(DTYPES)})")
    return array


def _infer_constant(schema, specs, attrs):
    array = _constant_array("Constant", attrs["value"])
    return [ArgSpec(array.shape, name_of(array.dtype))]


def _fill_value(value) -> np.ndarray:
    """ConstantOfShape's value: a one-element tensor, float32 0 when omitted."""
    array = _constant_array("ConstantOfShape", np.float32(0) if value is None else value)
    if array.size != 1:
        raise AttrError(f"ConstantOfShape: value must hold one element, got shape {array.shape}")
    return array.reshape(())


def _infer_constant_of_shape(schema, specs, attrs):
    (shape,) = _values(schema, specs)
    assert shape is not None                    # a required input
    if any(d < 0 for d in shape):
        raise ShapeMismatch(f"ConstantOfShape: shape {list(shape)} holds a negative dim")
    return [ArgSpec(tuple(int(d) for d in shape), name_of(_fill_value(attrs["value"]).dtype))]


def _range_count(start, limit, delta) -> int:
    if delta == 0:
        raise AttrError("Range: delta is 0 (it must be non-zero)")
    return max(math.ceil((limit - start) / delta), 0)


def _infer_range(schema, specs, attrs):
    for spec, name in zip(specs, schema.inputs):
        if spec.size != 1:
            raise ShapeMismatch(f"Range: {name} must be a scalar, got shape {spec.shape}")
    start, limit, delta = (v[0] for v in _values(schema, specs) if v is not None)  # required
    return [ArgSpec((_range_count(start, limit, delta),), specs[0].dtype)]


def _range(start, limit, delta):
    start, limit, delta = (a.reshape(()) for a in (start, limit, delta))
    return start + np.arange(_range_count(start, limit, delta)) * delta


# ---- registration ----

def _host_case(note, shapes, attrs=None, dtypes=None, **values) -> SampleCase:
    """A sample whose host inputs (named in `values`) take the given contents."""
    return SampleCase(note, tuple(shapes), attrs or {}, dtypes, values=values)


shape_op("Identity", lambda x: x, infer_same, "y = x",
         samples=[SampleCase("one element", ((1,),)), SampleCase("a dim of size 0", ((0, 16),)),
                  SampleCase("rows of 7", ((5, 7),)), SampleCase("large", ((1024, 2048),))])
shape_op("Transpose", lambda x, perm: np.transpose(x, _perm(x.ndim, perm)), _infer_transpose,
         "y = x with axes permuted by perm (default: reversed)",
         attrs={"perm": Attr(list, None, "output axis i is input axis perm[i]")},
         samples=[SampleCase("one element", ((1, 1),)), SampleCase("2-D default", ((5, 7),)),
                  SampleCase("3-D (1, 2, 0)", ((2, 3, 4),), {"perm": [1, 2, 0]}),
                  SampleCase("NCHW to NHWC", ((2, 16, 7, 7),), {"perm": [0, 2, 3, 1]}),
                  SampleCase("a dim of size 0", ((0, 16),)),
                  SampleCase("large", ((1024, 2048),))])
shape_op("Flatten", lambda x, axis: x.reshape(flatten_shape(x.shape, axis)), _infer_flatten,
         "y = x as 2-D: dims before axis times dims from axis on",
         attrs={"axis": Attr(int, 1, "first dim of the second output dim, in [-rank, rank]")},
         samples=[SampleCase("one element", ((1,),)),
                  SampleCase("NCHW to N x CHW", ((2, 3, 4, 5),)),
                  SampleCase("axis 0", ((2, 3, 4),), {"axis": 0}),
                  SampleCase("axis = rank", ((2, 3),), {"axis": 2}),
                  SampleCase("a dim of size 0", ((0, 16, 3),))])
shape_op("Reshape", lambda data, shape, allowzero: data.reshape(
            reshape_target(data.shape, tuple(shape.tolist()), allowzero)),
         _infer_reshape, "y = data in a new shape (0 copies a dim unless allowzero, -1 inferred)",
         inputs=("data", "shape"), host_inputs=("shape",),
         attrs={"allowzero": Attr(int, 0, "1: a 0 in shape means a dim of size 0")},
         samples=[_host_case("one element", [(1,), (1,)], shape=[1]),
                  _host_case("-1 inferred", [(4, 6), (3,)], shape=[2, -1, 3]),
                  _host_case("0 copies a dim", [(2, 3, 4), (2,)], shape=[0, -1]),
                  _host_case("allowzero: an empty tensor", [(0, 3), (2,)], shape=[3, 0],
                             attrs={"allowzero": 1}),
                  _host_case("rows of 7", [(5, 7), (1,)], shape=[35]),
                  _host_case("large", [(1024, 2048), (3,)], shape=[64, -1, 128])])
shape_op("Expand", lambda x, shape: np.broadcast_to(
            x, broadcast_shapes("Expand", [x.shape, tuple(shape.tolist())])),
         _infer_expand, "y = x broadcast with shape (both ways, as numpy)",
         inputs=("x", "shape"), host_inputs=("shape",),
         samples=[_host_case("one element", [(1,), (1,)], shape=[1]),
                  _host_case("column to matrix", [(3, 1), (2,)], shape=[3, 7]),
                  _host_case("shape smaller than x", [(3, 1), (1,)], shape=[5]),
                  _host_case("new leading dims", [(4,), (3,)], shape=[2, 1, 4]),
                  _host_case("to a dim of size 0", [(1, 4), (2,)], shape=[0, 4]),
                  _host_case("large", [(1, 2048), (2,)], shape=[1024, 2048])])
shape_op("Squeeze", lambda data, axes=None: data.reshape(squeezed(data.shape, _axes_list(axes))),
         _infer_squeeze,
         "y = data without the given axes of size 1 (every size-1 axis when axes is omitted)",
         inputs=("data", "axes"), host_inputs=("axes",), optional=1,
         samples=[_host_case("one element", [(1,), (1,)], axes=[0]),
                  _host_case("leading 1", [(1, 3, 4), (1,)], axes=[0]),
                  _host_case("negative axes", [(1, 3, 1, 5), (1,)], axes=[-2]),
                  _host_case("axes omitted", [(1, 3, 1, 5)]),
                  _host_case("a dim of size 0", [(0, 1, 7), (1,)], axes=[1])])
shape_op("Unsqueeze",
         lambda data, axes: data.reshape(unsqueezed(data.shape, axes.reshape(-1).tolist())),
         _infer_unsqueeze,
         "y = data with size-1 axes inserted at the given output positions",
         inputs=("data", "axes"), host_inputs=("axes",),
         samples=[_host_case("one element", [(1,), (1,)], axes=[0]),
                  _host_case("two axes, unsorted", [(3, 4, 5), (2,)], axes=[4, 0]),
                  _host_case("negative axis", [(3, 4), (1,)], axes=[-1]),
                  _host_case("a dim of size 0", [(0, 7), (1,)], axes=[1])])
shape_op("Slice", _slice, _infer_slice,
         "y = data[starts:ends:steps] on axes; starts and ends clamp to the dim",
         inputs=("data", "starts", "ends", "axes", "steps"), optional=2,
         host_inputs=("starts", "ends", "axes", "steps"),
         constraints={"T": ALL, "I": INDEX},
         samples=[_host_case("one element", [(1,), (1,), (1,)], starts=[0], ends=[1]),
                  _host_case("2-D window", [(20, 10), (2,), (2,), (2,), (2,)],
                             starts=[0, 1], ends=[3, 10], axes=[0, 1], steps=[1, 2]),
                  _host_case("negative starts and steps", [(20, 10), (1,), (1,), (1,), (1,)],
                             starts=[-1], ends=[-1000], axes=[1], steps=[-2]),
                  _host_case("ends out of bounds", [(20, 10), (1,), (1,), (1,)],
                             starts=[1], ends=[1000], axes=[1]),
                  _host_case("empty result", [(20, 10), (1,), (1,)], starts=[30], ends=[40]),
                  _host_case("last dim to 7 elements", [(5, 64), (1,), (1,), (1,)],
                             starts=[3], ends=[10], axes=[-1]),
                  _host_case("large", [(1024, 2048), (1,), (1,), (1,)],
                             starts=[0], ends=[1024], axes=[1])])
shape_op("Concat", lambda *xs, axis: np.concatenate(xs, axis=axis), _infer_concat,
         "y = the inputs joined along axis (shapes equal elsewhere)",
         inputs=("inputs",), variadic=True,
         attrs={"axis": Attr(int, None, "the axis joined", required=True)},
         samples=[SampleCase("one element each", ((1,), (1,)), {"axis": 0}),
                  SampleCase("one input", ((5, 7),), {"axis": 1}),
                  SampleCase("three along columns", ((4, 3), (4, 7), (4, 1)), {"axis": -1}),
                  SampleCase("an empty input", ((0, 5), (3, 5)), {"axis": 0}),
                  SampleCase("large", ((1024, 1024), (1024, 1024)), {"axis": 1})])
shape_op("Shape", lambda x, start, end: np.array(x.shape[_shape_range(x.ndim, start, end)],
                                                 np.int64),
         _infer_shape, "y = the dims of x from start to end (int64)",
         attrs={"start": Attr(int, 0, "first dim; negative counts from the end; clamped"),
                "end": Attr(int, None, "one past the last dim; default: rank; clamped")},
         samples=[SampleCase("one element", ((1,),)), SampleCase("4-D", ((2, 3, 4, 5),)),
                  SampleCase("start and end", ((2, 3, 4, 5),), {"start": 1, "end": -1}),
                  SampleCase("start past end: empty", ((2, 3),), {"start": 2, "end": 1}),
                  SampleCase("a dim of size 0", ((0, 16),))])
shape_op("Size", lambda x: np.array(x.size, np.int64),
         lambda s, specs, a: [ArgSpec((), "int64")], "y = the element count of x (int64 scalar)",
         samples=[SampleCase("one element", ((1,),)), SampleCase("3-D", ((2, 3, 4),)),
                  SampleCase("a dim of size 0", ((0, 16),))])
shape_op("Constant", lambda value: _constant_array("Constant", value), _infer_constant,
         "y = value (an attribute; no inputs)", inputs=(),
         attrs={"value": Attr(np.ndarray, None, "the tensor produced", required=True)},
         samples=[SampleCase("scalar", (), {"value": np.array(1.5, np.float32)}, ONE),
                  SampleCase("int64 vector", (), {"value": np.arange(7)}, ONE),
                  SampleCase("empty", (), {"value": np.zeros((0, 3), np.float16)}, ONE)])
shape_op("ConstantOfShape", lambda shape, value: np.full(
            tuple(shape.tolist()), _fill_value(value)),
         _infer_constant_of_shape, "y = a tensor of the given shape filled with value",
         inputs=("shape",), host_inputs=("shape",),
         attrs={"value": Attr(np.ndarray, None, "one-element fill value (default float32 0)")},
         samples=[_host_case("scalar shape", [(0,)], shape=[], dtypes=ONE),
                  _host_case("ones", [(3,)], shape=[2, 3, 7], dtypes=ONE,
                             attrs={"value": np.array([1.0], np.float16)}),
                  _host_case("a dim of size 0", [(2,)], shape=[0, 4], dtypes=ONE)])
shape_op("Range", _range, _infer_range,
         "y = start, start + delta, ... up to (not including) limit",
         inputs=("start", "limit", "delta"), host_inputs=("start", "limit", "delta"), type_of={},
         constraints={"T": NUMERIC},
         samples=[_host_case("one element", [(), (), ()], start=[0], limit=[1], delta=[1]),
                  _host_case("fractional delta", [(), (), ()], start=[1], limit=[5], delta=[0.5]),
                  _host_case("negative delta", [(), (), ()], start=[10], limit=[6], delta=[-3]),
                  _host_case("empty", [(), (), ()], start=[5], limit=[1], delta=[1]),
                  _host_case("long", [(), (), ()], start=[0], limit=[4096], delta=[1])])


# ---- Split, Tile, Pad, Trilu ----

def split_sizes(shape: tuple, axis: int, split: Sequence[int] | None, num_outputs: int | None
                ) -> list[int]:
    """The part sizes along axis: given by `split`, or num_outputs parts of ceil(dim / n) with a
    smaller last part (opset 18)."""
    dim = shape[axis]
    if split is not None:
        sizes = [int(v) for v in split]
        if any(v < 0 for v in sizes) or sum(sizes) != dim:
            raise ShapeMismatch(f"Split: split {sizes} must be non-negative and sum to the dim "
                                f"{dim} of axis {axis}")
        return sizes
    if num_outputs is None or num_outputs < 1:
        raise AttrError("Split: give split sizes (an input) or num_outputs >= 1")
    chunk = -(-dim // num_outputs)
    sizes = [min(chunk, max(dim - i * chunk, 0)) for i in range(num_outputs)]
    if dim % num_outputs and sum(sizes) != dim:
        raise ShapeMismatch(f"Split: a dim of {dim} does not split into {num_outputs} parts")
    return sizes


def _split_parts(shape, axis, split, num_outputs) -> list[slice]:
    edges = np.cumsum([0] + split_sizes(shape, axis, split, num_outputs))
    return [slice(int(a), int(b)) for a, b in zip(edges[:-1], edges[1:])]


def _infer_split(schema, specs, attrs):
    x = specs[0]
    axis = normalize_axis("Split", attrs["axis"], len(x.shape))
    (split,) = _values(schema, specs)
    return [ArgSpec(x.shape[:axis] + (s,) + x.shape[axis + 1:], x.dtype)
            for s in split_sizes(x.shape, axis, split, attrs["num_outputs"])]


def _split(x, split=None, axis=0, num_outputs=None):
    axis %= x.ndim
    parts = _split_parts(x.shape, axis, _axes_list(split), num_outputs)
    return tuple(x[(slice(None),) * axis + (p,)] for p in parts)


def _infer_tile(schema, specs, attrs):
    x = specs[0]
    (repeats,) = _values(schema, specs)
    assert repeats is not None                  # a required input
    if len(repeats) != len(x.shape) or any(r < 0 for r in repeats):
        raise ShapeMismatch(f"Tile: repeats {list(repeats)} must hold one non-negative count per "
                            f"dim of x {x.shape}")
    return [ArgSpec(tuple(d * int(r) for d, r in zip(x.shape, repeats)), x.dtype)]


PAD_MODES = ("constant", "reflect", "edge", "wrap")


def pad_widths(shape: tuple, pads: Sequence[int], axes: Sequence[int] | None
               ) -> list[tuple[int, int]]:
    """(before, after) per dim from ONNX pads (all begins, then all ends) over `axes`."""
    rank = len(shape)
    axes = list(range(rank)) if axes is None else list(normalize_axes("Pad", axes, rank))
    if len(pads) != 2 * len(axes):
        raise ShapeMismatch(f"Pad: pads {list(pads)} must hold 2 values per padded axis "
                            f"({len(axes)} axes: all begins, then all ends)")
    widths = [(0, 0)] * rank
    for i, axis in enumerate(axes):
        widths[axis] = (int(pads[i]), int(pads[i + len(axes)]))
    return widths


def _infer_pad(schema, specs, attrs):
    x = specs[0]
    if attrs["mode"] not in PAD_MODES:
        raise AttrError(f"Pad: mode={attrs['mode']!r} is not allowed "
                        f"(allowed: {', '.join(PAD_MODES)})")
    if len(specs) > 2 and specs[2] is not None and specs[2].size != 1:
        raise ShapeMismatch(f"Pad: constant_value must be a scalar, got shape {specs[2].shape}")
    pads, axes = _values(schema, specs)
    assert pads is not None                     # a required input
    shape = []
    for d, (lo, hi) in zip(x.shape, pad_widths(x.shape, pads, axes)):
        if d + lo + hi < 0:
            raise ShapeMismatch(f"Pad: pads ({lo}, {hi}) leave a dim of {d} negative")
        if attrs["mode"] != "constant" and (lo > 0 or hi > 0) and d == 0:
            raise ShapeMismatch(f"Pad: mode {attrs['mode']} cannot pad an empty dim")
        if attrs["mode"] == "reflect" and max(lo, hi) >= max(d, 1) and d > 1:
            raise ShapeMismatch(f"Pad: reflect pads ({lo}, {hi}) must be below the dim {d}")
        shape.append(d + lo + hi)
    return [ArgSpec(tuple(shape), x.dtype)]


# np.pad's name of each ONNX Pad mode other than constant
_PAD_MODES: dict[str, Literal["edge", "reflect", "wrap"]] = {
    "edge": "edge", "reflect": "reflect", "wrap": "wrap"}


def _pad(data, pads, constant_value=None, axes=None, mode="constant"):
    """Negative pads crop; numpy pads the rest (ONNX's wrap is numpy's wrap, edge its edge)."""
    widths = pad_widths(data.shape, pads.reshape(-1).tolist(), _axes_list(axes))
    crop = tuple(slice(max(-lo, 0), d - max(-hi, 0)) for d, (lo, hi) in zip(data.shape, widths))
    data = data[crop]
    grow = [(max(lo, 0), max(hi, 0)) for lo, hi in widths]
    if mode == "constant":
        value = 0 if constant_value is None else constant_value.reshape(())
        return np.pad(data, grow, constant_values=value)
    return np.pad(data, grow, mode=_PAD_MODES[mode])


def _infer_trilu(schema, specs, attrs):
    x = specs[0]
    if len(x.shape) < 2:
        raise ShapeMismatch(f"Trilu: x must have rank >= 2 (matrices in its last two dims), got "
                            f"shape {x.shape}")
    if len(specs) > 1 and specs[1] is not None and specs[1].size != 1:
        raise ShapeMismatch(f"Trilu: k must be a scalar, got shape {specs[1].shape}")
    _values(schema, specs)
    return [ArgSpec(x.shape, x.dtype)]


def _trilu(x, k=None, upper=1):
    """Keep the upper (lower) triangle from diagonal k on (up to k); zero the rest."""
    k = 0 if k is None else int(k.reshape(-1)[0])
    return np.triu(x, k) if upper else np.tril(x, k)


shape_op("Split", _split, _infer_split,
         "the input cut along axis into parts of the given sizes (or num_outputs equal parts)",
         inputs=("input", "split"), outputs=("outputs",), variadic_outputs=True, optional=1,
         host_inputs=("split",),
         attrs={"axis": Attr(int, 0, "the axis cut"),
                "num_outputs": Attr(int, None, "equal parts (the last smaller) when no split")},
         samples=[_host_case("one element", [(1,), (1,)], split=[1]),
                  _host_case("uneven parts", [(10, 7), (3,)], {"axis": 0}, split=[2, 3, 5]),
                  _host_case("a part of size 0", [(4, 6), (3,)], {"axis": 1}, split=[2, 0, 4]),
                  _host_case("num_outputs, last smaller", [(4, 7)], {"axis": 1,
                                                                      "num_outputs": 3}),
                  _host_case("q, k, v of a fused projection", [(8, 384)],
                             {"axis": -1, "num_outputs": 3}),
                  _host_case("large", [(1024, 2048), (2,)], {"axis": 1}, split=[1024, 1024])])
shape_op("Tile", lambda x, repeats: np.tile(x, tuple(repeats.tolist())), _infer_tile,
         "y = x repeated `repeats[i]` times along dim i", inputs=("x", "repeats"),
         host_inputs=("repeats",),
         samples=[_host_case("one element", [(1,), (1,)], repeats=[1]),
                  _host_case("rows and columns", [(3, 7), (2,)], repeats=[2, 3]),
                  _host_case("zero repeats", [(3, 4), (2,)], repeats=[0, 2]),
                  _host_case("a dim of size 0", [(0, 4), (2,)], repeats=[3, 1]),
                  _host_case("large", [(1, 2048), (2,)], repeats=[512, 1])])
shape_op("Pad", _pad, _infer_pad,
         "y = data padded by pads (begins, then ends; negative crops): constant, reflect, edge "
         "or wrap", inputs=("data", "pads", "constant_value", "axes"), optional=2,
         host_inputs=("pads", "axes"), type_of={"pads": "I", "axes": "I"},
         constraints={"T": ALL, "I": INDEX},
         attrs={"mode": Attr(str, "constant", ", ".join(PAD_MODES))},
         samples=[_host_case("one element", [(1,), (2,)], pads=[1, 1]),
                  _host_case("constant value", [(3, 7), (4,), ()], pads=[1, 0, 2, 3]),
                  _host_case("negative pads crop", [(6, 7), (4,)], pads=[-1, 2, 0, -3]),
                  _host_case("reflect", [(4, 5), (4,)], {"mode": "reflect"}, pads=[2, 1, 1, 3]),
                  _host_case("edge", [(4, 5), (4,)], {"mode": "edge"}, pads=[2, 1, 1, 6]),
                  _host_case("wrap", [(4, 5), (4,)], {"mode": "wrap"}, pads=[2, 1, 1, 3]),
                  _host_case("axes: the spatial dims of NCHW", [(1, 2, 5, 5), (4,), (), (2,)],
                             pads=[1, 1, 1, 1], axes=[2, 3]),
                  _host_case("a dim of size 0", [(0, 4), (4,)], pads=[1, 0, 1, 0]),
                  _host_case("large", [(1024, 2048), (4,)], pads=[0, 1, 0, 1])])
def _infer_reverse_sequence(schema, specs, attrs):
    x, lens = specs
    batch, time = attrs["batch_axis"], attrs["time_axis"]
    if len(x.shape) < 2 or {batch, time} != {0, 1}:
        raise AttrError(f"ReverseSequence: batch_axis {batch} and time_axis {time} must be 0 "
                        f"and 1, one each, of an input of rank >= 2 (got rank {len(x.shape)})")
    if lens.shape != (x.shape[batch],):
        raise ShapeMismatch(f"ReverseSequence: sequence_lens must hold one length per batch "
                            f"entry, shape ({x.shape[batch]},), got {lens.shape}")
    return [ArgSpec(x.shape, x.dtype)]


def _reverse_sequence(x, sequence_lens, batch_axis=1, time_axis=0):
    """Each batch entry's first sequence_lens[b] steps along time_axis in reverse order; the
    steps after them as they are."""
    steps = x.shape[time_axis]
    out = x.copy()
    for b, length in enumerate(sequence_lens.reshape(-1).tolist()):
        if not 0 <= length <= steps:
            raise ShapeMismatch(f"ReverseSequence: sequence_lens[{b}] = {length} is outside "
                                f"0..{steps} (the time axis)")
        entry: list[int | slice] = [slice(None)] * x.ndim
        entry[batch_axis] = b
        entry[time_axis] = slice(0, length)
        out[tuple(entry)] = np.flip(x[tuple(entry)], axis=0)   # the batch axis indexed away
    return out


def _reverse_sequence_inputs(schema, specs, rng, attrs):
    x, lens = specs
    steps = x.shape[attrs["time_axis"]]
    return [uniform(x, rng, schema.input_range),
            rng.integers(0, steps + 1, lens.shape).astype(np.int64)]


shape_op("ReverseSequence", _reverse_sequence, _infer_reverse_sequence,
         "y = x with each batch entry's first sequence_lens steps reversed along time_axis",
         inputs=("input", "sequence_lens"), type_of={"sequence_lens": "I"},
         attrs={"batch_axis": Attr(int, 1, "the batch axis (0 or 1)"),
                "time_axis": Attr(int, 0, "the time axis (1 or 0)")},
         make_inputs=_reverse_sequence_inputs,
         samples=[SampleCase("one element", ((1, 1), (1,))),
                  SampleCase("time first (the default)", ((4, 3), (3,))),
                  SampleCase("batch first, rows of features", ((3, 6, 5), (3,)),
                             {"batch_axis": 0, "time_axis": 1}),
                  SampleCase("no time steps", ((0, 4), (4,))),
                  SampleCase("large", ((256, 64, 128), (64,)))])
shape_op("Trilu", _trilu, _infer_trilu,
         "y = the upper (or lower) triangle of the last two dims from diagonal k, zeros elsewhere",
         inputs=("x", "k"), optional=1, host_inputs=("k",),
         attrs={"upper": Attr(int, 1, "1: keep the upper triangle; 0: the lower")},
         samples=[_host_case("one element", [(1, 1)]),
                  _host_case("causal mask: lower, k 0", [(8, 8)], {"upper": 0}),
                  _host_case("upper, k 1 (the masked part)", [(8, 8), ()], k=1),
                  _host_case("batched, rows of 7, k -2", [(3, 5, 7), ()], {"upper": 0}, k=-2),
                  _host_case("k beyond the matrix", [(4, 5), ()], k=9),
                  _host_case("a dim of size 0", [(0, 4, 4)]),
                  _host_case("large", [(1024, 2048), ()], k=-1)])
