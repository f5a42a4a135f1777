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
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from .chips import ChipSpec
from .core import AICore, CoreId, CoreKind, SyncAll
from .crosscore import CrossCoreWait, FlagBoard
from .errors import IllegalInstruction, KernelTimeout


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


class Runner:
    """Runs every block of a launch on its core; interleaves cores that wait for each other."""

    def __init__(self, cores: list[AICore], slots: dict, block_num: int, board: FlagBoard | None,
                 flag_latency: float, observers: list, end_phase: Callable[[], None] = lambda: None
                 ) -> None:
        """`end_phase` is called whenever every core has reached a SyncAll or the end, before
        the cores meet (the chip settles what the phase did to L2)."""
        self.cores = cores
        self.slots = slots
        self.block_num = block_num
        self.board = board
        self.flag_latency = flag_latency
        self.observers = observers
        self.paused: dict = {}       # core id -> (generator, what it waits for)
        self.phase = 0
        self.end_phase = end_phase

    def run(self, body: Callable[[], object], threads: int) -> None:
        def first(core: AICore) -> None:
            with np.errstate(all="ignore"):     # the chip gives inf and NaN silently
                self._run_blocks(core, body)
        if threads > 1:
            with ThreadPoolExecutor(threads) as pool:
                futures = [pool.submit(first, c) for c in self.cores]
            for f in futures:          # the first failing core in run order reports
                f.result()
        else:
            for c in self.cores:
                first(c)
        with np.errstate(all="ignore"):
            self._interleave()
        self.end_phase()
        for o in self.observers:
            o.phase_end(self.phase)

    def _run_blocks(self, core: AICore, body) -> None:
        slot = self.slots[core.core_id]
        core.sub_block_idx, core.task_ratio = slot.sub_block, slot.ratio
        for b in slot.blocks:
            core.begin_block(b, self.block_num)
            try:
                result = body(core)
            except BaseException:
                core.end_block(check=False)
                raise
            if result is None:
                core.end_block()
            elif len(slot.blocks) > 1:
                core.end_block(check=False)
                raise IllegalInstruction(
                    f"SyncAll needs every block resident at once: {self.block_num} blocks on "
                    f"{len(self.cores)} cores")
            else:
                self._step(core, result)

    def _step(self, core: AICore, gen) -> None:
        """Run a paused block until it must wait (recorded in `paused`) or ends."""
        core.resume()
        while True:
            try:
                wanted = next(gen)
            except StopIteration:
                self.paused.pop(core.core_id, None)
                core.end_block()
                return
            except BaseException:
                core.end_block(check=False)
                raise
            if isinstance(wanted, CrossCoreWait):
                core.pending_wait = None
                if self._pass(core, wanted.flag_id):
                    continue
            elif not isinstance(wanted, SyncAll):
                core.end_block(check=False)
                raise IllegalInstruction(
                    f"a kernel yields asc.sync_all() or asc.cross_core_wait_flag(id), got "
                    f"{wanted!r}")
            self.paused[core.core_id] = (gen, wanted)
            core.pause()
            return

    def _pass(self, core: AICore, flag: int) -> bool:
        assert self.board is not None       # cross_core_wait_flag runs only in a mix kernel
        token = self.board.take(core.core_id, flag)
        if token is None:
            return False
        core.cross_core_wait(flag, *token)
        return True

    def _interleave(self) -> None:
        by_id = {c.core_id: c for c in self.cores}
        while self.paused:
            progressed = True
            while progressed:          # resume every core whose flag has been set meanwhile
                progressed = False
                for c in self.cores:
                    entry = self.paused.get(c.core_id)
                    if entry and isinstance(entry[1], CrossCoreWait) and self.board is not None \
                            and self.board.ready(c.core_id, entry[1].flag_id):
                        c.resume()
                        self._pass(c, entry[1].flag_id)
                        self._step(c, entry[0])
                        progressed = True
            if not self.paused:
                break
            waits = {cid: w for cid, (_, w) in self.paused.items()}
            blocked = sorted(cid for cid, w in waits.items() if isinstance(w, CrossCoreWait))
            if blocked:
                self._hang(by_id, blocked, waits)
            if len(waits) != len(self.cores):
                label = by_id[next(iter(waits))].label
                raise KernelTimeout(
                    f"{label} execution timed out: {len(waits)} of {len(self.cores)} cores "
                    f"wait at a SyncAll the others never reach")
            self._meet()

    def _meet(self) -> None:
        """SyncAll: every core waits for the slowest one, then all resume."""
        self.end_phase()
        for o in self.observers:
            o.phase_end(self.phase)
        self.phase += 1
        meet = max(c.timeline.end for c in self.cores) + self.flag_latency
        for c in self.cores:
            c.meet(meet)
        for c in self.cores:
            self._step(c, self.paused[c.core_id][0])

    def _hang(self, by_id: dict, blocked: list, waits: dict) -> None:
        core = by_id[blocked[0]]
        others = sum(1 for w in waits.values() if isinstance(w, SyncAll))
        where = f"; {others} other core(s) wait at a SyncAll" if others else ""
        raise KernelTimeout(
            f"{core.label} execution timed out: core {core.core_id} waits at "
            f"cross_core_wait_flag({waits[blocked[0]].flag_id}), and no running core is left "
            f"to set it ({len(blocked)} core(s) blocked on cross-core flags{where})")
