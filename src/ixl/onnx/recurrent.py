"""LSTM and GRU as graphs of existing ops, unrolled over a sequence whose length is known.

The input projection of every step is one MatMul over the whole sequence (plus the biases);
each step then adds the recurrent MatMul of the previous hidden state, splits the gates and
applies the activations elementwise. A first step without an initial state skips the terms that
would multiply zeros, so no batch size is needed. Outputs follow ONNX: Y (seq, directions,
batch, hidden), Y_h and Y_c (directions, batch, hidden), or batch first with layout=1.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from .errors import UnsupportedOnnx

if TYPE_CHECKING:
    from .translate import NodeContext

# ONNX activation name -> (ixl op, its attributes from activation_alpha / activation_beta)
ACTIVATIONS = {
    "Sigmoid": ("Sigmoid", ()), "Tanh": ("Tanh", ()), "Relu": ("Relu", ()),
    "HardSigmoid": ("HardSigmoid", ("alpha", "beta")), "LeakyRelu": ("LeakyRelu", ("alpha",)),
    "Elu": ("Elu", ("alpha",)), "Softplus": ("Softplus", ()),
}


@dataclass
class Activation:
    op: str
    attrs: dict


@dataclass
class Cell:
    """One direction of one recurrent node being expanded."""

    ctx: NodeContext
    hidden: int
    clip: float | None
    acts: list[Activation]

    def emit(self, op: str, *inputs: str, **attrs: Any) -> str:
        out = self.ctx.fresh(op.lower())
        self.ctx.emit(op, list(inputs), [out], **attrs)
        return out

    def split(self, x: str, parts: int) -> list[str]:
        outs = [self.ctx.fresh("gate") for _ in range(parts)]
        self.ctx.emit("Split", [x], outs, axis=-1, num_outputs=parts)
        return outs

    def activate(self, which: int, x: str, clip: bool = True) -> str:
        """Activation `which` of x; the clip bounds gate inputs (not the cell state, as
        onnxruntime reads ONNX's "input of activations")."""
        if clip and self.clip is not None:
            low, high = (self.ctx.const(np.float32(v), "clip") for v in (-self.clip, self.clip))
            x = self.emit("Clip", x, self.emit("CastLike", low, x), self.emit("CastLike", high, x))
        act = self.acts[which]
        return self.emit(act.op, x, **act.attrs)

    def held(self, lens: str, t: int, new: str, old: str | None, fill: bool = False) -> str:
        """Where step t is past a sequence's length: the old state (or, with `fill`, zeros:
        Y's rows of finished sequences); else the new one."""
        step = self.emit("CastLike", self.ctx.const(np.array(t, np.int32), "step"), lens)
        live = self.emit("Unsqueeze", self.emit("Less", step, lens),
                         self.ctx.const(np.array([1], np.int64), "axis"))
        if old is None or fill:
            old = self.emit("CastLike", self.ctx.const(np.float32(0), "zero"), new)
        return self.emit("Where", live, new, old)

    def advance(self, lens: str, t: int, new: str, old: str | None, states: list[str]) -> str:
        """The hidden state after step t (held past a sequence's end when `lens` is given);
        Y's row for the step goes to `states`."""
        if not lens:
            states.append(new)
            return new
        states.append(self.held(lens, t, new, old, fill=True))
        return self.held(lens, t, new, old)

    def index(self, x: str, i: int) -> str:
        """x[i] along axis 0 (the axis dropped)."""
        return self.emit("Gather", x, self.ctx.const(np.array(i, np.int64), "index"), axis=0)


def _activations(ctx: NodeContext, count: int, directions: int) -> list[list[Activation]]:
    names = ctx.attrs.pop("activations", None)
    alphas = list(ctx.attrs.pop("activation_alpha", []))
    betas = list(ctx.attrs.pop("activation_beta", []))
    names = names or ["Sigmoid", "Tanh", "Tanh"][:count] * directions
    if len(names) != count * directions:
        raise UnsupportedOnnx(f"{ctx.label}: activations {names} must name {count} per "
                              f"direction ({directions})")
    out = []
    for name in names:
        if name not in ACTIVATIONS:
            raise UnsupportedOnnx(f"{ctx.label}: activation {name} is not supported "
                                  f"(supported: {', '.join(ACTIVATIONS)})")
        op, params = ACTIVATIONS[name]
        attrs = {}
        for p in params:
            source = alphas if p == "alpha" else betas
            if source:
                attrs[p] = float(source.pop(0))
        out.append(Activation(op, attrs))
    return [out[d * count:(d + 1) * count] for d in range(directions)]


def _common(ctx: NodeContext, gates: int, acts: int):
    """Check and read what LSTM and GRU share; returns (directions, per-direction cells,
    x as sequence first, the optional inputs by name)."""
    direction = ctx.attrs.pop("direction", "forward")
    if direction not in ("forward", "reverse", "bidirectional"):
        raise UnsupportedOnnx(f"{ctx.label}: direction={direction!r} is not allowed (allowed: "
                              f"forward, reverse, bidirectional)")
    directions = 2 if direction == "bidirectional" else 1
    hidden = ctx.attrs.pop("hidden_size", None)
    layout = ctx.attrs.pop("layout", 0)
    clip = ctx.attrs.pop("clip", None)
    activations = _activations(ctx, acts, directions)
    names = ["X", "W", "R", "B", "sequence_lens", "initial_h", "initial_c", "P"]
    given = dict(zip(names, ctx.inputs + [""] * (len(names) - len(ctx.inputs))))
    x_shape = ctx.shape_of(given["X"])
    if x_shape is None or len(x_shape) != 3:
        raise ctx.needs("the input X needs a static shape (seq, batch, input) to unroll "
                        "the sequence")
    if hidden is None:
        w_shape = ctx.shape_of(given["W"])
        if w_shape is None:
            raise UnsupportedOnnx(f"{ctx.label}: hidden_size is needed")
        hidden = w_shape[1] // gates
    steps = x_shape[1] if layout else x_shape[0]
    if given["sequence_lens"]:
        lens = ctx.known_value(given["sequence_lens"])
        if lens is not None and np.all(lens == steps):
            given["sequence_lens"] = ""          # every sequence runs the whole length
        elif direction != "forward":
            raise UnsupportedOnnx(f"{ctx.label}: sequence_lens with direction={direction} is "
                                  f"not supported (forward only, or every sequence full)")
    cells = [Cell(ctx, hidden, clip, activations[d]) for d in range(directions)]
    x = given["X"]
    if layout:
        x = cells[0].emit("Transpose", x, perm=[1, 0, 2])
        for state in ("initial_h", "initial_c"):
            if given[state]:
                given[state] = cells[0].emit("Transpose", given[state], perm=[1, 0, 2])
    reverse = [direction == "reverse" or d == 1 for d in range(directions)]
    return cells, x, steps, given, layout, reverse


def _projection(cell: Cell, x: str, w: str, d: int, bias: str | None) -> str:
    """x (seq, batch, input) @ W[d]^T (+ bias): every step's input term at once."""
    wt = cell.emit("Transpose", cell.index(w, d), perm=[1, 0])
    xw = cell.emit("MatMul", x, wt)
    return xw if bias is None else cell.emit("Add", xw, bias)


def _outputs(ctx: NodeContext, per_direction: list[list[str]], finals: list[list[str | None]],
             layout: int) -> None:
    """Y from each direction's hidden states in time order; the final states."""
    cell0 = Cell(ctx, 0, None, [])
    zero = ctx.const(np.array([0], np.int64), "axis")
    one = ctx.const(np.array([1], np.int64), "axis")
    outputs = list(ctx.outputs) + [""] * 3
    if outputs[0]:
        ys = []
        for states in per_direction:
            seq = cell0.emit("Concat", *[cell0.emit("Unsqueeze", h, zero) for h in states], axis=0)
            ys.append(cell0.emit("Unsqueeze", seq, one))
        y = ys[0] if len(ys) == 1 else cell0.emit("Concat", *ys, axis=1)
        if layout:
            y = cell0.emit("Transpose", y, perm=[2, 0, 1, 3])
        ctx.emit("Identity", [y], [outputs[0]])
    for k, name in enumerate(outputs[1:3]):
        if not name or k >= len(finals[0]):
            continue
        parts = []
        for f in finals:
            final = f[k]
            assert final is not None            # set by the first step, if not given
            parts.append(cell0.emit("Unsqueeze", final, zero))
        state = parts[0] if len(parts) == 1 else cell0.emit("Concat", *parts, axis=0)
        if layout:
            state = cell0.emit("Transpose", state, perm=[1, 0, 2])
        ctx.emit("Identity", [state], [name])


def _bias_halves(cell: Cell, b: str, d: int) -> tuple[str, str]:
    """B[d] = [Wb, Rb] split in two."""
    wb, rb = cell.split(cell.index(b, d), 2)
    return wb, rb


def lstm(ctx: NodeContext) -> None:
    """Gates i, o, f, c (ONNX order): i, f, o = f(...), c = g(...), C = f*C' + i*c,
    H = o * h(C); peepholes P add p * C' to i and f and p * C to o."""
    cells, x, steps, given, layout, reverse = _common(ctx, 4, 3)
    coupled = ctx.attrs.pop("input_forget", 0)
    ctx.check_consumed()
    per_direction: list[list[str]] = []
    finals: list[list[str | None]] = []
    for d, cell in enumerate(cells):
        bias = None
        if given["B"]:
            wb, rb = _bias_halves(cell, given["B"], d)
            bias = cell.emit("Add", wb, rb)
        xw = _projection(cell, x, given["W"], d, bias)
        rt = cell.emit("Transpose", cell.index(given["R"], d), perm=[1, 0])
        peep = cell.split(cell.index(given["P"], d), 3) if given["P"] else None
        h = cell.index(given["initial_h"], d) if given["initial_h"] else None
        c = cell.index(given["initial_c"], d) if given["initial_c"] else None
        states: list[str] = []
        order = range(steps - 1, -1, -1) if reverse[d] else range(steps)
        for t in order:
            pre = cell.index(xw, t)
            if h is not None:
                pre = cell.emit("Add", pre, cell.emit("MatMul", h, rt))
            i, o, f, g = cell.split(pre, 4)
            if peep is not None and c is not None:
                i = cell.emit("Add", i, cell.emit("Mul", peep[0], c))
                f = cell.emit("Add", f, cell.emit("Mul", peep[2], c))
            i = cell.activate(0, i)
            if coupled:
                f = cell.emit("Sub", cell.emit("CastLike", ctx.const(np.float32(1), "one"), i), i)
            else:
                f = cell.activate(0, f)
            old_c = c
            new_c = cell.emit("Mul", i, cell.activate(1, g))
            if c is not None:
                new_c = cell.emit("Add", cell.emit("Mul", f, c), new_c)
            c = new_c
            if peep is not None:
                o = cell.emit("Add", o, cell.emit("Mul", peep[1], c))
            new_h = cell.emit("Mul", cell.activate(0, o), cell.activate(2, c, clip=False))
            if given["sequence_lens"]:
                c = cell.held(given["sequence_lens"], t, c, old_c)
            h = cell.advance(given["sequence_lens"], t, new_h, h, states)
        per_direction.append(states[::-1] if reverse[d] else states)
        finals.append([h, c])
    _outputs(ctx, per_direction, finals, layout)


def gru(ctx: NodeContext) -> None:
    """Gates z, r, h (ONNX order): z, r = f(...), h = g(x Wh + (r * H') Rh + Rbh + Wbh), or with
    linear_before_reset g(x Wh + r * (H' Rh + Rbh) + Wbh); H = (1 - z) * h + z * H'."""
    cells, x, steps, given, layout, reverse = _common(ctx, 3, 2)
    before_reset = ctx.attrs.pop("linear_before_reset", 0)
    ctx.check_consumed()
    hidden = cells[0].hidden
    per_direction: list[list[str]] = []
    finals: list[list[str | None]] = []
    for d, cell in enumerate(cells):
        bias, rbh = None, None
        if given["B"]:
            wb, rb = _bias_halves(cell, given["B"], d)
            rbz, rbr, rbh = cell.split(rb, 3)
            zero_h = cell.emit("CastLike", ctx.const(np.zeros(hidden, np.float32), "zeros"), rb)
            bias = cell.emit("Add", wb, cell.emit("Concat", rbz, rbr,
                                                  rbh if not before_reset else zero_h, axis=0))
        xw = _projection(cell, x, given["W"], d, bias)
        rt = cell.emit("Transpose", cell.index(given["R"], d), perm=[1, 0])
        sizes = ctx.const(np.array([2 * hidden, hidden], np.int64), "split")
        r_zr, r_h = (ctx.fresh("r") for _ in range(2))
        ctx.emit("Split", [rt, sizes], [r_zr, r_h], axis=1)
        one = ctx.const(np.float32(1), "one")
        h = cell.index(given["initial_h"], d) if given["initial_h"] else None
        states: list[str] = []
        order = range(steps - 1, -1, -1) if reverse[d] else range(steps)
        for t in order:
            x_z, x_r, x_h = cell.split(cell.index(xw, t), 3)
            if h is not None:
                h_z, h_r = cell.split(cell.emit("MatMul", h, r_zr), 2)
                x_z, x_r = cell.emit("Add", x_z, h_z), cell.emit("Add", x_r, h_r)
            z, r = cell.activate(0, x_z), cell.activate(0, x_r)
            if before_reset:
                rec = rbh if h is None else cell.emit("MatMul", h, r_h)
                if h is not None and rbh is not None:
                    rec = cell.emit("Add", rec, rbh)
                if rec is not None:
                    x_h = cell.emit("Add", x_h, cell.emit("Mul", r, rec))
            elif h is not None:
                x_h = cell.emit("Add", x_h, cell.emit("MatMul", cell.emit("Mul", r, h), r_h))
            candidate = cell.activate(1, x_h)
            keep = cell.emit("Sub", cell.emit("CastLike", one, z), z)
            new_h = cell.emit("Mul", keep, candidate)
            if h is not None:
                new_h = cell.emit("Add", new_h, cell.emit("Mul", z, h))
            h = cell.advance(given["sequence_lens"], t, new_h, h, states)
        per_direction.append(states[::-1] if reverse[d] else states)
        finals.append([h])
    _outputs(ctx, per_direction, finals, layout)
