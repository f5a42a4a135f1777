"""What a core tells its observers: each instruction's pipe, modeled times and the memory it
reads and writes, and each sync edge between its pipes.

The debug checks (`sanitizer/`), the timeline recorder (`record.py`) and the Chrome trace
(`ixl.profile.trace`) are all observers; a user can write one and attach it to a chip
(`SimulatedChip.attach`). With no observer attached a core builds none of these events, so
release mode pays nothing for them.

Memory is tagged by address space (GM and UB on a vector core; L1, L0A, L0B, L0C, the
BiasTable and the Fixpipe buffer on a Cube core), so a check written against `Access` covers
every space a unit adds.

Order: the calls for one core come in its program order; the cores of a launch run
interleaved in modeled time (schedule.Runner), so calls of different cores interleave and an
observer keeps its state per core. `launch_begin`, `phase_end` and `launch_end` come while no
core runs.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, NamedTuple

import numpy as np
from numpy.typing import ArrayLike

from .chips import ChipSpec
from .timeline import Pipe

if TYPE_CHECKING:
    from .gm import GlobalTensor
    from .simulator import LaunchRecord


class Space(enum.Enum):
    """An address space an instruction can touch."""

    GM = "GM"
    UB = "UB"
    L1 = "L1"
    L0A = "L0A"
    L0B = "L0B"
    L0C = "L0C"
    BT = "BT"      # BiasTable (TPosition C2)
    FB = "FB"      # Fixpipe buffer (TPosition C2PIPE2GM): quantisation parameters

    __hash__ = object.__hash__


class Rows(NamedTuple):
    """`count` rows of `width` elements, each row `pitch` elements after the one before."""

    count: int  # type: ignore[assignment]  # Ascend C's name; it shadows tuple.count
    width: int
    pitch: int


Elems = int | Rows | np.ndarray   # an Access's elements: a count, rows, or element offsets


class Access:
    """The elements one operand of an instruction touches in one address space.

    `elems` counts in elements of `itemsize` bytes from byte address `base`: an int n (elements
    0..n-1), `Rows`, or an array of element offsets (strided and masked forms). The operands of
    one instruction are lane-aligned by shape: a write's value at position i is computed from
    each read's value at position i; a read with more dimensions than the write feeds position
    i with all its trailing positions (a reduction), and a read's dimension of 1 broadcasts
    (brcb, a select mask). `const` marks a write whose values come from no read (a duplicated
    scalar, DataCopyPad's padding). `bits` marks a count of single bits (a compare's mask:
    element i is bit i % 8 of byte i // 8, LSB first; itemsize 1). `tensor` is the
    GlobalTensor of a GM operand (its name and root), None elsewhere.
    """

    __slots__ = ("space", "base", "itemsize", "elems", "role", "const", "tensor", "bits",
                 "_span")

    def __init__(self, space: Space, base: int, itemsize: int, elems: Elems | np.integer,
                 role: str, const: bool = False, tensor: GlobalTensor | None = None,
                 bits: bool = False) -> None:
        self.space = space
        self.base = base
        self.itemsize = itemsize
        self.elems: Elems = int(elems) if isinstance(elems, np.integer) else elems
        self.role = role
        self.const = const
        self.tensor = tensor
        self.bits = bits
        self._span: tuple[int, int] | None = None

    @property
    def gm_tensor(self) -> GlobalTensor:
        """The GlobalTensor of a GM operand (every GM operand has one)."""
        assert self.tensor is not None
        return self.tensor

    @property
    def shape(self) -> tuple[int, ...]:
        e = self.elems
        if type(e) is int:
            return (e,)
        if type(e) is Rows:
            return (e.count, e.width)
        assert isinstance(e, np.ndarray)
        return e.shape

    @property
    def empty(self) -> bool:
        e = self.elems
        if type(e) is int:
            return e == 0
        if type(e) is Rows:
            return e.count == 0 or e.width == 0
        assert isinstance(e, np.ndarray)
        return e.size == 0

    def span(self) -> tuple[int, int]:
        """[lo, hi): the bytes from the first element touched to the end of the last."""
        if self._span is None:
            e, isz, base = self.elems, self.itemsize, self.base
            if self.bits:
                assert isinstance(e, int)
                self._span = base, base + -(-e // 8)
            elif type(e) is int:
                self._span = base, base + e * isz
            elif type(e) is Rows:
                self._span = base, base + ((e.count - 1) * e.pitch + e.width) * isz
            else:
                assert isinstance(e, np.ndarray)
                self._span = base + int(e.min()) * isz, base + (int(e.max()) + 1) * isz
        return self._span

    def intervals(self) -> tuple[np.ndarray, np.ndarray]:
        """The exact bytes touched as sorted, disjoint [starts, ends) arrays."""
        e, isz = self.elems, self.itemsize
        if type(e) is Rows and e.pitch > e.width and e.count > 1:
            starts = self.base + np.arange(e.count, dtype=np.int64) * (e.pitch * isz)
            return starts, starts + e.width * isz
        if type(e) is np.ndarray:
            offs = np.unique(e)
            cut = np.flatnonzero(np.diff(offs) != 1) + 1
            firsts = offs[np.concatenate(([0], cut))]
            lasts = offs[np.concatenate((cut - 1, [len(offs) - 1]))]
            return self.base + firsts * isz, self.base + (lasts + 1) * isz
        lo, hi = self.span()
        return np.array([lo], np.int64), np.array([hi], np.int64)

    def view(self, memory: np.ndarray, origin: int = 0) -> np.ndarray:
        """This operand's bytes in `memory` (a byte array whose index 0 is address `origin`),
        shaped `shape + (itemsize,)`: a view for counts and rows, a copy for offsets (for
        bits: the byte holding each bit)."""
        e, isz = self.elems, self.itemsize
        start = self.base - origin
        if self.bits:
            assert isinstance(e, int)
            return memory[start + np.arange(e) // 8][:, None]
        if type(e) is int:
            return memory[start:start + e * isz].reshape(e, isz)
        if type(e) is Rows:
            if e.count <= 1 or e.pitch == e.width:
                n = e.count * e.width * isz
                return memory[start:start + n].reshape(e.count, e.width, isz)
            step = memory.itemsize
            return np.ndarray((e.count, e.width, isz), memory.dtype, memory, start * step,
                              (e.pitch * isz * step, isz * step, step))
        assert isinstance(e, np.ndarray)
        return memory[start + e[..., None] * isz + np.arange(isz)]

    def assign(self, memory: np.ndarray, values: ArrayLike, origin: int = 0) -> None:
        """Set this operand's bytes in `memory`: `values` per element (broadcast over its
        bytes) or one value for all (for bits: per byte holding them, the last bit's value)."""
        e, isz = self.elems, self.itemsize
        values = np.asarray(values)
        if values.ndim:
            values = values[..., None]
        if self.bits:
            assert isinstance(e, int)
            memory[self.base - origin + np.arange(e) // 8] = values[..., 0] \
                if values.ndim else values
        elif isinstance(e, np.ndarray):
            memory[self.base - origin + e[..., None] * isz + np.arange(isz)] = values
        else:
            self.view(memory, origin)[...] = values

    def describe(self) -> str:
        lo, hi = self.span()
        where = f" of tensor '{self.tensor.name}'" if self.tensor is not None else ""
        return f"{self.space.value} [{lo:#x}, {hi:#x}){where}"


@dataclass(slots=True)
class Instruction:
    """One instruction as a core ran it: times in core cycles (`issued`: when the scalar
    unit dispatched it; `start`/`end`: on its pipe), and the memory it read and wrote."""

    core: int
    block: int
    pipe: Pipe
    name: str
    issued: float
    start: float
    end: float
    nbytes: int
    reads: tuple[Access, ...]
    writes: tuple[Access, ...]


class SyncKind(enum.Enum):
    SET = "set"            # set_flag (enque, free_tensor): pipe src signals pipe dst
    WAIT = "wait"          # wait_flag (deque, alloc_tensor): pipe dst waits for src's signal
    BARRIER = "barrier"    # pipe_barrier(src); src None: PIPE_ALL
    SYNC_ALL = "sync_all"  # every core met at a SyncAll: all pipes of this core drained
    ALLOC = "alloc"        # alloc_tensor handed out `buffer`
    FREE = "free"          # free_tensor gave `buffer` back to its queue
    CROSS_SET = "cross_set"    # CrossCoreSetFlag on pipe `src`, flag `event_id`, mode `peer`
    CROSS_WAIT = "cross_wait"  # CrossCoreWaitFlag passed: flag `event_id`, set by cores `peer`

    __hash__ = object.__hash__


@dataclass(slots=True)
class Sync:
    """A sync edge or a buffer's life event. `issued` is the scalar unit's dispatch cycle (None
    for events it does not dispatch: SYNC_ALL, ALLOC, FREE). For SET `time` is when the flag
    fires; for WAIT, when the waiting pipe resumes, and `fired` when the flag it took fired.
    Cross-core flags: CROSS_SET's `peer` is the mode (0, 1, 2); CROSS_WAIT's `peer` the
    (core, set number) of each set that made the flag pass, so a check can order the setters'
    earlier work before the waiter's later work."""

    core: int
    block: int
    kind: SyncKind
    what: str
    src: Pipe | None = None
    dst: Pipe | None = None
    event_id: int = 0
    issued: float | None = None
    time: float = 0.0
    fired: float = 0.0
    buffer: Access | None = None
    peer: int | tuple[tuple[int, int], ...] | None = None


class GmRole(enum.Enum):
    """What a kernel argument in GM is to the launch."""

    INPUT = "input"              # read-only
    INPLACE = "in-place input"   # an input the op declares it writes
    OUTPUT = "output"
    WORKSPACE = "workspace"

    __hash__ = object.__hash__


@dataclass(frozen=True)
class GmArg:
    name: str
    addr: int
    nbytes: int
    role: GmRole


@dataclass
class LaunchInfo:
    kernel: str
    block_num: int
    cores: list[int]               # core ids, in the order the simulator runs them
    chip: ChipSpec
    debug: bool
    args: dict[int, GmArg] = field(default_factory=dict)   # by the tensor's base address
    kind: str = "vector"           # the kernel type: "vector", "cube" or "mix"

    def arg(self, access: Access) -> GmArg | None:
        """The kernel argument a GM access belongs to (by its tensor's root), if any."""
        t = access.tensor
        return None if t is None else self.args.get(t.root[0])


class Observer:
    """Base class of the core's observers: every hook does nothing; override what you need."""

    def launch_begin(self, launch: LaunchInfo) -> None:
        pass

    def block_begin(self, core: int, block: int) -> None:
        pass

    def instruction(self, ins: Instruction) -> None:
        pass

    def sync(self, ev: Sync) -> None:
        pass

    def block_end(self, core: int, block: int) -> None:
        pass

    def phase_end(self, phase: int) -> None:
        """Every core reached SyncAll number `phase` (or, for the last phase, the launch end)."""

    def launch_end(self, record: LaunchRecord) -> None:
        """The launch finished; `record` is its LaunchRecord."""
