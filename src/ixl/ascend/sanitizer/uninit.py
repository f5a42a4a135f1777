"""Uninitialised reads: a value that reaches GM or the scalar unit made from bytes nothing wrote
in this launch (stale UB of an earlier launch, or a workspace or output byte never written).

A shadow bit per byte of UB (per core) and of the output and workspace tensors in GM says
whether the byte holds a value written in this launch. Instructions propagate it lane by lane,
as their operands line up (observe.Access): a lane computed from an unwritten lane is itself
unwritten. This is what makes the check exact without false alarms: kernels legitimately
compute whole repeats past a tile's last element, or whole padded rows, and never copy those
lanes out; the error comes when such a value is copied to an output (or another input) in GM,
or read by the scalar unit (get_value), and it names both that instruction and the one that
first read the unwritten bytes. Workspace bytes are scratch: copying unwritten values there
is not yet an error, reading them back and using them is.

The first such read is reported when its phase ends (a SyncAll, or the launch's end), after the
cross-core race check: bytes one core reads before another core writes them in the same phase
are that race, and the race check names both cores.
"""

from __future__ import annotations

import threading

import numpy as np

from ..core import memory_bytes
from ..errors import UninitialisedRead
from ..observe import Access, GmRole, Instruction, LaunchInfo, Observer, Rows, Space
from ..timeline import Pipe

ALL = 0xFF      # a byte whose 8 bits were all written


class _Shadow:
    """Which bits of one memory were written in this launch (a mask per byte, so that a
    compare's bitmask is tracked lane by lane); for bytes holding values computed from unwritten
    ones, the id of the story of how (0: none recorded)."""

    __slots__ = ("defined", "origin", "base")

    def __init__(self, nbytes: int, base: int = 0) -> None:
        self.defined = np.zeros(nbytes, np.uint8)
        self.origin: np.ndarray | None = None
        self.base = base

    def written(self, a: Access) -> np.ndarray | None:
        """None when every element `a` touches was written, else which were (a.shape)."""
        lo, hi = a.span()
        if isinstance(a.elems, np.ndarray) or a.bits:
            if self.defined[lo - self.base:hi - self.base].min() == ALL:
                return None
        if a.bits:
            assert isinstance(a.elems, int)
            raw = self.defined[lo - self.base:hi - self.base]
            bits = np.unpackbits(raw, bitorder="little")[:int(a.elems)].astype(bool)
            return None if bits.all() else bits
        view = a.view(self.defined, self.base)
        if view.min() == ALL:
            return None
        return (view == ALL).all(axis=-1)

    def write(self, a: Access, value: np.ndarray | None) -> None:
        """Mark what `a` writes: all of it (value None) or the elements `value` says."""
        if a.bits:
            assert isinstance(a.elems, int)
            lo, hi = a.span()
            full = np.ones(int(a.elems), np.bool_) if value is None else value
            self.defined[lo - self.base:hi - self.base] = np.packbits(full, bitorder="little")
        else:
            a.assign(self.defined, ALL if value is None else np.where(value, ALL, 0), self.base)

    def origin_of(self, a: Access, written: np.ndarray) -> int:
        if self.origin is None:
            return 0
        ids = a.view(self.origin, self.base)[~written]
        ids = ids[ids != 0]
        return int(ids[0]) if ids.size else 0


class UninitReads(Observer):
    def __init__(self) -> None:
        self.cores: dict[int, dict[Space, _Shadow]] = {}
        self.gm: dict[int, _Shadow] = {}
        self.roles: dict[int, GmRole] = {}
        self.stories: list[str] = [""]
        self.found: UninitialisedRead | None = None    # the first, reported at the phase's end
        self.lock = threading.Lock()

    def launch_begin(self, launch: LaunchInfo) -> None:
        self.chip = launch.chip
        self.cores = {c: {} for c in launch.cores}
        self.roles = {root: arg.role for root, arg in launch.args.items()}
        self.gm = {root: _Shadow(arg.nbytes, root) for root, arg in launch.args.items()
                   if arg.role in (GmRole.OUTPUT, GmRole.WORKSPACE)}
        self.stories = [""]

    def _shadow(self, core: int, a: Access) -> _Shadow | None:
        if a.space is Space.GM:
            return self.gm.get(a.gm_tensor.root[0])
        mem = self.cores[core]
        shadow = mem.get(a.space)
        if shadow is None:
            shadow = mem[a.space] = _Shadow(memory_bytes(self.chip, a.space))
        return shadow

    def instruction(self, ins: Instruction) -> None:
        # (access, shadow, written-mask) of reads not all written
        unwritten: list[tuple[Access, _Shadow, np.ndarray]] = []
        for a in ins.reads:
            if a.empty:
                continue
            shadow = self._shadow(ins.core, a)
            written = None if shadow is None else shadow.written(a)
            if shadow is not None and written is not None:
                unwritten.append((a, shadow, written))
        if unwritten and ins.pipe is Pipe.S:
            a, shadow, written = unwritten[0]
            self._found(f"uninitialised read on core {ins.core}: {ins.name} ({ins.pipe.lane}) "
                        f"reads {a.describe()}, but {self._what(a, shadow, written)}")
        for w in ins.writes:
            if w.empty:
                continue
            shadow = self._shadow(ins.core, w)
            value = _combine(w, unwritten)
            if value is not None and self._sink(w):
                a, rshadow, written = unwritten[0]
                self._found(f"uninitialised read on core {ins.core}: {ins.name} "
                            f"({ins.pipe.lane}) copies {a.describe()} to {w.describe()}, but "
                            f"{self._what(a, rshadow, written)}")
            if shadow is None:
                continue
            shadow.write(w, value)
            if value is not None:
                self._tell(ins, w, shadow, value, unwritten)

    def _found(self, message: str) -> None:
        if self.found is None:
            self.found = UninitialisedRead(message)

    def phase_end(self, phase: int) -> None:
        if self.found is not None:
            found, self.found = self.found, None
            raise found

    def _sink(self, w: Access) -> bool:
        """Values leave for good: into GM other than the workspace."""
        return w.space is Space.GM and self.roles.get(w.gm_tensor.root[0]) is not GmRole.WORKSPACE

    def _tell(self, ins: Instruction, w: Access, shadow: _Shadow, value: np.ndarray,
              unwritten: list) -> None:
        """Record how the unwritten lanes of `w` came about (inherited from its reads, or a
        new story: this instruction read unwritten bytes)."""
        a, rshadow, written = unwritten[0]
        story = rshadow.origin_of(a, written)
        if not story:
            lo, hi = _first_run(a, written)
            tensor = f" of tensor '{a.tensor.name}'" if a.tensor is not None else ""
            with self.lock:
                self.stories.append(f"{ins.name} ({ins.pipe.lane}) computed from "
                                    f"{a.space.value} [{lo:#x}, {hi:#x}){tensor}, which nothing "
                                    f"wrote in this launch")
                story = len(self.stories) - 1
        if shadow.origin is None:
            shadow.origin = np.zeros(shadow.defined.shape, np.int32)
        w.assign(shadow.origin, np.where(value, 0, story), shadow.base)

    def _what(self, a: Access, shadow: _Shadow, written: np.ndarray) -> str:
        lo, hi = _first_run(a, written)
        story = shadow.origin_of(a, written)
        where = f"{a.space.value} [{lo:#x}, {hi:#x})"
        if story:
            return f"{where} holds what {self.stories[story]}"
        tensor = f" of tensor '{a.tensor.name}'" if a.tensor is not None else ""
        return f"{where}{tensor} was never written in this launch"


def _combine(w: Access, unwritten: list) -> np.ndarray | None:
    """Which elements of write `w` hold written values (None: all of them)."""
    if w.const or not unwritten:
        return None
    shape = w.shape
    value = np.ones(shape, bool)
    for _, _, written in unwritten:
        if written.ndim > len(shape):           # a reduction: all its trailing lanes count
            written = written.all(axis=tuple(range(len(shape), written.ndim)))
        try:
            value &= np.broadcast_to(written, shape)
        except ValueError:                      # operands not lane-aligned: all or nothing
            value &= written.all()
    return None if value.all() else value


def _addresses(a: Access) -> np.ndarray:
    """The byte address of each element `a` touches (a.shape)."""
    e, isz = a.elems, a.itemsize
    if a.bits:
        assert isinstance(e, int)
        return a.base + np.arange(int(e)) // 8
    if isinstance(e, Rows):
        return a.base + (np.arange(e.count)[:, None] * e.pitch + np.arange(e.width)) * isz
    if isinstance(e, np.ndarray):
        return a.base + e * isz
    return a.base + np.arange(int(e)) * isz


def _first_run(a: Access, written: np.ndarray) -> tuple[int, int]:
    """The first contiguous range of unwritten bytes among those `a` touches."""
    addrs = np.unique(_addresses(a)[~written])
    gaps = np.flatnonzero(np.diff(addrs) > a.itemsize)
    last = addrs[gaps[0]] if len(gaps) else addrs[-1]
    return int(addrs[0]), int(last) + a.itemsize
