"""What a tile of the axis kernels holds in UB: the pitch its rows need to reduce, the
elementwise bodies a fused kernel adds (`Fusion`), and the bytes of every buffer (`ub_plan`),
which the host tiling sizes tiles by and the kernel allocates exactly.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from ..ascend.chips import ChipSpec
from ..intmath import ceil_div, round_up
from .ub_place import Want, gaps, staggered

if TYPE_CHECKING:
    from .axis_kernel import AxisOp

STAT_ITEMSIZE = 4            # statistics outputs are float32 at most (LayerNorm's mean, inv_std)


@dataclass(frozen=True)
class Fusion:
    """Elementwise steps an axis kernel runs around its op (a fused kernel; axis_fusion.py).
    Value ids: the kernel's inputs, then the step results, the op's own result among them."""

    prologue: tuple = ()      # Steps computing x from `tiles`
    epilogue: tuple = ()      # Steps mapping the op's result
    tiles: tuple = ()         # kernel inputs loaded like x, side by side in one queue slot
    scalars: tuple = ()       # one-element kernel inputs, read once per block as values
    consts: tuple = ()        # of those, the ones a body reads as a tile (spread once)
    params: tuple = ()        # kernel input per parameter of the op (None: omitted)

    @property
    def steps(self) -> tuple:
        return self.prologue + self.epilogue

    def span(self, elems: int, chip: ChipSpec) -> int:
        """Elements of every buffer a body touches: compare and select work on whole float16
        repeats (as in the elementwise template), so tiles round up to them."""
        return round_up(elems, chip.lanes(2)) if self.steps else elems

    def buffers(self, widen: bool) -> tuple[int, int, int, int]:
        """Compute-dtype tiles the bodies need besides x's: the converted inputs, the step
        results (two in turn: a chain's step reads only its predecessor's result; the last
        prologue step writes x, the last epilogue step y when no conversion follows), the
        bodies' temporaries and the spread scalars."""
        converted = len(self.tiles) if widen and self.prologue else 0
        results = min(2, max(len(self.prologue) - 1, len(self.epilogue) - (not widen), 0))
        temps = max((s.body.temps for s in self.steps), default=0)
        return converted, results, temps, len(self.consts)


PLAIN = Fusion()


def finish_chain(op: AxisOp, params: int, scratch: bool, to_y: bool) -> tuple[str, ...]:
    """The tile ("x", "aux" or "y") each step of the op's finish writes (one step, then one
    per parameter given). Each step reads what the one before wrote and writes elsewhere (in
    place, every repeat would read and write the same banks [BANK2]), alternating between x's
    tile and the scratch, the last into y when `to_y`; with no scratch (a chip without
    published banks) the steps work in place."""
    steps = 1 + params
    read = op.finish_reads
    if not scratch:
        return ("y" if to_y else read,) * steps
    free = "x" if read == "aux" else "aux"
    turn, first = ((free, read), 0) if not to_y else (("y", free), (steps - 1) % 2)
    return tuple(turn[(first + i) % 2] for i in range(steps))


def block_quantum(chip: ChipSpec, itemsize: int) -> int:
    """Row lengths a block reduction takes whole: full repeats whose results again start on
    block boundaries."""
    blk = chip.block_elems(itemsize)
    return math.lcm(chip.lanes(itemsize), blk * blk)


def reduce_steps(pitch: int, chip: ChipSpec, itemsize: int) -> tuple[int, bool, bool]:
    """How rows of `pitch` elements reduce: (block reductions, then a fold of repeats into one
    repeat, whether that works): the last step is always one whole-repeat reduction per row."""
    lanes, blk = chip.lanes(itemsize), chip.block_elems(itemsize)
    quantum = block_quantum(chip, itemsize)
    v, steps = pitch, 0
    while v > lanes and v % quantum == 0:
        v //= blk
        steps += 1
    fold = v > lanes
    return steps, fold, not fold or v // blk <= chip.max_repeat   # strides are u8 fields


def row_pitch(count: int, chip: ChipSpec, s_isz: int, c_isz: int) -> int:
    """The UB pitch of a row of `count` elements: block-aligned for both dtypes, padded further
    only when the reduction steps need it."""
    step = max(chip.block_elems(s_isz), chip.block_elems(c_isz))
    quantum = block_quantum(chip, c_isz)
    while True:
        pitch = round_up(max(count, 1), step)
        if reduce_steps(pitch, chip, c_isz)[2]:
            return pitch
        step = math.lcm(step, quantum) if step % quantum else step * chip.block_elems(c_isz)


@dataclass(frozen=True)
class UbPlan:
    """Bytes of every UB buffer (queues: per slot); the kernel allocates exactly these."""

    in_slot: int
    out_slot: int
    stat_slot: int
    work: int
    aux: int
    red: tuple
    stats: int
    bc: int
    params: tuple            # bytes of each parameter vector given (scale, bias), in order
    bodies: int              # a fusion's compute-dtype tiles (Fusion.buffers, in order)
    scalars: int             # a fusion's scalar inputs, one block each
    in_stride: int           # elements from one tiled input to the next in an input slot
    body_stride: int         # elements from one body tile to the next (ub_place.staggered)
    cap: int                 # elements per statistics slot
    slots: int
    total: int
    gaps: tuple = ()         # (buffer, UB bytes left before it): the bank-aware placement
    chain: tuple = ()        # the tiles the op's finish writes in turn (finish_chain)

    def gap(self, name: str) -> int:
        return dict(self.gaps).get(name, 0)

    def named(self) -> dict:
        """Bytes of each buffer by its name in ORDER (the reductions' two as red0, red1)."""
        return {"in_slot": self.in_slot, "out_slot": self.out_slot,
                "stat_slot": self.stat_slot, "work": self.work, "aux": self.aux,
                "red0": self.red[0], "red1": self.red[1], "stats": self.stats, "bc": self.bc,
                "param0": (self.params + (0, 0))[0], "param1": (self.params + (0, 0))[1],
                "bodies": self.bodies, "scalars": self.scalars}

    @property
    def out_queues(self) -> int:
        """Queues at VECOUT (y, the statistics outputs): each takes buffer_num event ids."""
        return bool(self.out_slot) + bool(self.stat_slot)


def ub_plan(op: AxisOp, layout: str, rows: int, pitch: int, s_isz: int, c_isz: int, buffer_num: int,
            params: int, streaming: bool, chip: ChipSpec, fusion: Fusion = PLAIN,
            room: int | None = None) -> UbPlan:
    """Every buffer's bytes, and the gaps that place them bank-aware within `room` (UB by
    default; the tiling's share of it under a tile_div)."""
    room = chip.ub_bytes if room is None else room
    elems = rows * pitch
    span = fusion.span(elems, chip)
    widen = s_isz != c_isz
    blk, lanes = chip.block_elems(c_isz), chip.lanes(c_isz)
    per_rep = chip.repeat_bytes // chip.block_bytes
    row = layout == "row"
    nstat = rows if row else pitch
    cap = round_up(nstat, max(blk, per_rep))          # brcb reads whole groups of 8
    slots = 2 * op.stats + 1 if streaming else op.stats
    red = (rows * max(ceil_div(pitch, blk), lanes) * c_isz,
           rows * max(ceil_div(pitch, blk * blk), lanes) * c_isz) if row else (0, 0)
    tiled, bodies = len(fusion.tiles) or 1, sum(fusion.buffers(widen))
    in_stride = staggered(span, s_isz, chip) if tiled > 1 else span
    body_stride = staggered(span, c_isz, chip) if bodies > 1 else span
    sizes: dict[str, Any] = dict(
        in_slot=tiled * in_stride * s_isz,
        out_slot=span * s_isz if op.has_y else 0,
        stat_slot=len(op.stat_outputs) * cap * STAT_ITEMSIZE,
        work=span * c_isz if widen or fusion.prologue else 0,
        aux=elems * c_isz if op.needs_aux(layout) or (op.aux_for_banks and chip.ub_bank_groups)
        else 0, red=red,
        stats=slots * cap * c_isz, bc=round_up(rows, per_rep) * blk * c_isz if row else 0,
        params=(pitch * c_isz,) * params, bodies=bodies * body_stride * c_isz,
        scalars=len(fusion.scalars) * chip.block_bytes)
    block = chip.block_bytes
    queued = sum(round_up(sizes[k], block) for k in ("in_slot", "out_slot", "stat_slot"))
    single = sum(round_up(sizes[k], block)
                 for k in ("work", "aux", "stats", "bc", "bodies", "scalars"))
    single += sum(round_up(p, block) for p in sizes["params"])
    total = queued * buffer_num + single + sum(round_up(r, block) for r in red)
    chain = finish_chain(op, params, bool(sizes["aux"]), not (widen or fusion.epilogue))
    plan = UbPlan(**sizes, in_stride=in_stride, body_stride=body_stride, cap=cap, slots=slots,
                  total=total, chain=chain if op.has_y else ())
    placed = _placement(plan.named(), buffer_num, chip, room, plan.chain)
    return replace(plan, total=total + sum(n for _, n in placed), gaps=placed)


ORDER = ("in_slot", "out_slot", "stat_slot", "work", "aux", "red0", "red1", "stats", "bc",
         "param0", "param1", "bodies", "scalars")       # the kernel's allocation order


def _placement(named: dict, buffer_num: int, chip: ChipSpec, room: int,
               chain: tuple) -> tuple:
    """Gaps before the kernel's buffers (ub_place.py) when they fit in `room`: y a bank
    stretch after x's slots (else half a bank-group cycle from them), the float copy of x
    (work: converted, or a prologue's result) half a cycle from the slots it is read from, the
    scratch written from x (aux: x - max, x - mean) half a cycle from x, each parameter vector
    half a cycle from the tile its step of the finish reads (y * scale, + bias). Where UB has
    no room for all of them, the parameters' gaps go first, the bias's before the scale's."""
    queued = ("in_slot", "out_slot", "stat_slot")
    present = [k for k in ORDER if named[k]]
    index = {k: i for i, k in enumerate(present)}
    x = "work" if "work" in index else "in_slot"
    role = {"x": x, "aux": "aux", "y": "out_slot"}
    relations = {"out_slot": ("in_slot", "in_slot"), "work": ("in_slot", ""),
                 "aux": (x, "")}
    for j, tile in enumerate(chain[:2]):
        relations[f"param{j}"] = (role[tile], "")
    nbytes = [round_up(named[k], chip.block_bytes) * (buffer_num if k in queued else 1)
              for k in present]
    found = None
    for optional in ("param1", "param0", ""):
        wants = [Want(n, *(index.get(r) for r in relations.get(k, ("", ""))))
                 for k, n in zip(present, nbytes)]
        found = gaps(wants, chip, room)
        if found is not None:
            break
        relations.pop(optional, None)
    return tuple((k, n) for k, n in zip(present, found or ()) if n)
