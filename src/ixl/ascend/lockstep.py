"""Lockstep: a memoised launch's cores apply their effects on memory together, one numpy
operation over the stack of their memories (memories.py) instead of one core at a time.

A timing memo (memo.py) applies a launch's effects in the order its timed replay applied
them, core after core. Most launches run one program on every core: core after core, the
same instruction on the same offsets of each core's own memory, on GM windows a fixed step
apart. Each core's memories are a row of one array per kind of core and memory, so the
instruction's views of every core are one strided view of that array, and one call applies
the instruction on all of them, when its function takes a leading core axis on each memory
view (`lockstep`) and gives each row the bits it gives one core alone (data movement, exact
arithmetic).

That reorders the effects of different cores, which GM's bytes allow only where no core
writes bytes another core of the launch reads or writes (flags or atomics order those, and
the order of atomic accumulation decides float results), or where the writer is a Cube core
whose vector cores read its output after it (a mix kernel's workspace: Cube cores' effects
go first). A plan checks that once per phase (the stretches between SyncAlls, which keep
their order), from the trace's GM moves; a phase where it fails applies its effects in their
order as before. Each core's own effects keep their order. The cores' places (their views'
bytes in the stacks, their GM offsets) need not be one step apart: any grid of them (tiles
on rows and columns, the two vector cores of a Cube core) is one view with an axis per
dimension of the grid.
"""

from __future__ import annotations

import enum
import functools
import hashlib
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from numpy.lib.stride_tricks import as_strided

from .core import GM_MOVE, CoreKind, _apply_gm

if TYPE_CHECKING:
    from .memo import MemoCore, TimingMemo
    from .replay import LaunchTrace

LOCKSTEP: set = set()        # effect functions that take a leading core axis (see `lockstep`)


def lockstep(fn: Callable) -> Callable:
    """Mark an effect function as one that, given every memory view with a leading axis of
    cores (all of them, one row a core), applies itself to each row exactly as to that core
    alone: a lockstep call gives each core the bits its own call would."""
    LOCKSTEP.add(fn)
    return fn


# numpy functions whose effects are exact element by element (copies, IEEE-rounded
# arithmetic), so a stack of rows gives each row what it gives alone
for _fn in (np.copyto, np.add, np.subtract, np.multiply, np.maximum, np.minimum):
    lockstep(_fn)


def lead_strided(buf: np.ndarray, shape: tuple[int, ...], strides: tuple[int, ...]
                 ) -> np.ndarray:
    """A strided view of `buf`'s last axis from its start, behind `buf`'s leading axes: one
    core's view as before, or every core's in a lockstep call."""
    if buf.ndim == 1:
        return np.ndarray(shape, buf.dtype, buf, 0, strides)    # cheaper than as_strided
    return as_strided(buf, (*buf.shape[:-1], *shape), (*buf.strides[:-1], *strides),
                      writeable=True)


def as_blocks(data: np.ndarray) -> np.ndarray:
    """Bytes whose last axis is contiguous as one item per row of that axis (a C0 block of
    32 bytes, say): numpy copies such items whole, not byte by byte."""
    return data.view(np.dtype((np.void, data.shape[-1])))[..., 0]


# ---------------------------------------------------------------- the plan

_MEMORY, _VALUE = "memory", "value"


@dataclass
class _Arg:
    """How one argument of an effect differs from core to core: a view of the core's memory
    (`key` its shape and type; `stack` the memories' array, `at` where in it), or a value all
    share."""

    key: tuple
    stack: np.ndarray | None = None
    value: object = None
    at: int = 0              # a memory view's first byte in its stack


def _memory_of(core: MemoCore, value: np.ndarray) -> _Arg | None:
    ptr = value.__array_interface__["data"][0]
    for space, row in core.memories.items():
        stack = row.base
        if isinstance(stack, np.ndarray) and stack.ndim == 2 and stack.shape[1] == row.nbytes:
            at = ptr - stack.__array_interface__["data"][0]
            if 0 <= at < stack.nbytes:
                return _Arg((_MEMORY, space, value.shape, value.strides, value.dtype),
                            stack, value, at)
    return None


def _describe(core: MemoCore, value: object) -> _Arg | None:
    """The argument's key (equal on cores whose calls lockstep can join), or None when
    unknown (the effect then runs core by core)."""
    if isinstance(value, np.ndarray):
        found = _memory_of(core, value)
        if found is not None:
            return found
        digest = hashlib.blake2b(np.ascontiguousarray(value).tobytes(), digest_size=16)
        return _Arg((_VALUE, value.shape, value.dtype, digest.digest()), value=value)
    if isinstance(value, functools.partial):
        if value.func not in LOCKSTEP:
            return None
        parts = [_describe(core, v) for v in (*value.args, *value.keywords.values())]
        keys = [p.key for p in parts if p is not None and p.stack is None]
        if len(keys) != len(parts):
            return None
        return _Arg((_VALUE, value.func, tuple(value.keywords), tuple(keys)), value=value)
    try:
        hash(value)
    except TypeError:
        return None
    if isinstance(value, (int, float, bool, str, tuple, enum.Enum, np.generic, np.dtype,
                          type(None))) or value in LOCKSTEP:
        return _Arg((_VALUE, type(value), value), value=value)
    return None


@dataclass
class _Joint:
    """One effect of every core of a group, applied as one call: the function with its memory
    arguments stacked over the cores' axes; a GM effect adds each launch's GM rows (argument,
    first core's offset, the cores' axes' strides in GM, bytes)."""

    call: Callable
    gm: tuple | None = None

    def apply(self, bound: list) -> None:
        if self.gm is None:
            self.call()
            return
        arg, offset, sizes, strides, nbytes = self.gm
        seg, root = bound[arg]
        start = root - seg.addr + offset
        self.call(as_strided(seg.data[start:], (*sizes, nbytes), (*strides, 1)))


def _grid(offsets: np.ndarray) -> tuple[tuple, np.ndarray] | None:
    """The cores' offsets (one row a core, one column a view) as a grid: axes' sizes and, per
    axis and column, strides, with row i = row 0 + the strides times i's digits in those
    sizes (innermost last); None when they are not."""
    offs = offsets - offsets[0]
    sizes: list[int] = []
    strides: list[np.ndarray] = []
    while len(offs) > 1:
        for d in range(2, len(offs) + 1):
            if len(offs) % d:
                continue
            block = offs.reshape(-1, d, offs.shape[1])
            step = block[0, 1] - block[0, 0]
            if np.all(block - block[:, :1] == np.arange(d)[:, None] * step):
                sizes.insert(0, d)
                strides.insert(0, step)
                offs = block[:, 0]
                break
        else:
            return None
    return tuple(sizes), np.array(strides, np.int64).reshape(len(sizes), offsets.shape[1])


@dataclass
class LockstepPlan:
    """What a memo's apply runs: joint effects and single cores' own ones, in an order that
    keeps each core's; `joint` counts the joint ones."""

    steps: list          # _Joint, or (op, core rank, step)
    joint: int = 0

    def apply(self, cores: list[MemoCore]) -> None:
        bound = cores[0].gm_bound
        for s in self.steps:
            if type(s) is _Joint:
                s.apply(bound)
            else:
                op, rank, step = s
                op(cores[rank], *step[1:])


def plan(memo: TimingMemo, trace: LaunchTrace, cores: list[MemoCore]) -> LockstepPlan | None:
    """The memo's effects in lockstep, phase by phase (a phase whose cores share GM bytes one
    of them writes, other than a Cube core's output its vector cores read after it, keeps
    its order), or None when nothing joins."""
    ends = [p.effects for p in memo.phases]
    stacked = all(isinstance(row.base, np.ndarray) and row.base.ndim == 2
                  for c in cores for row in c.memories.values())
    touches = _touches(memo, trace, cores) if len(cores) > 1 and stacked else None
    if touches is None or not ends or ends[-1] != len(memo.effects) or ends != sorted(ends):
        return None
    out = LockstepPlan([])
    lo = 0
    for hi in ends:
        effects = memo.effects[lo:hi]
        if _gm_ordered([t for t in touches if lo <= t.at < hi]):
            _plan_phase(out, effects, cores, trace.joints)
        else:
            out.steps.extend(effects)
        lo = hi
    return out if out.joint else None


def _plan_phase(out: LockstepPlan, effects: list, cores: list[MemoCore], joints: dict
                ) -> None:
    """Cores whose effects run the same functions, one after the other, join (Cube cores'
    before vector cores')."""
    by_rank: dict[int, list] = defaultdict(list)
    for op, rank, step in effects:
        by_rank[rank].append((op, step))
    groups: dict[tuple, list[int]] = defaultdict(list)
    for rank, mine in by_rank.items():
        groups[tuple((op, _func(step[1])) for op, step in mine)].append(rank)
    for ranks in sorted(groups.values(), key=lambda g: cores[g[0]].kind is not CoreKind.AIC):
        for run in _affine_runs(sorted(ranks, key=lambda r: cores[r].core_id.index), cores):
            _plan_group(out, run, [by_rank[r] for r in run], cores, joints)


def _func(effect: object) -> object:
    """What an effect runs, alike on every core: a partial's function, a closure's code."""
    fn = effect.func if isinstance(effect, functools.partial) else effect
    return getattr(fn, "__code__", fn)


def _affine_runs(ranks: list[int], cores: list[MemoCore]) -> list[list[int]]:
    """The ranks (sorted by core) cut into runs whose memory rows are a fixed step apart (one
    strided view of a stack holds a run's)."""
    runs: list[list[int]] = []
    for r in ranks:
        run = runs[-1] if runs else None
        row = cores[r].core_id.index
        if run is not None and (len(run) == 1 or row - cores[run[-1]].core_id.index ==
                                cores[run[1]].core_id.index - cores[run[0]].core_id.index):
            run.append(r)
        else:
            runs.append([r])
    return runs


def _plan_group(out: LockstepPlan, ranks: list[int], effects: list[list], cores: list[MemoCore],
                joints: dict) -> None:
    """Each position of cores whose effects are the same functions one after the other:
    joint where it can be (made once per trace: `joints`, by the steps it joins)."""
    for n in range(len(effects[0])):
        column = [e[n] for e in effects]
        key = tuple(id(s) for _, s in column)
        if key not in joints:
            joints[key] = _joint([s for _, s in column], ranks, cores)
        joint = joints[key]
        if joint is not None:
            out.steps.append(joint)
            out.joint += 1
        else:
            out.steps.extend((op, r, s) for r, (op, s) in zip(ranks, column))


def _joint(steps: list, ranks: list[int], cores: list[MemoCore]) -> _Joint | None:
    """The steps (one a core) as one call, when their function takes the cores' axes and
    their arguments differ only in where their views lie, those places forming a grid."""
    effect = steps[0][1]
    if not isinstance(effect, functools.partial) or effect.func not in LOCKSTEP:
        return None
    on_gm = steps[0][0] is _apply_gm
    if on_gm and (len({s[2] for s in steps}) != 1 or len({s[4] for s in steps}) != 1):
        return None
    described: list[list[_Arg]] = []
    for s, r in zip(steps, ranks):
        e = s[1]
        if not isinstance(e, functools.partial) or e.func is not effect.func \
                or e.keywords.keys() != effect.keywords.keys():
            return None
        one = [_describe(cores[r], v) for v in (*e.args, *e.keywords.values())]
        if any(a is None for a in one):
            return None
        described.append([a for a in one if a is not None])
    first = described[0]
    if any([a.key for a in d] != [a.key for a in first] for d in described[1:]):
        return None
    views = [i for i, a in enumerate(first) if a.stack is not None]
    if not views:
        return None              # nothing of a core's own: one call would act for one core
    places = np.array([[d[i].at for i in views] + ([s[3]] if on_gm else [])
                       for d, s in zip(described, steps)], np.int64).reshape(len(steps), -1)
    grid = _grid(places)
    if grid is None:
        return None
    sizes, strides = grid
    stacked = [a.value for a in first]
    for col, i in enumerate(views):
        stacked[i] = _stacked(first[i], sizes, strides[:, col])
    n_args = len(effect.args)
    call = functools.partial(effect.func, *stacked[:n_args],
                             **dict(zip(effect.keywords, stacked[n_args:])))
    gm = (steps[0][2], steps[0][3], sizes, tuple(strides[:, -1]), steps[0][4]) if on_gm \
        else None
    return _Joint(call, gm)


def _stacked(arg: _Arg, sizes: tuple, lead: np.ndarray) -> np.ndarray:
    """A memory view of every core of the group: the cores' axes (`sizes`, `lead` bytes
    apart in the stack) in front of the first core's view."""
    _, _, shape, strides, dtype = arg.key
    return np.ndarray((*sizes, *shape), dtype, arg.stack, arg.at, (*map(int, lead), *strides))


def _touches(memo: TimingMemo, trace: LaunchTrace, cores: list[MemoCore]) -> list | None:
    """Every GM move of the launch as its bursts (each a [start, end) of its segment), given
    to the effect that follows it; None when a move has no such effect."""
    at = {id(step): i for i, (_, _, step) in enumerate(memo.effects)}
    bound = cores[0].gm_bound
    out = []
    for n, c in enumerate(cores):
        cube = c.kind is CoreKind.AIC
        moved = None
        for step in trace.cores[c.core_id].steps:
            if moved is not None:
                if step[0] is not _apply_gm or id(step) not in at:
                    return None
                (_, _, _, arg, offset, _, count, width, pitch, outer, outer_pitch, write,
                 *_rest) = moved
                seg, root = bound[arg]
                first = root - seg.addr + offset
                starts = (first + np.arange(outer)[:, None] * outer_pitch
                          + np.arange(count)[None, :] * pitch).reshape(-1)
                out.append(_Touch(seg.addr, starts, starts + width, n, write, at[id(step)],
                                  cube))
                moved = None
            if step[0] == GM_MOVE:
                moved = step
    return out


def _gm_ordered(touches: list) -> bool:
    """Whether the plan's order (every Cube core's effects, then every vector core's, each
    core's in its own order) leaves GM as the memo's order does: no core writes bytes another
    core of its kind reads or writes, no vector core writes bytes a Cube core touches, and a
    vector core touches bytes a Cube core writes only after that write."""
    by_segment: dict[int, list] = defaultdict(list)
    for t in touches:
        by_segment[t.segment].append(t)
    for parts in by_segment.values():
        cube = [p for p in parts if p.cube]
        vector = [p for p in parts if not p.cube]
        if not (_private(cube) and _private(vector)):
            return False
        if cube and vector and not _cube_first(cube, vector):
            return False
    return True


@dataclass
class _Touch:
    """One move's bursts in a segment: by core `n` (its rank), writing or reading, for effect
    `at` of the memo's order, on a Cube core or not."""

    segment: int
    lo: np.ndarray
    hi: np.ndarray
    n: int
    write: bool
    at: int
    cube: bool


def _cube_first(cube: list[_Touch], vector: list[_Touch]) -> bool:
    """No vector write meets a Cube core's bytes, and each vector touch of a Cube write's
    bytes comes after it in the memo's order."""
    v_writes = [p for p in vector if p.write]
    if v_writes and _meets(_cat(v_writes, "lo"), _cat(v_writes, "hi"),
                           *_union(_cat(cube, "lo"), _cat(cube, "hi"))):
        return False
    writes = [p for p in cube if p.write]
    if not writes:
        return True
    w_lo, w_hi = _cat(writes, "lo"), _cat(writes, "hi")
    w_at = np.concatenate([np.full(len(p.lo), p.at) for p in writes])
    for p in vector:
        for lo, hi in zip(p.lo, p.hi):
            over = (w_lo < hi) & (w_hi > lo)
            if over.any() and w_at[over].max() > p.at:
                return False
    return True


def _cat(parts: list[_Touch], field: str) -> np.ndarray:
    return np.concatenate([getattr(p, field) for p in parts])


def _private(parts: list[_Touch]) -> bool:
    """No byte of any core's writes lies in another core's reads or writes."""
    if not any(p.write for p in parts) or len({p.n for p in parts}) < 2:
        return True
    merged = [_union(_cat(mine, "lo"), _cat(mine, "hi"))
              for n in {p.n for p in parts} for mine in [[p for p in parts if p.n == n]]]
    # bytes two or more cores touch: where the count of covering cores' intervals is >= 2
    edges = np.concatenate([np.concatenate([lo, hi]) for lo, hi in merged])
    deltas = np.concatenate([np.concatenate([np.ones(len(lo), np.int64),
                                             -np.ones(len(hi), np.int64)])
                             for lo, hi in merged])
    order = np.argsort(edges, kind="stable")
    edges, cover = edges[order], np.cumsum(deltas[order])
    shared = cover[:-1] >= 2
    s_lo, s_hi = edges[:-1][shared], edges[1:][shared]
    keep = s_hi > s_lo
    if not keep.any():
        return True
    writes = [p for p in parts if p.write]
    return not _meets(_cat(writes, "lo"), _cat(writes, "hi"), s_lo[keep], s_hi[keep])


def _meets(lo: np.ndarray, hi: np.ndarray, s_lo: np.ndarray, s_hi: np.ndarray) -> bool:
    """Whether any [lo, hi) overlaps any of the sorted disjoint [s_lo, s_hi)."""
    at = np.searchsorted(s_lo, hi, side="left")   # stretches starting before each hi
    before = at > 0
    return bool(np.any(s_hi[np.maximum(at - 1, 0)][before] > lo[before]))


def _union(lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sorted disjoint [lo, hi) covering the given ones."""
    order = np.argsort(lo, kind="stable")
    lo, hi = lo[order], hi[order]
    reach = np.maximum.accumulate(hi)
    new = np.ones(len(lo), bool)
    new[1:] = lo[1:] > reach[:-1]
    starts = np.flatnonzero(new)
    ends = np.append(starts[1:], len(lo)) - 1
    return lo[starts], reach[ends]
