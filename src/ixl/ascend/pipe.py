"""TPipe, TQue and TBuf: how a kernel carves its core's memories and orders its pipes.

EnQue sets a flag from the producing pipe and DeQue waits for it (RAW); FreeTensor sets a flag
back and the next AllocTensor of that slot waits for it (WAR). The pipes are fixed by the
queue's position, as in Ascend C: VECIN is filled by MTE2 and read by V, VECOUT is filled by V
and drained by MTE3, VECCALC stays on V. On a Cube core A1/B1/C1 (L1) are filled by MTE2 and
read by MTE1, A2 (L0A), B2 (L0B) and C2 (BiasTable) are filled by MTE1 and read by the Cube (M),
CO1 (L0C) is filled by M and drained by the Fixpipe (FIX) [TQUE2][HI-0004].
"""

from __future__ import annotations

import enum
from collections import deque
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import DTypeLike

from ..intmath import round_up
from .core import AICore, current_core
from .errors import BufferOverflow, IllegalInstruction, ResourceLimit, UbOverflow
from .observe import Access, Elems, Space, SyncKind
from .timeline import Pipe

if TYPE_CHECKING:
    from .sync import HardEvent


class TPosition(enum.Enum):
    VECIN = "VECIN"
    VECOUT = "VECOUT"
    VECCALC = "VECCALC"
    A1 = "A1"            # L1: the left matrix
    B1 = "B1"            # L1: the right matrix
    C1 = "C1"            # L1: bias (or any other L1 data)
    A2 = "A2"            # L0A
    B2 = "B2"            # L0B
    CO1 = "CO1"          # L0C
    CO2 = "CO2"          # GM on A2: Fixpipe writes it directly, no on-chip buffer
    C2 = "C2"            # BiasTable
    C2PIPE2GM = "C2PIPE2GM"   # the Fixpipe buffer (per-channel quantisation parameters)

    __hash__ = object.__hash__   # a hot dict key: skip Enum's Python-level hash

    @property
    def space(self) -> Space:
        return POSITION_SPACE[self]


# Where each position's buffers live.
POSITION_SPACE = {
    TPosition.VECIN: Space.UB, TPosition.VECOUT: Space.UB, TPosition.VECCALC: Space.UB,
    TPosition.A1: Space.L1, TPosition.B1: Space.L1, TPosition.C1: Space.L1,
    TPosition.A2: Space.L0A, TPosition.B2: Space.L0B, TPosition.CO1: Space.L0C,
    TPosition.CO2: Space.GM, TPosition.C2: Space.BT, TPosition.C2PIPE2GM: Space.FB,
}

# (producer pipe, consumer pipe) of each position's queues. The Fixpipe both fills (L1 ->
# Fixpipe buffer) and reads the Fixpipe buffer [U: the pipe of that copy is assumed FIX].
_PIPES = {
    TPosition.VECIN: (Pipe.MTE2, Pipe.V),
    TPosition.VECOUT: (Pipe.V, Pipe.MTE3),
    TPosition.VECCALC: (Pipe.V, Pipe.V),
    TPosition.A1: (Pipe.MTE2, Pipe.MTE1),
    TPosition.B1: (Pipe.MTE2, Pipe.MTE1),
    TPosition.C1: (Pipe.MTE2, Pipe.MTE1),
    TPosition.A2: (Pipe.MTE1, Pipe.M),
    TPosition.B2: (Pipe.MTE1, Pipe.M),
    TPosition.C2: (Pipe.MTE1, Pipe.M),
    TPosition.CO1: (Pipe.M, Pipe.FIX),
    TPosition.C2PIPE2GM: (Pipe.FIX, Pipe.FIX),
}

# The alignment of TPipe's buffers in each memory: a buffer must be usable as any operand its
# position takes, so L0C buffers start on an Mmad destination's 1 KB [MMAD].
_BUFFER_ALIGN = {Space.UB: "block_bytes", Space.L1: "l1_align", Space.L0A: "l0ab_align",
                 Space.L0B: "l0ab_align", Space.L0C: "mmad_dst_align",
                 Space.BT: "bias_table_align", Space.FB: "fixpipe_buffer_align"}


class LocalTensor:
    """A typed window of a core's UB: Ascend C's LocalTensor<T>."""

    __slots__ = ("core", "offset", "dtype", "count", "position", "itemsize", "slot", "space")

    def __init__(self, core: AICore, offset: int, dtype: DTypeLike, count: int, position: TPosition,
                 slot: _Slot | None = None) -> None:
        self.core = core
        self.offset = offset
        self.dtype: np.dtype = dtype if isinstance(dtype, np.dtype) else np.dtype(dtype)
        self.itemsize = self.dtype.itemsize
        self.count = count
        self.position = position
        self.slot = slot
        self.space = POSITION_SPACE[position]

    @property
    def nbytes(self) -> int:
        return self.count * self.itemsize

    def __getitem__(self, offset: int) -> LocalTensor:
        """`x[offset]`: the tensor from element `offset` on (its UB address must stay aligned
        for any instruction that uses it)."""
        if not 0 <= offset <= self.count:
            raise IllegalInstruction(f"local tensor offset {offset} outside its {self.count} "
                                     f"elements")
        return LocalTensor(self.core, self.offset + offset * self.itemsize, self.dtype,
                           self.count - offset, self.position, self.slot)

    def reinterpret(self, dtype: DTypeLike) -> LocalTensor:
        """ReinterpretCast: the same bytes seen as another type."""
        dtype = np.dtype(dtype)
        return LocalTensor(self.core, self.offset, dtype, self.nbytes // dtype.itemsize,
                           self.position, self.slot)

    def access(self, elems: Elems | np.integer, role: str, const: bool = False,
               bits: bool = False) -> Access:
        """The operand an instruction reports to the core's observers (see observe.Access)."""
        return Access(self.space, self.offset, self.itemsize, elems, role, const, bits=bits)

    def view(self, count: int | None = None) -> np.ndarray:
        """numpy view of the first `count` elements (all by default), checked against its
        memory."""
        n = self.count if count is None else count
        if self.space is Space.UB:
            return self.core.ub_view(self.offset, n * self.itemsize, "accesses").view(self.dtype)
        return self.core.local_view(self.space, self.offset, n * self.itemsize,
                                    "accesses").view(self.dtype)

    def bytes(self, offset: int, nbytes: int, what: str) -> np.ndarray:
        """The bytes [offset, offset + nbytes) from this tensor's start, checked against its
        memory (not against the tensor: the chip checks only its memory's size)."""
        return self.core.local_view(self.space, self.offset + offset, nbytes, what)

    def numpy(self) -> np.ndarray:
        return self.view().copy()

    def get_value(self, index: int) -> float:
        """GetValue: the scalar unit reads one element (order it after the write with a
        flag to PIPE_S, e.g. MTE2_S, as on the chip)."""
        if not 0 <= index < self.count:
            raise IllegalInstruction(f"get_value({index}) outside the {self.count} elements")
        core = self.core
        core.issue(Pipe.S, "get_value", core.costs.scalar_issue_cycles)
        value = self.view(index + 1)[index:index + 1]
        core.read_back("get_value", self.space, self.offset + index * self.itemsize,
                       value.tobytes())
        if core.observers:
            core.observe(Pipe.S, "get_value", (self[index].access(1, "src"),), ())
        return value[0].item()

    def __repr__(self) -> str:
        return (f"LocalTensor({self.position.value}, {self.space.value.lower()} "
                f"{self.offset:#x}, {self.dtype}, {self.count})")


class _Slot:
    """One buffer of a queue: its UB range and the event id its flags use."""

    __slots__ = ("offset", "nbytes", "event_id", "in_use", "release_pending", "owner")

    def __init__(self, offset: int, nbytes: int, event_id: int, owner: TQue) -> None:
        self.owner = owner
        self.offset = offset
        self.nbytes = nbytes
        self.event_id = event_id
        self.in_use = False
        self.release_pending = False   # freed: a WAR flag is set and not yet waited for


class TQue:
    def __init__(self, position: TPosition, depth: int = 1) -> None:
        if position not in _PIPES:
            raise IllegalInstruction(
                f"TQue position {position.value} has no queue here: on dav-c220 CO2 is GM "
                f"(Fixpipe writes it directly) [HI-0004]")
        self.position = position
        self.depth = depth
        self.pipes = _PIPES[position]      # (producer, consumer)
        self.slots: list[_Slot] = []
        self._queue: deque[LocalTensor] = deque()
        self._next = 0
        self.core: AICore | None = None

    def alloc_tensor(self, dtype: DTypeLike) -> LocalTensor:
        """AllocTensor: take the next free slot; waits for the consumer to have freed it."""
        core = self.core
        if core is None:
            raise IllegalInstruction("alloc_tensor on a queue that pipe.init_buffer never set up")
        for _ in range(len(self.slots)):
            slot = self.slots[self._next]
            self._next = (self._next + 1) % len(self.slots)
            if not slot.in_use:
                break
        else:
            raise ResourceLimit(
                f"alloc_tensor on a {self.position.value} queue whose {len(self.slots)} buffers "
                f"are all in use: free_tensor one first (on the chip this core would hang)")
        slot.in_use = True
        self._wait_release(slot)
        if not isinstance(dtype, np.dtype):
            dtype = np.dtype(dtype)
        if core.mode.debug:
            core.fill_fresh(slot.offset, slot.nbytes, dtype, self.position.space)
        if core.observers:
            core.buffer_event(SyncKind.ALLOC, "alloc_tensor", self._buffer(slot))
        return LocalTensor(core, slot.offset, dtype, slot.nbytes // dtype.itemsize,
                           self.position, slot)

    def enque(self, tensor: LocalTensor) -> None:
        if len(self._queue) >= self.depth:
            raise ResourceLimit(
                f"enque on a {self.position.value} queue of depth {self.depth} that already "
                f"holds {len(self._queue)} tensor(s): deque first")
        slot = self._check_own(tensor, "enque")
        producer, consumer = self.pipes
        if producer is not consumer:
            self._core.set_flag(producer, consumer, slot.event_id, "enque")
        self._queue.append(tensor)

    def deque(self) -> LocalTensor:
        if not self._queue:
            raise ResourceLimit(
                f"deque on an empty {self.position.value} queue: nothing was enqueued "
                f"(on the chip this core would wait forever)")
        tensor = self._queue.popleft()
        producer, consumer = self.pipes
        if producer is not consumer:
            assert tensor.slot is not None        # enque checked it is one of this queue's
            self._core.wait_flag(producer, consumer, tensor.slot.event_id, "deque")
        return tensor

    def free_tensor(self, tensor: LocalTensor) -> None:
        slot = self._check_own(tensor, "free_tensor")
        if not slot.in_use:
            raise ResourceLimit(f"free_tensor of a {self.position.value} buffer that is not "
                                f"allocated")
        slot.in_use = False
        producer, consumer = self.pipes
        if producer is not consumer:
            slot.release_pending = True
            self._core.set_flag(consumer, producer, slot.event_id, "free_tensor")
        if self._core.observers:
            self._core.buffer_event(SyncKind.FREE, "free_tensor", self._buffer(slot))

    def _buffer(self, slot: _Slot) -> Access:
        return Access(self.position.space, slot.offset, 1, slot.nbytes, self.position.value)

    def _wait_release(self, slot: _Slot) -> None:
        if slot.release_pending:
            slot.release_pending = False
            producer, consumer = self.pipes
            self._core.wait_flag(consumer, producer, slot.event_id, "alloc_tensor")

    def destroy(self) -> None:
        """What TPipe's destructor does: wait for every buffer's last release."""
        for slot in self.slots:
            self._wait_release(slot)

    @property
    def _core(self) -> AICore:
        """The core init_buffer gave this queue (it has slots, so it was set up)."""
        assert self.core is not None
        return self.core

    def _check_own(self, tensor: LocalTensor, what: str) -> _Slot:
        if tensor.slot is None or tensor.slot.owner is not self:
            raise IllegalInstruction(f"{what}: the tensor does not belong to this "
                                     f"{self.position.value} queue")
        return tensor.slot


class TBuf:
    """Scratch memory with no synchronisation: InitBuffer(buf, len) then get()."""

    def __init__(self, position: TPosition = TPosition.VECCALC) -> None:
        self.position = position
        self.core: AICore | None = None
        self.offset = 0
        self.nbytes = 0

    def get(self, dtype: DTypeLike, count: int | None = None) -> LocalTensor:
        if self.core is None:
            raise IllegalInstruction("TBuf.get on a buffer that pipe.init_buffer never set up")
        dtype = np.dtype(dtype)
        n = self.nbytes // dtype.itemsize if count is None else count
        if n * dtype.itemsize > self.nbytes:
            raise _overflow(self.position.space)(
                f"TBuf.get of {n} x {dtype} exceeds its {self.nbytes} bytes")
        return LocalTensor(self.core, self.offset, dtype, n, self.position)


class TPipe:
    """Hands out each memory of the core (UB on a vector core; L1, L0A, L0B, L0C, BiasTable and
    Fixpipe buffer on a Cube core) from address 0 upward; the limits are the chip's."""

    def __init__(self) -> None:
        self.core = current_core()
        self.core.pipes.append(self)
        self.queues: list[TQue] = []
        self.cursors: dict[Space, int] = {}
        self.buffers = 0
        self.queue_buffers: dict[TPosition, int] = {}
        self.event_ids: dict[tuple[Pipe, Pipe], int] = {}

    @property
    def cursor(self) -> int:
        """The next free UB byte (a vector kernel's one memory)."""
        return self.cursors.get(Space.UB, 0)

    def init_buffer(self, target: TQue | TBuf, num: int, length: int | None = None) -> None:
        """InitBuffer(que, num, len) or InitBuffer(buf, len): `len` is rounded up to 32 bytes
        (in L0A/L0B to a 512-byte fractal, in L0C to a 1 KB one, so each buffer starts where
        its instructions need)."""
        if isinstance(target, TBuf):
            num, length = 1, num if length is None else length
        core, chip = self.core, self.core.chip
        if num < 1 or length is None or length < 1:
            raise IllegalInstruction(f"init_buffer needs num >= 1 and len >= 1 bytes, got {num}, "
                                     f"{length}")
        space = target.position.space
        if space is Space.GM:
            raise IllegalInstruction(
                f"init_buffer at {target.position.value}: on {chip.arch} that position is GM "
                f"(the Fixpipe writes it directly); there is no on-chip buffer to allocate")
        capacity = len(core.memory(space, f"init_buffer at {target.position.value}"))
        align = getattr(chip, _BUFFER_ALIGN[space])
        slot_bytes = round_up(length, align)
        cursor = self.cursors.get(space, 0)
        required = cursor + num * slot_bytes
        if required > capacity:
            raise _overflow(space)(
                f"{space.value.lower() if space is Space.UB else space.value} overflow: requires "
                f"{required} bytes, {capacity} available (init_buffer of {num} x {slot_bytes} "
                f"bytes at {space.value} {cursor:#x})")
        if self.buffers + num > chip.max_buffers:
            raise ResourceLimit(f"a kernel may hold at most {chip.max_buffers} buffers; "
                                f"this init_buffer would make {self.buffers + num}")
        if isinstance(target, TQue):
            self._event_ids(target, num)
            first = self.event_ids[target.pipes] - num
            target.slots = [_Slot(cursor + i * slot_bytes, slot_bytes, first + i, target)
                            for i in range(num)]
            self.queues.append(target)
        else:
            target.offset, target.nbytes = cursor, slot_bytes
            if core.mode.debug:   # NaN in any float view
                core.fill_fresh(cursor, slot_bytes, np.dtype(np.float32), space)
        target.core = core
        self.buffers += num
        self.cursors[space] = required
        core.peaks[space] = max(core.peaks.get(space, 0), required)

    def _event_ids(self, que: TQue, num: int) -> None:
        """A queue's buffers take event ids of its producer->consumer pair: 8 per position,
        and the positions sharing a pair (A1, B1, C1: MTE2_MTE1) share its 8 ids [TQUE]."""
        chip = self.core.chip
        used = self.queue_buffers.get(que.position, 0) + num
        if used > chip.event_ids_per_position:
            raise ResourceLimit(
                f"{used} queue buffers at {que.position.value}: the chip has "
                f"{chip.event_ids_per_position} event ids per position")
        producer, consumer = pair = que.pipes
        taken = self.event_ids.get(pair, 0) + num
        if taken > chip.event_ids_per_position and producer is not consumer:
            raise ResourceLimit(
                f"{taken} queue buffers synchronise {producer.name}_{consumer.name}: the "
                f"positions it joins share the chip's {chip.event_ids_per_position} event ids")
        self.queue_buffers[que.position] = used
        self.event_ids[pair] = taken

    def alloc_event_id(self, event: HardEvent) -> int:
        """AllocEventID<event>(): an event id of that pipe pair that no queue of this pipe uses,
        for a kernel's own set_flag/wait_flag. A hard-coded id may be one a queue's slot
        already uses for enque/deque, and a wait then takes the queue's flag, not the kernel's."""
        pair = event.value
        taken = self.event_ids.get(pair, 0)
        limit = self.core.chip.event_ids_per_position
        if taken >= limit:
            raise ResourceLimit(f"alloc_event_id({event.name}): the {limit} event ids of "
                                f"{pair[0].name}->{pair[1].name} are all taken by this pipe's "
                                f"queues and earlier allocations")
        self.event_ids[pair] = taken + 1
        return taken

    def destroy(self) -> None:
        for q in self.queues:
            q.destroy()


def local_tensor(position: TPosition, dtype: DTypeLike, byte_addr: int, count: int) -> LocalTensor:
    """LocalTensor<T>(TPosition, addr, len): a tensor at a fixed address of the position's
    memory, with no queue (the basic-API style, ordered by set_flag/wait_flag) [BPB]. Its
    start must be aligned as the memory requires and it must fit in it (an instruction
    checks its own stricter rule: an Mmad destination on 1 KB)."""
    core = current_core()
    dtype = np.dtype(dtype)
    space = position.space
    what = f"local_tensor at {position.value}"
    core.check_aligned(space, byte_addr, what)
    core.local_view(space, byte_addr, count * dtype.itemsize, what)
    return LocalTensor(core, byte_addr, dtype, count, position)


def _overflow(space: Space):
    return UbOverflow if space is Space.UB else BufferOverflow
