"""One AI Core: a vector core (AIV) with its Unified Buffer, or a Cube core (AIC) with L1, L0A,
L0B, L0C, the BiasTable and the Fixpipe buffer, as real bytes; its timeline, its mode, and the
observers it reports each instruction and sync edge to (observe.py).

Instructions find their core through their LocalTensor operands, or, for those with none
(flags, barriers), through the core the launcher made current on this host thread.
"""

from __future__ import annotations

import enum
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from .chips import ChipSpec
from .costs import CostTable, cost_table
from .cube.params import CubeRegisters
from .cube.unitflag import UnitFlags
from .errors import AicoreOutOfBound, IllegalInstruction, KernelTimeout
from .l2 import L2Stats, L2View, l2_cache
from .observe import Access, Instruction, Observer, Space, Sync, SyncKind
from .timeline import Pipe, Timeline
from .ubbanks import Operand, conflict_cycles, layout

if TYPE_CHECKING:
    from .crosscore import CrossCoreWait, FlagBoard
    from .gm import GlobalTensor
    from .schedule import Runner

_current = threading.local()

# Debug mode fills fresh buffers so that a read of one stands out: all-ones bytes are a NaN in
# float16, bfloat16 and float32 alike; integer buffers get a poison pattern.
NAN_BYTE = 0xFF
POISON_BYTE = 0xA5


class CoreKind(enum.Enum):
    """The two kinds of core of a split AI Core (A2: 1 AIC + 2 AIV) [S2201]."""

    AIV = "AIV"
    AIC = "AIC"

    __hash__ = object.__hash__

    @property
    def pipes(self) -> frozenset:
        return _PIPES[self]

    @property
    def spaces(self) -> tuple[Space, ...]:
        return _SPACES[self]


_PIPES = {CoreKind.AIV: frozenset({Pipe.S, Pipe.V, Pipe.MTE2, Pipe.MTE3}),
          CoreKind.AIC: frozenset({Pipe.S, Pipe.MTE1, Pipe.MTE2, Pipe.MTE3, Pipe.M, Pipe.FIX})}
_SPACES = {CoreKind.AIV: (Space.UB,),
           CoreKind.AIC: (Space.L1, Space.L0A, Space.L0B, Space.L0C, Space.BT, Space.FB)}
# The ChipSpec fields that size and align each on-core memory.
MEMORY_FIELDS = {Space.UB: ("ub_bytes", "block_bytes"), Space.L1: ("l1_bytes", "l1_align"),
                 Space.L0A: ("l0a_bytes", "l0ab_align"), Space.L0B: ("l0b_bytes", "l0ab_align"),
                 Space.L0C: ("l0c_bytes", "l0c_align"),
                 Space.BT: ("bias_table_bytes", "bias_table_align"),
                 Space.FB: ("fixpipe_buffer_bytes", "fixpipe_buffer_align")}
AIC_BASE = 1 << 16      # AIC n has core id AIC_BASE + n: one id space for every core
# A GM move in a trace: the replay's runner times it in two steps around the core's turn.
# Its step is (GM_MOVE, pipe, name, argument, offset, ...) with whether it writes at MOVE_WRITE
# (gm_move lays it out).
GM_MOVE = "gm_move"
MOVE_ARG, MOVE_WRITE = 3, 11
# The most steps a launch's traces may hold in all ([U]: a bound on the memory a trace takes,
# about 150 bytes a step, not a measured optimum); a longer launch runs its Python every time.
TRACE_STEPS = 2_000_000


@dataclass(frozen=True)
class ValueRead:
    """A value the kernel's Python read back from an on-core memory while traced (a guard of
    the trace, replay.py): after `at` steps of the core's trace, the bytes `raw` at byte
    `offset` of `space`."""

    at: int
    space: Space
    offset: int
    raw: bytes


def memory_bytes(chip: ChipSpec, space: Space) -> int:
    return getattr(chip, MEMORY_FIELDS[space][0])


def memory_align(chip: ChipSpec, space: Space) -> int:
    return getattr(chip, MEMORY_FIELDS[space][1])


class CoreId(int):
    """A core's id: AIV n is n, AIC n is AIC_BASE + n, so the ids of a launch never clash and
    sort vector cores first. It prints as the runtime names the core: "3" for AIV 3, "3 (AIC)"
    for AIC 3."""

    kind: CoreKind
    index: int

    def __new__(cls, kind: CoreKind, index: int) -> CoreId:
        obj = int.__new__(cls, index if kind is CoreKind.AIV else AIC_BASE + index)
        obj.kind, obj.index = kind, index
        return obj

    def __str__(self) -> str:
        return str(self.index) if self.kind is CoreKind.AIV else f"{self.index} (AIC)"

    __repr__ = __str__

    def __format__(self, spec: str) -> str:
        return format(str(self), spec)

    def __reduce__(self):
        return CoreId, (self.kind, self.index)


def as_core_id(core: int) -> CoreId:
    """A plain int id (as the vector-only code and tests give) as a CoreId."""
    if isinstance(core, CoreId):
        return core
    return CoreId(CoreKind.AIC, core - AIC_BASE) if core >= AIC_BASE else CoreId(CoreKind.AIV, core)


@dataclass(frozen=True)
class Mode:
    debug: bool = False        # NaN/poison fill, truncated-copy errors, flag checks, sanitizer
    timing_only: bool = False  # skip the data math: only the timeline runs
    record: bool = False       # keep every slice and flag edge (for traces and plots)


class AICore:
    def __init__(self, chip: ChipSpec, core_id: int, mode: Mode = Mode(), active_cores: int = 1,
                 ub: np.ndarray | None = None, observers: tuple[Observer, ...] = (),
                 memories: dict[Space, np.ndarray] | None = None, l2: L2View | None = None) -> None:
        """`core_id`: a CoreId (a plain int is an AIV). `memories`: the core's on-core
        memories, kept by the chip across launches (fresh zeroed ones when None; `ub` gives a
        vector core's UB alone); `active_cores`: the cores of the launch sharing the chip's GM
        and L2 bandwidth; `observers` hear of every instruction and sync edge; `l2`: the
        core's view of the chip's L2 in this phase (an empty L2 of its own when None)."""
        self.chip = chip
        self.core_id = core_id = as_core_id(core_id)
        self.kind = core_id.kind
        self.mode = mode
        self.costs: CostTable = cost_table(chip.arch)
        self.gm_rates = self.costs.gm_rates(active_cores)   # GM and L2 bandwidth are shared
        self.l2 = l2 or l2_cache(chip).phase(active_cores).view(core_id)
        self.l2_stats = L2Stats()                  # its views' stats, phase by phase
        self.banks = layout(chip)                  # the UB's banks (ubbanks.py), None: unknown
        self.bank_conflicts = [0, 0]               # cycles lost to bank-group / bank conflicts
        self.mte_latency = self.costs.mte_latency_cycles
        self.burst_grid = self.costs.burst_align_bytes
        given = memories or ({Space.UB: ub} if ub is not None else {})
        self.memories = {sp: given[sp] if sp in given
                         else np.zeros(memory_bytes(chip, sp), np.uint8)
                         for sp in self.kind.spaces}
        self.ub = self.memories.get(Space.UB)
        self.block_idx = 0
        self.block_num = 1
        self.sub_block_idx = 0       # which AIV of its group (mix kernels), else 0
        self.task_ratio = 1          # GetTaskRatio: AIVs per AIC on an AIV of a mix kernel
        self.timeline = Timeline(self.costs.scalar_issue_cycles, self.costs.flag_latency_cycles,
                                 self.costs.queue_depth)
        self.peaks: dict[Space, int] = {}      # the most of each memory the kernel's TPipes took
        self.pipes: list = []
        self.observers = tuple(observers)
        self.cross_core: FlagBoard | None = None   # the launch's flag board (mix kernels)
        self.cross_sets = 0          # cross-core sets this core issued (numbers them)
        self.pending_wait: CrossCoreWait | None = None   # made but not yet yielded
        self.scheduler: Runner | None = None   # the runner interleaving the launch's cores
        self.run_rank = 0            # its place in the run order (breaks ties between moves)
        self.greenlet: Any = None    # what runs its blocks during a launch (schedule.py)
        # the Cube's configuration registers (set_hf32_mode, set_fmatrix, ...) and L0C unit
        # flags, per launch
        self.cube_state = CubeRegisters() if self.kind is CoreKind.AIC else None
        self.unit_flags = UnitFlags() if self.kind is CoreKind.AIC else None
        self._unit_other: tuple | None = None   # what the latest unit-flag wait waited for
        self.last_move_cycles = 0.0  # the latest GM move's cycles (a Fixpipe's unit flags)
        # Tracing (replay.py): the steps this core records for a replay, the launch's GM
        # arguments by their root address, why the launch cannot be replayed (None: it can);
        # replaying: each argument's (segment, root address).
        self.trace: list | None = None
        self.trace_limit = TRACE_STEPS // max(active_cores, 1)
        self.gm_args: dict[int, int] = {}
        self.untraceable: str | None = None
        self.gm_bound: list = []
        self.reads: list[ValueRead] = []   # values read back while traced (its guards)
        self._copied_in = 0          # trace steps seen to be copies in and timing only
        self._contained: set[int] = set()  # trace steps of self-contained effects (execute)

    # ---- block lifecycle (driven by the launcher) ----
    @property
    def ub_peak(self) -> int:
        return self.peaks.get(Space.UB, 0)

    @property
    def label(self) -> str:
        """How errors name the core's kind: "vector core" or "AI Core" (a Cube core's
        faults are the runtime's AICORE errors, a vector core's VECTOR_CORE ones) [RTERR]."""
        return "vector core" if self.kind is CoreKind.AIV else "AI Core"

    def begin_block(self, block_idx: int, block_num: int) -> None:
        self.block_idx = block_idx
        self.block_num = block_num
        self.pipes = []      # TPipes of this block, destroyed at its end
        _current.core = self
        for o in self.observers:
            o.block_begin(self.core_id, block_idx)

    def pause(self) -> None:
        """A block waits (at a SyncAll or a cross-core flag): it is no longer this thread's
        running core."""
        _current.core = None

    def resume(self) -> None:
        _current.core = self

    def end_block(self, check: bool = True) -> None:
        if check and self.pending_wait is not None:
            flag, self.pending_wait = self.pending_wait.flag_id, None
            _current.core = None
            raise IllegalInstruction(
                f"cross_core_wait_flag({flag}) on core {self.core_id} was never yielded: a "
                f"kernel waits for another core by `yield asc.cross_core_wait_flag({flag})`")
        if check:
            for pipe in self.pipes:
                pipe.destroy()
            for o in self.observers:
                o.block_end(self.core_id, self.block_idx)
        _current.core = None
        unpaired = self.timeline.unpaired_flags() if check else []
        if check and self.unit_flags is not None:
            unpaired += [f"unit flags of {b}" for b in self.unit_flags.unfinished()]
        if unpaired and self.mode.debug:
            raise KernelTimeout(
                f"{self.label} execution timed out: core {self.core_id} block {self.block_idx} "
                f"ended with flags set and never waited: {', '.join(unpaired)}")

    # ---- UB access ----
    def ub_view(self, offset: int, nbytes: int, what: str) -> np.ndarray:
        if offset < 0 or offset + nbytes > self.chip.ub_bytes:
            raise AicoreOutOfBound(
                f"aicore memory out of bound: VEC instruction error: the ub address out of bounds: "
                f"core {self.core_id} {what} UB [{offset:#x}, {offset + nbytes:#x}), "
                f"UB holds {self.chip.ub_bytes} bytes")
        assert self.ub is not None                  # a vector core's (UB operands check it)
        return self.ub[offset:offset + nbytes]

    def check_ub_aligned(self, offset: int, what: str) -> None:
        if offset % self.chip.block_bytes:
            raise IllegalInstruction(
                f"Illegal instruction, which is usually caused by unaligned UUB addresses: "
                f"core {self.core_id} {what} UB address {offset:#x} is not "
                f"{self.chip.block_bytes}-byte aligned")

    def fill_fresh(self, offset: int, nbytes: int, dtype: np.dtype,
                   space: Space = Space.UB) -> None:
        """Debug mode: make a read of a never-written buffer visible (NaN or poison)."""
        is_float = dtype.kind == "f" or dtype.name == "bfloat16"
        self.memories[space][offset:offset + nbytes] = NAN_BYTE if is_float else POISON_BYTE

    # ---- Cube memories (L1, L0A, L0B, L0C, BiasTable, Fixpipe buffer) ----
    def memory(self, space: Space, what: str) -> np.ndarray:
        mem = self.memories.get(space)
        if mem is None:
            have = ", ".join(sp.value for sp in self.kind.spaces)
            raise IllegalInstruction(
                f"{what}: core {self.core_id} is an {self.kind.value} core, which has no "
                f"{space.value} (its memories: {have})")
        return mem

    def local_view(self, space: Space, offset: int, nbytes: int, what: str) -> np.ndarray:
        """The bytes [offset, offset + nbytes) of an on-core memory, checked against its size."""
        if space is Space.UB:
            return self.ub_view(offset, nbytes, what)
        mem = self.memory(space, what)
        if offset < 0 or offset + nbytes > len(mem):
            raise AicoreOutOfBound(
                f"aicore memory out of bound: core {self.core_id} {what} {space.value} "
                f"[{offset:#x}, {offset + nbytes:#x}), {space.value} holds {len(mem)} bytes")
        return mem[offset:offset + nbytes]

    def check_aligned(self, space: Space, offset: int, what: str, align: int | None = None) -> None:
        """A start address in an on-core memory on its alignment (the space's, or `align`)."""
        if space is Space.UB:
            return self.check_ub_aligned(offset, what)
        align = align or memory_align(self.chip, space)
        if offset % align:
            raise IllegalInstruction(
                f"Illegal instruction, which is usually caused by unaligned addresses: core "
                f"{self.core_id} {what} {space.value} address {offset:#x} is not "
                f"{align}-byte aligned")

    def has_pipe(self, pipe: Pipe, what: str) -> None:
        if pipe not in self.kind.pipes:
            have = ", ".join(p.name for p in Pipe if p in self.kind.pipes)
            raise IllegalInstruction(
                f"{what}: core {self.core_id} is an {self.kind.value} core, which has no "
                f"PIPE_{pipe.name} (its pipes: {have})")

    # ---- timeline and observers ----
    # Each timed step is recorded (when tracing) as (method, *args) and applied by that
    # method, so a replay (replay.py) applies exactly what the traced run applied.
    def issue(self, pipe: Pipe, name: str, cycles: float) -> float:
        """Time one instruction; returns when it completes. (An instruction then reports its
        operands with `observe` when the core has observers.)"""
        if self.trace is not None:
            self.trace.append((AICore._issue, pipe, name, cycles))
        return self.timeline.issue(pipe, name, cycles)

    def _issue(self, pipe: Pipe, name: str, cycles: float) -> float:
        return self.timeline.issue(pipe, name, cycles)

    def vector_issue(self, name: str, cycles: float, reads: tuple[Operand, ...],
                     writes: tuple[Operand, ...], repeats: int) -> float:
        """Time one vector instruction of `cycles` plus what its operands' UB bank conflicts
        add (ubbanks.py)."""
        group = bank = 0
        if self.banks is not None:
            group, bank = conflict_cycles(self.banks, reads, writes, repeats)
        if self.trace is not None:
            self.trace.append((AICore._vector_issue, name, cycles, group, bank))
        return self._vector_issue(name, cycles, group, bank)

    def _vector_issue(self, name: str, cycles: float, group: int, bank: int) -> float:
        self.bank_conflicts[0] += group
        self.bank_conflicts[1] += bank
        return self.timeline.issue(Pipe.V, name, cycles + group + bank)

    def gm_move(self, pipe: Pipe, name: str, gm: GlobalTensor, offset: int, count: int, width: int,
                pitch: int, *, write: bool, aligned: bool, bursts: int | None = None,
                latency: float | None = None, outer: int = 1, outer_pitch: int = 0) -> float:
        """Time one move between GM and the core (MTE2 in, MTE3 out, FIX out of L0C): `outer`
        x `count` rows of `width` bytes of `gm` from byte `offset`, rows `pitch` apart (groups
        `outer_pitch` apart). The launch's other cores first make their earlier moves (the
        runner interleaves them in modeled time); then L2 says which bytes it serves and which
        HBM does (l2.py), and after the pipe's latency (the MTE latency by default) the move
        takes the core's GM port, longer by what meeting other cores' reads of the same lines
        costs, and its share of HBM. Returns its cycles (the longer of the two). Call it before
        the move touches GM's bytes, so they are what the earlier moves left."""
        latency = self.mte_latency if latency is None else latency
        bursts = outer * count if bursts is None else bursts
        if self.trace is not None:
            arg = self._gm_arg(gm, offset)
            self.trace.append((GM_MOVE, pipe, name, *arg, gm.l2_mode, count, width, pitch,
                               outer, outer_pitch, write, aligned, bursts, latency))
            if len(self.trace) > self.trace_limit:
                self.untraceable = (f"a trace longer than {self.trace_limit} steps on a core "
                                    f"(kept in memory, it would cost more than it saves)")
                self.trace = None
        start = self.timeline.move_start(pipe)
        if self.scheduler is not None:
            self.scheduler.turn(self, start + latency)
        return self.transfer(pipe, name, gm, offset, count, width, pitch, outer, outer_pitch,
                             write, aligned, bursts, latency, start)

    def transfer(self, pipe: Pipe, name: str, gm: Any, offset: int, count: int, width: int,
                 pitch: int, outer: int, outer_pitch: int, write: bool, aligned: bool,
                 bursts: int, latency: float, start: float) -> float:
        """The second half of a GM move whose pipe started it at `start`: L2, port and HBM.
        `gm` is the GlobalTensor, or on a replay the window (segment, addr, l2_mode) of the
        argument it recorded."""
        hit, miss, writeback, met = self.l2.access(gm, offset, count, width, pitch, outer,
                                                   outer_pitch, write, start + latency)
        port, hbm = self.costs.gm_cycles(hit, miss, writeback, bursts, aligned, self.gm_rates)
        stall = port * self.l2.phase.cache.same_line_extra * met
        end = self.timeline.transfer(pipe, name, start, latency, port + stall,
                                     outer * count * width, hbm)
        self.l2.timed(end, stall)
        self.last_move_cycles = cycles = max(port + stall, hbm)
        return cycles

    def _gm_arg(self, gm: GlobalTensor, offset: int) -> tuple[int, int]:
        """(argument index, byte offset from its start) of a GM access, for the trace; an
        access to a tensor that is not an argument of the launch makes it untraceable."""
        arg = self.gm_args.get(gm.root[0])
        if arg is None:
            self.untraceable = f"a GM tensor '{gm.name}' that is not an argument of the launch"
            return -1, 0
        return arg, gm.addr - gm.root[0] + offset

    def execute(self, effect: Callable[[], object], self_contained: bool = False) -> None:
        """Apply an instruction's effect on on-core memories (nothing in timing-only mode):
        `effect` holds the views it works on, so a replay applies it again as it is.
        `self_contained`: it reads nothing of the core's memories but what its own
        instruction wrote (a fill with a scalar, a copy's padding), so it may come before a
        guarded read (`read_back`)."""
        if self.mode.timing_only:
            return
        effect()
        if self.trace is not None:
            if self_contained:
                self._contained.add(len(self.trace))
            self.trace.append((_apply, effect))

    def execute_gm(self, effect: Callable[[np.ndarray], object], gm: GlobalTensor,
                   offset: int, view: np.ndarray) -> None:
        """Apply an effect that also touches GM: `view` is the uint8 bytes of `gm` from byte
        `offset` that it works on (checked by the caller); a replay passes the same bytes of
        its own launch's argument."""
        if self.mode.timing_only:
            return
        effect(view)
        if self.trace is not None:
            self.trace.append((_apply_gm, effect, *self._gm_arg(gm, offset), len(view)))

    def read_back(self, what: str, space: Space, offset: int, raw: bytes) -> None:
        """The kernel's Python reads the bytes `raw` at `offset` of an on-core memory
        (GetValue): what it does next may depend on them. Traced, the read becomes a guard of
        the trace when every effect before it on this core copied GM bytes in or was
        self-contained (a replay can then apply those effects first and read the value again,
        replay.py); after any other effect the launch is not replayed."""
        if self.trace is None:
            return
        if not self._only_copies_in():
            self.untraceable = (f"{what} reads a value back into the kernel after an effect "
                                f"other than a copy from GM")
            return
        self.reads.append(ValueRead(len(self.trace), space, offset, raw))

    def _only_copies_in(self) -> bool:
        """Whether the core's effects so far only copied GM bytes into its memories (each
        the effect of a GM read just before it) or were self-contained, its other steps
        timing alone."""
        trace, i = self.trace, self._copied_in
        assert trace is not None
        while i < len(trace):
            op = trace[i][0]
            if (op is _apply and i not in self._contained) or (op is _apply_gm and not (
                    i and trace[i - 1][0] == GM_MOVE and not trace[i - 1][MOVE_WRITE])):
                return False
            i += 1
        self._copied_in = i
        return True

    def count_flops(self, flops: int) -> None:
        """The Cube's multiply-adds of one Mmad, x 2, for the profile."""
        if self.trace is not None:
            self.trace.append((AICore.count_flops, flops))
        self.timeline.stats[Pipe.M].flops += flops

    def unit_wait(self, pipe: Pipe, buffer: int, mode: int) -> None:
        """Before an instruction with unit flags is timed (cube/unitflag.py)."""
        if self.trace is not None:
            self.trace.append((AICore.unit_wait, pipe, buffer, mode))
        assert self.unit_flags is not None
        self._unit_other = self.unit_flags.wait(self, pipe, buffer, mode)

    def unit_done(self, pipe: Pipe, buffer: int, mode: int, units: int,
                  cycles: float | None) -> None:
        """After it is timed; `cycles` None: the latest GM move's (a Fixpipe into GM)."""
        if self.trace is not None:
            self.trace.append((AICore.unit_done, pipe, buffer, mode, units, cycles))
        assert self.unit_flags is not None
        self.unit_flags.done(self, pipe, buffer, mode, units, self._unit_other,
                             self.last_move_cycles if cycles is None else cycles)

    def observe(self, pipe: Pipe, name: str, reads: tuple[Access, ...],
                writes: tuple[Access, ...], nbytes: int = 0) -> None:
        """Tell the observers what the instruction just issued read and wrote."""
        start, end = self.timeline.last
        ins = Instruction(self.core_id, self.block_idx, pipe, name, self.timeline.issued,
                          start, end, nbytes, reads, writes)
        for o in self.observers:
            o.instruction(ins)

    def _sync(self, kind: SyncKind, what: str, **fields) -> None:
        ev = Sync(self.core_id, self.block_idx, kind, what, **fields)
        for o in self.observers:
            o.sync(ev)

    def set_flag(self, src: Pipe, dst: Pipe, event_id: int, what: str = "set_flag") -> None:
        if self.trace is not None:
            self.trace.append((AICore.set_flag, src, dst, event_id, what))
        fires = self.timeline.set_flag(src, dst, event_id)
        if self.observers:
            self._sync(SyncKind.SET, what, src=src, dst=dst, event_id=event_id,
                       issued=self.timeline.issued, time=fires)

    def wait_flag(self, src: Pipe, dst: Pipe, event_id: int, what: str = "wait_flag") -> None:
        if self.trace is not None:
            self.trace.append((AICore.wait_flag, src, dst, event_id, what))
        fired, resumed = self.timeline.wait_flag(src, dst, event_id, self.core_id, self.label)
        if self.observers:
            self._sync(SyncKind.WAIT, what, src=src, dst=dst, event_id=event_id,
                       issued=self.timeline.issued, time=resumed, fired=fired)

    def barrier(self, pipe: Pipe | None) -> None:
        if self.trace is not None:
            self.trace.append((AICore.barrier, pipe))
        self.timeline.barrier(pipe)
        if self.observers:
            self._sync(SyncKind.BARRIER, "pipe_barrier", src=pipe, issued=self.timeline.issued)

    def meet(self, when: float) -> None:
        """Every core met at a SyncAll: nothing here starts before `when`."""
        self.timeline.align(when)
        if self.observers:
            self._sync(SyncKind.SYNC_ALL, "sync_all", time=when)

    def cross_core_set(self, pipe: Pipe, flag_id: int, mode: int, what: str) -> None:
        """CrossCoreSetFlag: issued to `pipe`, it fires when the pipe's earlier work is done,
        and the launch's flag board delivers it (crosscore.py)."""
        if self.trace is not None:
            self.trace.append((AICore.cross_core_set, pipe, flag_id, mode, what))
        fires = self.timeline.cross_set(pipe)
        if self.observers:
            self._sync(SyncKind.CROSS_SET, "cross_core_set_flag", src=pipe, event_id=flag_id,
                       issued=self.timeline.issued, time=fires, peer=mode)
        self.cross_sets += 1
        assert self.cross_core is not None          # cross_core_set_flag checked the board
        self.cross_core.set(self.core_id, mode, flag_id, fires, self.cross_sets, what)

    def cross_core_wait(self, flag_id: int, fired: float, peers: tuple) -> None:
        """CrossCoreWaitFlag passed: the flag fired at `fired` (set by the cores `peers`); on
        A2 the wait holds every pipe until then plus the flag latency [XCORE]."""
        resumed = self.timeline.cross_wait(fired)
        if self.observers:
            self._sync(SyncKind.CROSS_WAIT, "cross_core_wait_flag", event_id=flag_id,
                       issued=self.timeline.issued, time=resumed, fired=fired, peer=peers)

    def unit_flag_sync(self, kind: SyncKind, src: Pipe, dst: Pipe, buffer: int, fired: float,
                       time: float) -> None:
        """The Cube's L0C unit flags as the flag pair they amount to (call only when
        observed): the hardware hands the buffer from `src` to `dst`."""
        self._sync(kind, "unit_flag", src=src, dst=dst, event_id=buffer, time=time, fired=fired)

    def buffer_event(self, kind: SyncKind, what: str, buffer: Access) -> None:
        """alloc_tensor / free_tensor of a queue buffer (call only when observed)."""
        self._sync(kind, what, buffer=buffer)


def _apply(core: AICore, effect: Callable[[], object]) -> None:
    effect()


def _apply_gm(core: AICore, effect: Callable[[np.ndarray], object], arg: int, offset: int,
              nbytes: int) -> None:
    seg, addr = core.gm_bound[arg]
    start = addr - seg.addr + offset
    effect(seg.data[start:start + nbytes])


# The steps of a trace that act on memory (the rest time the launch): a timing memo applies
# these alone (memo.py).
EFFECT_STEPS = (_apply, _apply_gm)


def current_core() -> AICore:
    core = getattr(_current, "core", None)
    if core is None:
        raise RuntimeError("no AI Core is running a kernel on this thread: "
                           "flags and barriers can only be issued inside a kernel launch")
    return core


def get_block_idx() -> int:
    return current_core().block_idx


def get_block_num() -> int:
    return current_core().block_num


def get_sub_block_idx() -> int:
    """GetSubBlockIdx: 0 or 1 on the AIVs of a mix kernel's group, 0 elsewhere [SYS]."""
    return current_core().sub_block_idx


def get_task_ratio() -> int:
    """GetTaskRatio: AIVs per AIC on an AIV of a mix kernel (2 for 1:2), 1 elsewhere [SYS]."""
    return current_core().task_ratio


def is_aic() -> bool:
    """ASCEND_IS_AIC: this block runs on a Cube core."""
    return current_core().kind is CoreKind.AIC


def is_aiv() -> bool:
    """ASCEND_IS_AIV: this block runs on a vector core."""
    return current_core().kind is CoreKind.AIV


class SyncAll:
    """What a kernel yields to meet every other core (Ascend C's SyncAll): `yield sync_all()`."""


def sync_all() -> SyncAll:
    return SyncAll()
