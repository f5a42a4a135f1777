"""How the blocks of a launch map to cores, and how the cores run: each to the end, or
interleaved where they wait for each other (SyncAll, cross-core flags).

Kernel types [KTYPE][SYS]: a vector kernel (KERNEL_TYPE_AIV_ONLY) runs block i on AIV i mod the
AIV count; a cube kernel (AIC_ONLY) on AIC i mod the AIC count; a mix kernel (MIX_AIC_1_2) runs
block b as a group of AIC b and AIVs 2b and 2b + 1, all resident at once (block_dim at most the
AIC count). In a mix kernel GetBlockIdx is b on the AIC and 2b + GetSubBlockIdx on an AIV,
GetBlockNum is b's range on both [U: the AIV count is GetBlockNum() * GetTaskRatio()].

A block body that is a generator pauses at each `yield asc.sync_all()` and `yield
asc.cross_core_wait_flag(id)`; the runner resumes it when every core reached the barrier (all
clocks moved to the slowest one's) or when the flag was set. Modeled times never depend on the
order the host runs the cores in.
"""

from __future__ import annotations

import enum
import heapq
from collections.abc import Callable
from functools import partial

import greenlet
import numpy as np

from .chips import ChipSpec
from .core import AICore, CoreId, CoreKind, SyncAll
from .crosscore import CrossCoreWait, FlagBoard
from .errors import IllegalInstruction, KernelTimeout

# Where a traced core waits for a cross-core flag or meets the others at a SyncAll.
CROSS_WAIT = "cross_core_wait_flag"
SYNC_ALL = "sync_all"


class KernelType(enum.Enum):
    """What a kernel runs on: its block_dim counts AIVs, AICs, or groups of 1 AIC + 2 AIV."""

    VECTOR = "vector"    # KERNEL_TYPE_AIV_ONLY
    CUBE = "cube"        # KERNEL_TYPE_AIC_ONLY
    MIX = "mix"          # KERNEL_TYPE_MIX_AIC_1_2

    __hash__ = object.__hash__


class Slot:
    """One core of a launch: its id, its blocks, and its place in a mix group."""

    __slots__ = ("core_id", "blocks", "group", "sub_block", "ratio")

    def __init__(self, core_id: CoreId, blocks: list[int], group: int = 0, sub_block: int = 0,
                 ratio: int = 1) -> None:
        self.core_id, self.blocks, self.group = core_id, blocks, group
        self.sub_block, self.ratio = sub_block, ratio


def place(kind: KernelType, chip: ChipSpec, block_num: int) -> list[Slot]:
    """The cores a launch occupies, in core-id order."""
    if kind is KernelType.VECTOR:
        n = min(block_num, chip.aiv_cores)
        return [Slot(CoreId(CoreKind.AIV, i), list(range(i, block_num, n))) for i in range(n)]
    if chip.coupled:
        raise IllegalInstruction(
            f"a {kind.value} kernel on {chip.name}: its AI Cores are coupled (cube and vector "
            f"share one scalar unit), which this model does not simulate; run cube kernels on "
            f"a 910B")
    if not chip.cube_modeled:
        raise IllegalInstruction(
            f"a {kind.value} kernel on {chip.name}: its Cube takes other layouts than the A2's "
            f"(NZ in L0A, no GM -> L0 path), which this model does not simulate; run cube "
            f"kernels on a 910B")
    if kind is KernelType.CUBE:
        n = min(block_num, chip.aic_cores)
        return [Slot(CoreId(CoreKind.AIC, i), list(range(i, block_num, n))) for i in range(n)]
    if block_num > chip.aic_cores:
        raise IllegalInstruction(
            f"a mix kernel's block_dim {block_num} exceeds the {chip.aic_cores} AI Cores of "
            f"{chip.name} (each block is 1 AIC + {chip.aiv_per_aic} AIV, all resident at once)")
    ratio = chip.aiv_per_aic
    slots = [Slot(CoreId(CoreKind.AIC, b), [b], b) for b in range(block_num)]
    slots += [Slot(CoreId(CoreKind.AIV, b * ratio + s), [b * ratio + s], b, s, ratio)
              for b in range(block_num) for s in range(ratio)]
    return slots


def launch_cores(kind: KernelType, chip: ChipSpec, slots: list[Slot]) -> int:
    """The core count the launch overhead grows with, in vector cores: the fitted cost per
    vector core is taken per half of an AI Core [U], so a cube or mix launch counts each AIC
    it occupies as the AI Core's `aiv_per_aic` vector cores."""
    if kind is KernelType.VECTOR:
        return len(slots)
    return chip.aiv_per_aic * sum(1 for s in slots if s.core_id.kind is CoreKind.AIC)


class Interleaver:
    """What every way of running a launch's cores shares: cores wait for cross-core flags and
    meet at SyncAlls, and the one whose pending GM move starts first goes next (ties by the
    cores' run order). How a core runs until it hands over is the subclass's: the kernel's
    Python in a greenlet (Runner), or its recorded trace (replay.Replayer)."""

    def __init__(self, cores: list[AICore], board: FlagBoard | None, flag_latency: float,
                 observers: list, end_phase: Callable[[], None]) -> None:
        """`cores` in their run order; `end_phase` is called whenever every core has reached
        a SyncAll or the end, before the cores meet (the chip settles what the phase did to
        L2)."""
        self.cores = cores
        self.board = board
        self.flag_latency = flag_latency
        self.observers = observers
        self.end_phase = end_phase
        for i, c in enumerate(cores):
            c.run_rank = i
        self.phase = 0
        self.pending: list = []       # heap of (ready, rank, core): cores paused at a GM move
        self.fresh: set = set()       # cores whose next move waits for every other core's
        self.blocked: dict = {}       # core id -> (core, flag id) it waits for
        self.barrier: list = []       # cores at a SyncAll
        self.seen = 0                 # the board's deliveries the runner has looked at

    def _switch(self, core: AICore) -> None:
        """Run `core` (and whoever it hands over to) until it pauses or its blocks end."""
        raise NotImplementedError

    def _start(self) -> None:
        """Every core to its first move, a wait, or its end; then all of them to the end."""
        self.fresh = {c.core_id for c in self.cores}
        for c in self.cores:
            self._switch(c)
        self._drive()

    def _finish(self) -> None:
        self.end_phase()
        for o in self.observers:
            o.phase_end(self.phase)

    def _handover(self, core: AICore, ready: float) -> AICore | None:
        """`core` is about to make a GM move whose port time starts at `ready`: None when it
        goes on at once, `core` itself when it pauses for the runner to decide who goes next,
        or the core with the earliest pending move, which goes next instead of it."""
        entry = (ready, core.run_rank, core)
        pending = self.pending
        if (self.fresh and core.core_id in self.fresh) or self._woken():
            self.fresh.discard(core.core_id)
            heapq.heappush(pending, entry)
            return core
        if not pending or entry < pending[0]:          # ranks differ: never compares cores
            return None
        return heapq.heappushpop(pending, entry)[2]

    def _pass(self, core: AICore, flag: int) -> bool:
        assert self.board is not None       # cross_core_wait_flag runs only in a mix kernel
        token = self.board.take(core.core_id, flag)
        if token is None:
            return False
        core.cross_core_wait(flag, *token)
        return True

    def _woken(self) -> bool:
        """A set since the runner last looked may have freed a waiting core."""
        return bool(self.blocked) and self.board is not None \
            and self.board.delivered != self.seen

    def _wake(self) -> bool:
        """Resume every waiting core whose flag has been set; whether there was one."""
        if not self._woken():
            return False
        assert self.board is not None
        self.seen = self.board.delivered
        ready = [core for core, flag in sorted(self.blocked.values(),
                                               key=lambda e: e[0].run_rank)
                 if self.board.ready(core.core_id, flag)]
        for core in ready:
            del self.blocked[core.core_id]
            self._switch(core)
        return bool(ready)

    def _drive(self) -> None:
        by_id = {c.core_id: c for c in self.cores}
        while True:
            if self._wake():
                continue
            if self.pending:
                _, _, core = heapq.heappop(self.pending)
                self._switch(core)
                continue
            if not self.blocked and not self.barrier:
                return
            waits = {cid: CrossCoreWait(flag) for cid, (_, flag) in self.blocked.items()}
            waits.update({c.core_id: SyncAll() for c in self.barrier})
            if self.blocked:
                self._hang(by_id, sorted(self.blocked), waits)
            if len(self.barrier) != len(self.cores):
                label = self.barrier[0].label
                raise KernelTimeout(
                    f"{label} execution timed out: {len(self.barrier)} of {len(self.cores)} "
                    f"cores wait at a SyncAll the others never reach")
            self._meet()

    def _meet(self) -> None:
        """SyncAll: every core waits for the slowest one, then all resume."""
        self._finish()
        self.phase += 1
        meet = max(c.timeline.end for c in self.cores) + self.flag_latency
        for c in self.cores:
            c.meet(meet)
        waiting, self.barrier = sorted(self.barrier, key=lambda c: c.run_rank), []
        self.fresh = {c.core_id for c in waiting}
        for c in waiting:
            self._switch(c)

    def _hang(self, by_id: dict, blocked: list, waits: dict) -> None:
        core = by_id[blocked[0]]
        others = sum(1 for w in waits.values() if isinstance(w, SyncAll))
        where = f"; {others} other core(s) wait at a SyncAll" if others else ""
        raise KernelTimeout(
            f"{core.label} execution timed out: core {core.core_id} waits at "
            f"cross_core_wait_flag({waits[blocked[0]].flag_id}), and no running core is left "
            f"to set it ({len(blocked)} core(s) blocked on cross-core flags{where})")


class Runner(Interleaver):
    """Runs every block of a launch on its core, the cores interleaved in modeled time.

    Each core runs in a greenlet of its own and hands over at every GM move (`turn`), where it
    waits for a cross-core flag and at a SyncAll; the runner then resumes the core whose
    pending move starts first (ties by the cores' run order), so every move meets L2 as the
    earlier moves of all cores left it (l2.py), and GM's bytes too. Only modeled times decide
    the order: never the host's. A core that is tracing (core.trace) records where it waits
    and meets the others, so that a replay interleaves the same way."""

    def __init__(self, cores: list[AICore], slots: dict, block_num: int, board: FlagBoard | None,
                 flag_latency: float, observers: list, end_phase: Callable[[], None] = lambda: None
                 ) -> None:
        super().__init__(cores, board, flag_latency, observers, end_phase)
        self.slots = slots
        self.block_num = block_num
        self.main: greenlet.greenlet | None = None

    def run(self, body: Callable[[AICore], object]) -> None:
        self.main = greenlet.getcurrent()
        for c in self.cores:
            c.scheduler = self
            c.greenlet = greenlet.greenlet(partial(self._core_main, c, body))
        try:
            self._start()
        finally:
            for c in self.cores:
                c.scheduler = None
                let, c.greenlet = c.greenlet, None
                if not let.dead:          # another core failed: end this one's block too
                    let.throw()
        self._finish()

    # ---- inside a core ----
    def turn(self, core: AICore, ready: float) -> None:
        """`core` is about to make a GM move whose port time starts at `ready`: the cores
        with an earlier one go first (the core hands over to the earliest directly)."""
        nxt = self._handover(core, ready)
        if nxt is core:
            self._pause(core)               # the runner decides who goes next
        elif nxt is not None:
            nxt.resume()
            nxt.greenlet.switch()
            core.resume()

    def _core_main(self, core: AICore, body) -> None:
        with np.errstate(all="ignore"):     # the chip gives inf and NaN silently
            self._run_blocks(core, body)

    def _run_blocks(self, core: AICore, body) -> None:
        slot = self.slots[core.core_id]
        core.sub_block_idx, core.task_ratio = slot.sub_block, slot.ratio
        for b in slot.blocks:
            core.begin_block(b, self.block_num)
            try:
                result = body(core)
                if result is not None and len(slot.blocks) > 1:
                    raise IllegalInstruction(
                        f"SyncAll needs every block resident at once: {self.block_num} blocks "
                        f"on {len(self.cores)} cores")
                if result is not None:
                    self._step(core, result)
            except BaseException:
                core.end_block(check=False)
                raise
            core.end_block()

    def _step(self, core: AICore, gen) -> None:
        """Run a generator block to its end, pausing where it waits for other cores."""
        for wanted in gen:
            if isinstance(wanted, CrossCoreWait):
                core.pending_wait = None
                if core.trace is not None:
                    core.trace.append((CROSS_WAIT, wanted.flag_id))
                if not self._pass(core, wanted.flag_id):
                    self.blocked[core.core_id] = (core, wanted.flag_id)
                    self._pause(core)         # resumed once the flag is set
                    self._pass(core, wanted.flag_id)
            elif isinstance(wanted, SyncAll):
                if core.trace is not None:
                    core.trace.append((SYNC_ALL,))
                self.barrier.append(core)
                self._pause(core)             # resumed when every core has met
            else:
                raise IllegalInstruction(
                    f"a kernel yields asc.sync_all() or asc.cross_core_wait_flag(id), got "
                    f"{wanted!r}")

    def _pause(self, core: AICore) -> None:
        core.pause()
        assert self.main is not None
        self.main.switch()
        core.resume()

    def _switch(self, core: AICore) -> None:
        core.resume()
        core.greenlet.switch()
        core.pause()
