"""Sliding windows over the spatial dims of (N, C, D1, ..., Dk): the geometry that pools and
ConvTranspose share (ONNX's kernel_shape, strides, pads, dilations, auto_pad, ceil_mode).

Not an op family: the pool and conv_transpose modules use it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import AttrError, ShapeMismatch

AUTO_PADS = ("NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID")


@dataclass(frozen=True)
class Window:
    kernel: tuple[int, ...]
    strides: tuple[int, ...]
    dilations: tuple[int, ...]
    begin: tuple[int, ...]          # explicit padding before each spatial dim
    end: tuple[int, ...]            # explicit padding after it
    out: tuple[int, ...]            # output spatial dims
    overhang: tuple[int, ...]       # ceil_mode's extra positions past the end padding

    @property
    def extent(self) -> tuple[int, ...]:
        """Input positions one dilated window spans."""
        return tuple((k - 1) * d + 1 for k, d in zip(self.kernel, self.dilations))


def ints(op: str, attrs: dict, name: str, count: int, default: int, low: int = 1
         ) -> tuple[int, ...]:
    """An ints attribute with one value per spatial dim (default when omitted)."""
    value = attrs.get(name)
    if value is None:
        return (default,) * count
    if len(value) != count or any(int(v) < low for v in value):
        raise AttrError(f"{op}: {name} must hold {count} ints >= {low} (one per spatial dim), "
                        f"got {list(value)}")
    return tuple(int(v) for v in value)


def spatial(op: str, x: tuple, what: str = "x") -> tuple[int, ...]:
    if len(x) < 3:
        raise ShapeMismatch(f"{op}: {what} must be (N, C, D1, ...) with at least one spatial "
                            f"dim, got shape {x}")
    return tuple(x[2:])


def same_pads(mode: str, total: int) -> tuple[int, int]:
    """SAME_UPPER puts the odd extra pad at the end, SAME_LOWER at the beginning."""
    small = total // 2
    return (small, total - small) if mode == "SAME_UPPER" else (total - small, small)


def explicit_pads(op: str, attrs: dict, rank: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
    pads = attrs.get("pads") or (0,) * (2 * rank)
    if len(pads) != 2 * rank or any(int(p) < 0 for p in pads):
        raise AttrError(f"{op}: pads must hold {2 * rank} non-negative ints (all begins, then "
                        f"all ends), got {list(pads)}")
    return tuple(int(p) for p in pads[:rank]), tuple(int(p) for p in pads[rank:])


def check_auto_pad(op: str, attrs: dict) -> str:
    mode = attrs.get("auto_pad", "NOTSET")
    if mode not in AUTO_PADS:
        raise AttrError(f"{op}: auto_pad={mode!r} is not allowed (allowed: {', '.join(AUTO_PADS)})")
    if mode != "NOTSET" and attrs.get("pads") is not None and any(attrs["pads"]):
        raise AttrError(f"{op}: pads {list(attrs['pads'])} and auto_pad={mode} exclude each other")
    return mode


def pool_window(op: str, x: tuple, attrs: dict, kernel: tuple[int, ...]) -> Window:
    """Check a pooling window over x and give its padding and output dims. ceil_mode rounds the
    output count up, but a window that would start in the end padding is dropped."""
    dims = spatial(op, x)
    rank = len(dims)
    if len(kernel) != rank or any(k < 1 for k in kernel):
        raise AttrError(f"{op}: kernel_shape must hold {rank} positive ints (one per spatial "
                        f"dim of x {x}), got {list(kernel)}")
    strides = ints(op, attrs, "strides", rank, 1)
    dilations = ints(op, attrs, "dilations", rank, 1)
    extent = tuple((k - 1) * d + 1 for k, d in zip(kernel, dilations))
    mode = check_auto_pad(op, attrs)
    ceil = attrs.get("ceil_mode", 0)
    if mode == "NOTSET":
        begin, end = explicit_pads(op, attrs, rank)
    elif mode == "VALID":
        begin = end = (0,) * rank
    else:
        pairs = [same_pads(mode, max(0, (-(-n // s) - 1) * s + e - n))
                 for n, s, e in zip(dims, strides, extent)]
        begin, end = tuple(p[0] for p in pairs), tuple(p[1] for p in pairs)
    out, overhang = [], []
    for n, lo, hi, e, s in zip(dims, begin, end, extent, strides):
        span = n + lo + hi - e
        if span < 0:
            raise ShapeMismatch(f"{op}: the dilated window spans {e} but the padded input is "
                                f"only {n + lo + hi} (x {x}, pads {list(begin + end)})")
        count = (-(-span // s) if ceil else span // s) + 1
        if ceil and (count - 1) * s >= n + lo:
            count -= 1              # the last window would start in the end padding
        out.append(count)
        overhang.append(max(0, (count - 1) * s + e - (n + lo + hi)))
    return Window(tuple(kernel), strides, dilations, begin, end, tuple(out), tuple(overhang))


def windows(x: np.ndarray, win: Window, fill: float, overhang_fill: float | None = None
            ) -> np.ndarray:
    """(N, C, *out, *kernel): every window's elements, the padding filled with `fill` and
    ceil_mode's overhang with `overhang_fill` (default: `fill`)."""
    rank = len(win.kernel)
    lead = [(0, 0)] * (x.ndim - rank)
    xp = np.pad(x, lead + list(zip(win.begin, win.end)), constant_values=fill)
    xp = np.pad(xp, lead + [(0, o) for o in win.overhang],
                constant_values=fill if overhang_fill is None else overhang_fill)
    axes = tuple(range(2, 2 + rank))
    view = np.lib.stride_tricks.sliding_window_view(xp, win.extent, axis=axes)
    view = view[(slice(None), slice(None)) + tuple(slice(None, None, s) for s in win.strides)
                + tuple(slice(None, None, d) for d in win.dilations)]
    return view[(slice(None), slice(None)) + tuple(slice(0, o) for o in win.out)]
