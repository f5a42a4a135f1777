"""Indexing and ordering (tier C): Gather, GatherElements, GatherND, ScatterND, ScatterElements,
OneHot, TopK, Sort, ArgMax, ArgMin.

Their work depends on the data (which rows, which order), so on the chip they need host-side
decisions at run time. Ties are ordered by index, lower first, in both directions (ONNX TopK).
"""

from __future__ import annotations

import numpy as np

from ..database import register
from ..dtypes import ALL, FLOATS, INDEX, NUMERIC, to_numpy
from ..errors import AttrError, ShapeMismatch, index_out_of_range
from ..schema import ArgSpec, Attr, OpSchema, SampleCase, host_value, normalize_axis, uniform

ORDER_TYPES = {"T": NUMERIC}


# ---- Gather ----

def _infer_gather(schema: OpSchema, specs: list[ArgSpec], attrs: dict) -> list[ArgSpec]:
    data, indices = specs
    axis = normalize_axis("Gather", attrs["axis"], len(data.shape))
    shape = data.shape[:axis] + indices.shape + data.shape[axis + 1:]
    return [ArgSpec(shape, data.dtype)]


def _gather(data, indices, axis=0):
    size = data.shape[axis]
    bad = (indices < -size) | (indices >= size)
    if bad.any():
        raise ShapeMismatch(f"Gather: index {int(indices[bad][0])} is out of range for axis "
                            f"{axis} of size {size} (allowed: {-size}..{size - 1})")
    return np.take(data, np.where(indices < 0, indices + size, indices), axis=axis)


def _gather_inputs(schema, specs, rng, attrs):
    """Indices in range, negative ones included."""
    data, indices = specs
    size = data.shape[normalize_axis("Gather", attrs["axis"], len(data.shape))]
    idx = rng.integers(-size, size, indices.shape) if size else np.zeros(indices.shape)
    return [uniform(data, rng, schema.input_range), idx.astype(indices.dtype)]


# ---- ordering: TopK, Sort, ArgMax ----

def stable_order(x: np.ndarray, axis: int, descending: bool) -> np.ndarray:
    """Indices that sort x along axis; equal values keep index order in both directions."""
    if descending:      # an order-reversing key that cannot overflow
        x = ~x if x.dtype.kind in "iub" else -x
    return np.argsort(x, axis=axis, kind="stable")


def _tied_inputs(schema, specs, rng, attrs):
    """Values on a 0.5 grid: rows longer than 17 hold ties, which the tie order must settle."""
    first = uniform(specs[0], rng, schema.input_range)
    if first.dtype.kind == "f":
        first = (np.round(first.astype(np.float32) * 2) / 2).astype(first.dtype)
    return [first] + [uniform(s, rng, schema.input_range) for s in specs[1:]]


def _infer_topk(schema: OpSchema, specs: list[ArgSpec], attrs: dict) -> list[ArgSpec]:
    x, k_spec = specs
    axis = normalize_axis("TopK", attrs["axis"], len(x.shape))
    if k_spec.size != 1 or len(k_spec.shape) > 1:
        raise ShapeMismatch(f"TopK: k must hold one value (shape (1,)), got shape {k_spec.shape}")
    k = int(host_value("TopK", k_spec, "k")[0])
    if not 0 <= k <= x.shape[axis]:
        raise AttrError(f"TopK: k={k} is out of range for axis {attrs['axis']} of size "
                        f"{x.shape[axis]} (allowed: 0..{x.shape[axis]})")
    shape = x.shape[:axis] + (k,) + x.shape[axis + 1:]
    return [ArgSpec(shape, x.dtype), ArgSpec(shape, "int64")]


def _topk(x, k, axis=-1, largest=1, sorted=1):
    """The k largest (smallest) along axis, sorted (sorted=0 is allowed any order: also sorted)."""
    axis %= x.ndim
    order = stable_order(x, axis, bool(largest))
    idx = np.take(order, np.arange(int(k.reshape(-1)[0])), axis=axis)
    return np.take_along_axis(x, idx, axis), idx


def _infer_sort(schema: OpSchema, specs: list[ArgSpec], attrs: dict) -> list[ArgSpec]:
    x = specs[0]
    normalize_axis("Sort", attrs["axis"], len(x.shape))
    return [ArgSpec(x.shape, x.dtype), ArgSpec(x.shape, "int64")]


def _sort(x, axis=-1, descending=0):
    idx = stable_order(x, axis, bool(descending))
    return np.take_along_axis(x, idx, axis), idx


def _infer_arg(schema: OpSchema, specs: list[ArgSpec], attrs: dict) -> list[ArgSpec]:
    x = specs[0]
    axis = normalize_axis(schema.name, attrs["axis"], len(x.shape))
    if x.shape[axis] == 0:
        raise ShapeMismatch(f"{schema.name}: axis {attrs['axis']} of shape {x.shape} is empty: "
                            f"no extreme to point at")
    shape = tuple(1 if i == axis else d for i, d in enumerate(x.shape)
                  if attrs["keepdims"] or i != axis)
    return [ArgSpec(shape, "int64")]


def _arg(find):
    """ArgMax / ArgMin from numpy's argmax / argmin (first index on ties; flipped for the last)."""
    def reference(x, axis=0, keepdims=1, select_last_index=0):
        axis %= x.ndim
        if select_last_index:
            idx = x.shape[axis] - 1 - find(np.flip(x, axis), axis=axis)
        else:
            idx = find(x, axis=axis)
        return np.expand_dims(idx, axis) if keepdims else idx
    return reference


# ---- sample cases ----

def _k_case(note, shape, k, **attrs) -> SampleCase:
    return SampleCase(note, (shape, (1,)), attrs, values={"k": [k]})


TOPK_CASES = [
    _k_case("one element", (1,), 1),
    _k_case("rows, k=5", (8, 100), 5),
    _k_case("smallest", (8, 100), 5, largest=0),
    _k_case("k=0: empty outputs", (4, 10), 0),
    _k_case("axis 0", (50, 3), 4, axis=0),
    _k_case("k = whole row of 7 elements", (5, 7), 7),
    _k_case("a dim of size 0", (0, 16), 3),
    _k_case("long row", (2, 32768), 16),
    _k_case("large", (512, 4096), 8),
]

ORDER_CASES = [
    SampleCase("one element", ((1,),)),
    SampleCase("rows", ((8, 100),)),
    SampleCase("descending", ((8, 100),), {"descending": 1}),
    SampleCase("axis 0", ((50, 3),), {"axis": 0}),
    SampleCase("row of 7 elements", ((5, 7),)),
    SampleCase("a dim of size 0", ((0, 16),)),
    SampleCase("prime row length", ((3, 1009),)),
    SampleCase("large", ((512, 4096),)),
]

ARGMAX_CASES = [
    SampleCase("one element", ((1,),)),
    SampleCase("rows, last axis", ((8, 100),), {"axis": -1}),
    SampleCase("rows, keepdims=0", ((8, 100),), {"axis": 1, "keepdims": 0}),
    SampleCase("select_last_index", ((8, 100),), {"axis": 1, "select_last_index": 1}),
    SampleCase("axis 0 of a 3-D tensor", ((6, 4, 5),)),
    SampleCase("a dim of size 0, not reduced", ((0, 16),), {"axis": 1}),
    SampleCase("row of 7 elements", ((5, 7),), {"axis": -1}),
    SampleCase("long row", ((2, 32768),), {"axis": -1}),
    SampleCase("large", ((512, 4096),), {"axis": -1}),
]

register(OpSchema(
    name="Gather", tier="C", family="index", inputs=("data", "indices"), dtypes=FLOATS,
    reference_fn=_gather, infer_fn=_infer_gather, type_of={"indices": "Tind"},
    constraints={"T": ALL, "Tind": INDEX}, make_inputs=_gather_inputs,
    attrs={"axis": Attr(int, 0, "the axis indexed")},
    doc="y = data indexed by `indices` along axis (negative indices count from the end)",
    samples=[
        SampleCase("one element", ((1,), (1,))),
        SampleCase("embedding lookup", ((100, 32), (4, 7))),
        SampleCase("axis 1, 2-D indices", ((3, 10), (2, 2)), {"axis": 1}),
        SampleCase("scalar index drops the axis", ((5, 6), ())),
        SampleCase("negative axis", ((2, 3, 4), (5,)), {"axis": -1}),
        SampleCase("no indices", ((5, 6), (0,))),
        SampleCase("rows of 7 elements", ((20, 7), (9,))),
        SampleCase("large: a vocabulary table", ((8192, 256), (512,))),
    ]))
register(OpSchema(
    name="TopK", tier="C", family="index", inputs=("x", "k"), outputs=("values", "indices"),
    dtypes=FLOATS, reference_fn=_topk, infer_fn=_infer_topk, host_inputs=("k",),
    type_of={"k": "I"}, constraints={**ORDER_TYPES, "I": ("int64",)}, make_inputs=_tied_inputs,
    attrs={"axis": Attr(int, -1, "the axis searched"),
           "largest": Attr(int, 1, "1: the k largest, 0: the k smallest"),
           "sorted": Attr(int, 1, "1: in order (0 allows any order; ixl sorts anyway)")},
    samples=TOPK_CASES, doc="the k largest (or smallest) values along axis and their indices; "
                            "ties: lower index first"))
register(OpSchema(
    name="Sort", tier="C", family="index", inputs=("x",), outputs=("values", "indices"),
    dtypes=FLOATS, reference_fn=_sort, infer_fn=_infer_sort, constraints=ORDER_TYPES,
    make_inputs=_tied_inputs,
    attrs={"axis": Attr(int, -1, "the axis sorted"),
           "descending": Attr(int, 0, "1: largest first")},
    samples=ORDER_CASES, doc="values sorted along axis and where they came from; stable "
                             "(ties keep input order); not an ONNX op"))
ARG_ATTRS = {"axis": Attr(int, 0, "the axis searched"),
             "keepdims": Attr(int, 1, "keep the axis as size 1"),
             "select_last_index": Attr(int, 0, "on ties: 1 the last index, 0 the first")}
for _name, _find, _what in (("ArgMax", np.argmax, "maximum"), ("ArgMin", np.argmin, "minimum")):
    register(OpSchema(
        name=_name, tier="C", family="index", inputs=("data",), dtypes=FLOATS,
        reference_fn=_arg(_find), infer_fn=_infer_arg, constraints=ORDER_TYPES,
        make_inputs=_tied_inputs, attrs=ARG_ATTRS, samples=ARGMAX_CASES,
        doc=f"index of the {_what} along axis (int64)"))


# ---- GatherElements, GatherND, ScatterND, OneHot ----

def _in_range(op: str, indices, size, what: str):
    """Indices with negatives counted from the end, or a clear error for one out of range."""
    bad = (indices < -size) | (indices >= size)
    if np.any(bad):
        raise index_out_of_range(op, int(np.asarray(indices)[bad].reshape(-1)[0]), int(size),
                                 what)
    return np.where(indices < 0, indices + size, indices)


def _infer_gather_elements(schema, specs, attrs):
    data, indices = specs
    axis = normalize_axis("GatherElements", attrs["axis"], len(data.shape))
    if len(indices.shape) != len(data.shape) or any(
            i > d for k, (i, d) in enumerate(zip(indices.shape, data.shape)) if k != axis):
        raise ShapeMismatch(f"GatherElements: indices of shape {indices.shape} must have the rank "
                            f"of data {data.shape} and no dim larger outside axis {axis}")
    return [ArgSpec(indices.shape, data.dtype)]


def _gather_elements(data, indices, axis=0):
    axis %= data.ndim
    idx = _in_range("GatherElements", indices, data.shape[axis], f"axis {axis}")
    window = data[tuple(slice(0, n) if k != axis else slice(None)
                        for k, n in enumerate(indices.shape))]
    return np.take_along_axis(window, idx, axis)


def _nd_parts(op: str, data: tuple, indices: tuple, batch_dims: int) -> tuple[int, tuple]:
    """Check a GatherND / ScatterND index tensor: its last dim k addresses data's dims
    [batch_dims, batch_dims + k); returns k and the batch shape."""
    if not indices or not data:
        raise ShapeMismatch(f"{op}: data and indices need rank >= 1, got {data} and {indices}")
    k = indices[-1]
    if not 0 <= batch_dims < min(len(data), len(indices)) or \
            data[:batch_dims] != indices[:batch_dims]:
        raise ShapeMismatch(f"{op}: batch_dims={batch_dims} must be below both ranks and the "
                            f"first batch_dims dims of data {data} and indices {indices} equal")
    if k > len(data) - batch_dims:
        raise ShapeMismatch(f"{op}: indices' last dim {k} addresses more dims than data "
                            f"{data} has after batch_dims={batch_dims}")
    return k, data[:batch_dims]


def _infer_gather_nd(schema, specs, attrs):
    data, indices = specs
    k, batch = _nd_parts("GatherND", data.shape, indices.shape, attrs["batch_dims"])
    shape = indices.shape[:-1] + data.shape[attrs["batch_dims"] + k:]
    return [ArgSpec(shape, data.dtype)]


def _gather_nd(data, indices, batch_dims=0):
    k = indices.shape[-1]
    batch = int(np.prod(data.shape[:batch_dims], dtype=np.int64))
    flat_data = data.reshape((batch,) + data.shape[batch_dims:])
    flat_idx = indices.reshape((batch, -1, k))
    addressed = data.shape[batch_dims:batch_dims + k]
    out = []
    for b in range(batch):
        idx = [_in_range("GatherND", flat_idx[b][:, j], n, f"dim {batch_dims + j}")
               for j, n in enumerate(addressed)]
        out.append(flat_data[b][tuple(idx)])
    rest = data.shape[batch_dims + k:]
    return np.stack(out).reshape(indices.shape[:-1] + rest) if out else \
        np.zeros(indices.shape[:-1] + rest, data.dtype)


SCATTER_REDUCTIONS = {"none": None, "add": np.add, "mul": np.multiply, "max": np.maximum,
                      "min": np.minimum}


def _infer_scatter_nd(schema, specs, attrs):
    data, indices, updates = specs
    if attrs["reduction"] not in SCATTER_REDUCTIONS:
        raise AttrError(f"ScatterND: reduction={attrs['reduction']!r} is not allowed "
                        f"(allowed: {', '.join(SCATTER_REDUCTIONS)})")
    k, _ = _nd_parts("ScatterND", data.shape, indices.shape, 0)
    expected = indices.shape[:-1] + data.shape[k:]
    if updates.shape != expected:
        raise ShapeMismatch(f"ScatterND: updates must have shape indices.shape[:-1] + "
                            f"data.shape[k:] = {expected}, got {updates.shape}")
    return [ArgSpec(data.shape, data.dtype)]


def _scatter_nd(data, indices, updates, reduction="none"):
    """Updates applied in index order; with reduction 'none' a repeated index keeps the last."""
    out = data.copy()
    k = indices.shape[-1]
    flat_idx = indices.reshape(-1, k)
    flat_upd = updates.reshape((flat_idx.shape[0],) + data.shape[k:])
    combine = SCATTER_REDUCTIONS[reduction]
    for row, update in zip(flat_idx, flat_upd):
        where = tuple(int(_in_range("ScatterND", np.int64(i), n, f"dim {j}"))
                      for j, (i, n) in enumerate(zip(row, data.shape)))
        out[where] = update if combine is None else combine(out[where], update)
    return out


def _scatter_inputs(schema, specs, rng, attrs):
    """Distinct indices in range (a repeated index with reduction 'none' is order-dependent)."""
    data, indices, updates = specs
    k = indices.shape[-1]
    count = int(np.prod(indices.shape[:-1], dtype=np.int64))
    cells = int(np.prod(data.shape[:k], dtype=np.int64))
    picks = rng.permutation(cells)[:count] if cells else np.zeros(0, np.int64)
    idx = np.stack(np.unravel_index(picks, data.shape[:k]), -1) if k else np.zeros((count, 0))
    return [uniform(data, rng, schema.input_range),
            idx.reshape(indices.shape).astype(to_numpy(indices.dtype)),
            uniform(updates, rng, schema.input_range)]


def _infer_one_hot(schema, specs, attrs):
    indices, depth, values = specs
    if depth.size != 1:
        raise ShapeMismatch(f"OneHot: depth must hold one value, got shape {depth.shape}")
    if values.shape != (2,):
        raise ShapeMismatch(f"OneHot: values must be [off, on] (shape (2,)), got {values.shape}")
    size = host_value("OneHot", depth, "depth")[0]
    if size < 1 or int(size) != size:
        raise ShapeMismatch(f"OneHot: depth must be a positive integer, got {size}")
    rank = len(indices.shape) + 1
    axis = normalize_axis("OneHot", attrs["axis"], rank)
    shape = indices.shape[:axis] + (int(size),) + indices.shape[axis:]
    return [ArgSpec(shape, values.dtype)]


def _one_hot(indices, depth, values, axis=-1):
    """Indices in [-depth, depth) pick the `on` value (negatives count from the end); others
    leave a row of `off` values."""
    size = int(depth.reshape(-1)[0])
    idx = indices.astype(np.int64)
    idx = np.where(idx < 0, idx + size, idx)
    hot = idx[..., None] == np.arange(size)
    hot = np.moveaxis(hot, -1, axis % (indices.ndim + 1))
    return np.where(hot, values[1], values[0])


def _one_hot_inputs(schema, specs, rng, attrs):
    indices, depth, values = specs
    size = int(depth.value[0]) if depth.value else 5
    idx = rng.integers(-size - 1, size + 1, indices.shape)    # a few out of range on purpose
    return [idx.astype(to_numpy(indices.dtype)), None,
            np.array([0, 3], to_numpy(values.dtype))]


register(OpSchema(
    name="GatherElements", tier="C", family="index", inputs=("data", "indices"), dtypes=FLOATS,
    reference_fn=_gather_elements, infer_fn=_infer_gather_elements, type_of={"indices": "Tind"},
    constraints={"T": ALL, "Tind": INDEX}, attrs={"axis": Attr(int, 0, "the axis indexed")},
    make_inputs=_gather_inputs,
    doc="y[i][j] = data[indices[i][j]][j] (axis 0; likewise on other axes): same shape as indices",
    samples=[SampleCase("one element", ((1,), (1,))),
             SampleCase("rows, axis 1", ((8, 100), (8, 5)), {"axis": 1}),
             SampleCase("axis 0, fewer columns", ((6, 7), (3, 5))),
             SampleCase("negative axis", ((2, 3, 4), (2, 3, 9)), {"axis": -1}),
             SampleCase("no indices", ((5, 6), (0, 6))),
             SampleCase("large", ((512, 1024), (512, 64)), {"axis": 1})]))
register(OpSchema(
    name="GatherND", tier="C", family="index", inputs=("data", "indices"), dtypes=FLOATS,
    reference_fn=_gather_nd, infer_fn=_infer_gather_nd, type_of={"indices": "Tind"},
    constraints={"T": ALL, "Tind": ("int64",)},
    attrs={"batch_dims": Attr(int, 0, "leading dims shared by data and indices")},
    make_inputs=lambda schema, specs, rng, attrs: [
        uniform(specs[0], rng, schema.input_range),
        _nd_indices(specs[0].shape, specs[1].shape, attrs["batch_dims"], rng)],
    doc="y = data at the index tuples in the last dim of indices (after batch_dims)",
    samples=[SampleCase("one element", ((1,), (1, 1))),
             SampleCase("whole rows", ((6, 7), (4, 1))),
             SampleCase("single elements", ((6, 7), (4, 2))),
             SampleCase("batch_dims 1", ((3, 6, 7), (3, 2, 1)), {"batch_dims": 1}),
             SampleCase("no indices", ((5, 6), (0, 2))),
             SampleCase("large", ((512, 1024), (256, 1)))]))
register(OpSchema(
    name="ScatterND", tier="C", family="index", inputs=("data", "indices", "updates"),
    dtypes=FLOATS, reference_fn=_scatter_nd, infer_fn=_infer_scatter_nd,
    type_of={"indices": "Tind"}, constraints={"T": ALL, "Tind": ("int64",)},
    attrs={"reduction": Attr(str, "none", "none (replace), add, mul, max or min")},
    make_inputs=_scatter_inputs,
    doc="y = data with updates written (or combined) at the index tuples of indices",
    samples=[SampleCase("one element", ((1,), (1, 1), (1,))),
             SampleCase("whole rows", ((6, 7), (3, 1), (3, 7))),
             SampleCase("single elements, add", ((6, 7), (4, 2), (4,)), {"reduction": "add"}),
             SampleCase("mul", ((6, 7), (4, 2), (4,)), {"reduction": "mul"}),
             SampleCase("max into a 3-D tensor", ((4, 5, 6), (2, 2), (2, 6)),
                        {"reduction": "max"}),
             SampleCase("min", ((6, 7), (4, 1), (4, 7)), {"reduction": "min"}),
             SampleCase("no updates", ((5, 6), (0, 1), (0, 6))),
             SampleCase("large", ((1024, 512), (64, 1), (64, 512)))]))
def _infer_scatter_elements(schema, specs, attrs):
    data, indices, updates = specs
    if attrs["reduction"] not in SCATTER_REDUCTIONS:
        raise AttrError(f"ScatterElements: reduction={attrs['reduction']!r} is not allowed "
                        f"(allowed: {', '.join(SCATTER_REDUCTIONS)})")
    axis = normalize_axis("ScatterElements", attrs["axis"], len(data.shape))
    if updates.shape != indices.shape or len(indices.shape) != len(data.shape) or any(
            i > d for k, (i, d) in enumerate(zip(indices.shape, data.shape)) if k != axis):
        raise ShapeMismatch(f"ScatterElements: indices {indices.shape} and updates "
                            f"{updates.shape} must have one shape, of the rank of data "
                            f"{data.shape}, no dim larger outside axis {axis}")
    return [ArgSpec(data.shape, data.dtype)]


def _scatter_elements(data, indices, updates, axis=0, reduction="none"):
    """y = data with y[..., indices[p], ...] (at axis) = updates[p] for every position p of
    indices, or combined with what is there, in index order."""
    axis %= data.ndim
    idx = _in_range("ScatterElements", indices, data.shape[axis], f"axis {axis}")
    where = list(np.indices(indices.shape, sparse=True))
    where[axis] = idx
    out = data.copy()
    combine = SCATTER_REDUCTIONS[reduction]
    if combine is None:
        out[tuple(where)] = updates
    else:
        combine.at(out, tuple(where), updates)
    return out


def _scatter_elements_inputs(schema, specs, rng, attrs):
    """Indices distinct along the axis within each line (a repeated index with reduction
    'none' is order-dependent), some of them negative."""
    data, indices, updates = specs
    axis = attrs["axis"] % max(len(data.shape), 1)
    size = data.shape[axis] if data.shape else 1
    lines = indices.shape[:axis] + (size,) + indices.shape[axis + 1:]
    order = np.argsort(rng.random(lines), axis=axis)
    idx = np.take(order, np.arange(indices.shape[axis]), axis=axis) if indices.shape else order
    idx = idx - size * (rng.random(idx.shape) < 0.3)
    return [uniform(data, rng, schema.input_range), idx.astype(to_numpy(indices.dtype)),
            uniform(updates, rng, schema.input_range)]


register(OpSchema(
    name="ScatterElements", tier="C", family="index", inputs=("data", "indices", "updates"),
    dtypes=FLOATS, reference_fn=_scatter_elements, infer_fn=_infer_scatter_elements,
    type_of={"indices": "Tind"}, constraints={"T": ALL, "Tind": INDEX},
    attrs={"axis": Attr(int, 0, "the axis indices address"),
           "reduction": Attr(str, "none", "none (replace), add, mul, max or min")},
    make_inputs=_scatter_elements_inputs,
    doc="y = data with updates[p] written (or combined) at position p with its axis "
        "coordinate replaced by indices[p]",
    samples=[SampleCase("one element", ((1,), (1,), (1,))),
             SampleCase("rows, axis 1", ((6, 7), (6, 3), (6, 3)), {"axis": 1}),
             SampleCase("axis 0, fewer columns", ((6, 7), (2, 5), (2, 5))),
             SampleCase("add", ((6, 7), (6, 3), (6, 3)), {"axis": 1, "reduction": "add"}),
             SampleCase("max, negative axis", ((2, 3, 8), (2, 3, 4), (2, 3, 4)),
                        {"axis": -1, "reduction": "max"}),
             SampleCase("no updates", ((5, 6), (0, 6), (0, 6))),
             SampleCase("large", ((512, 1024), (512, 64), (512, 64)), {"axis": 1})]))

register(OpSchema(
    name="OneHot", tier="C", family="index", inputs=("indices", "depth", "values"),
    dtypes=FLOATS, reference_fn=_one_hot, infer_fn=_infer_one_hot, host_inputs=("depth",),
    type_of={"indices": "T1", "depth": "T2", "values": "T"},
    constraints={"T": ALL, "T1": NUMERIC, "T2": NUMERIC},
    attrs={"axis": Attr(int, -1, "where the one-hot axis goes in the output")},
    make_inputs=_one_hot_inputs,
    doc="y = values[1] where the new axis equals the index, values[0] elsewhere",
    samples=[SampleCase("one element", ((1,), (), (2,)), values={"depth": 1}),
             SampleCase("class labels", ((8,), (), (2,)), values={"depth": 10}),
             SampleCase("axis 0", ((3, 4), (), (2,)), {"axis": 0}, values={"depth": 5}),
             SampleCase("no indices", ((0,), (), (2,)), values={"depth": 3}),
             SampleCase("large", ((4096,), (), (2,)), values={"depth": 1000})]))


def _nd_indices(data: tuple, indices: tuple, batch_dims: int, rng) -> np.ndarray:
    """In-range index tuples for GatherND, negative ones included."""
    k = indices[-1]
    dims = np.array(data[batch_dims:batch_dims + k], np.int64)
    if not len(dims) or not np.all(dims):
        return np.zeros(indices, np.int64)
    return (rng.integers(0, 1 << 30, indices) % dims - (rng.random(indices) < 0.3) * dims)
