"""Cross-core flags of a mix kernel: CrossCoreSetFlag / CrossCoreWaitFlag [XCORE].

A set is issued to a pipe and fires when that pipe's earlier work is done. Who it signals
depends on its mode:
- 0: every core of the setter's kind in the launch; the flag passes once all of them set it
  (a barrier among the AICs, or among the AIVs);
- 1: the two AIVs of one group; it passes once both set it;
- 2: the AIC with its two AIVs: a set on the AIC lets both AIVs pass once each, a set on both
  AIVs lets the AIC pass once.
Each core counts, per flag id, the sets that reached it (at most 15 pending: a 16th is fatal);
a wait takes one or blocks until one arrives, and on A2 it holds every pipe of the waiting
core. A Python kernel waits with `yield asc.cross_core_wait_flag(id)`: the simulator then
runs the other cores until the flag is set, and the waiting core resumes at the set's time
plus the flag latency. A wait no core will ever satisfy is the chip's timeout.
"""

from __future__ import annotations

import threading
from collections import defaultdict, deque
from dataclasses import dataclass

from .chips import ChipSpec
from .core import CoreId, CoreKind, current_core
from .errors import IllegalInstruction
from .timeline import Pipe

MODES = (0, 1, 2)
SET_PIPES = (Pipe.V, Pipe.M, Pipe.MTE1, Pipe.MTE2, Pipe.MTE3, Pipe.FIX)


@dataclass(frozen=True)
class CrossCoreWait:
    """What a kernel yields to wait for a cross-core flag."""

    flag_id: int


def cross_core_set_flag(mode_id: int, pipe: Pipe, flag_id: int) -> None:
    """CrossCoreSetFlag<mode_id, pipe>(flag_id)."""
    core = current_core()
    what = f"cross_core_set_flag<{mode_id}, PIPE_{pipe.name}>({flag_id})"
    _board(core, what)
    if mode_id not in MODES:
        raise IllegalInstruction(f"{what}: mode {mode_id} is not one of 0 (all AICs or all "
                                 f"AIVs), 1 (the two AIVs of a group), 2 (AIC with its AIVs); "
                                 f"mode 4 is the 950's [XCORE]")
    if mode_id == 1 and core.kind is not CoreKind.AIV:
        raise IllegalInstruction(f"{what}: mode 1 syncs the two AIVs of a group; core "
                                 f"{core.core_id} is an AIC [XCORE]")
    if pipe not in SET_PIPES:
        raise IllegalInstruction(f"{what}: the set is issued to a pipe that does the work it "
                                 f"follows (V, M, MTE1, MTE2, MTE3, FIX), not S or ALL [XCORE]")
    core.has_pipe(pipe, what)
    _check_id(core, flag_id, what)
    core.cross_core_set(pipe, flag_id, mode_id, what)


def cross_core_wait_flag(flag_id: int) -> CrossCoreWait:
    """CrossCoreWaitFlag(flag_id): yield what this returns (`yield asc.cross_core_wait_flag(i)`)."""
    core = current_core()
    what = f"cross_core_wait_flag({flag_id})"
    _board(core, what)
    _check_id(core, flag_id, what)
    core.pending_wait = wait = CrossCoreWait(flag_id)
    return wait


def _board(core, what: str) -> FlagBoard:
    if core.cross_core is None:
        raise IllegalInstruction(
            f"{what} in a {'vector' if core.kind is CoreKind.AIV else 'cube'}-only kernel: only "
            f"a mix kernel starts the cross-core scheduler (KernelType.MIX) [XCORE]")
    return core.cross_core


def _check_id(core, flag_id: int, what: str) -> None:
    limit = core.chip.cross_core_flag_ids
    if not 0 <= flag_id < limit:
        raise IllegalInstruction(f"{what}: flag id {flag_id} outside [0, {limit}) (ids from "
                                 f"{limit} on are the hardware SyncAll's) [XCORE]")


class FlagBoard:
    """The cross-core flags of one mix launch: per (core, flag id) the sets that reached the
    core and not yet waited for, as (fire time, the (core, set number) of each set behind it).
    Sets of modes 0 and 1 (and mode 2 from the AIVs) gather per round until every core of the
    group has set; thread-safe, since cores may run on host threads."""

    def __init__(self, chip: ChipSpec, groups: dict) -> None:
        """`groups`: CoreId -> the group (block) index of each core of the launch."""
        self.limit = chip.cross_core_flag_max_count
        self.group_of = groups
        self.members: dict = defaultdict(list)
        for c, g in groups.items():
            self.members[(c.kind, g)].append(c)
        self.by_kind = {k: [c for c in groups if c.kind is k] for k in CoreKind}
        self.pending: dict = defaultdict(deque)         # (core, flag) -> deque of tokens
        self.rounds: dict = defaultdict(lambda: defaultdict(deque))   # key -> core -> sets
        self.delivered = 0         # sets delivered so far (the runner looks for woken cores)
        self.lock = threading.Lock()

    def set(self, setter: CoreId, mode: int, flag: int, fires: float, number: int,
            what: str) -> None:
        """Deliver a set: to its receivers directly, or into its round."""
        with self.lock:
            token = (fires, ((setter, number),))
            group = self.group_of[setter]
            if mode == 2 and setter.kind is CoreKind.AIC:
                for aiv in self.members[(CoreKind.AIV, group)]:
                    self._deliver(aiv, flag, token, what)
                return
            if mode == 0:
                party, receivers = self.by_kind[setter.kind], self.by_kind[setter.kind]
            elif mode == 1:
                party = receivers = self.members[(CoreKind.AIV, group)]
            else:       # mode 2 from an AIV: the AIC passes once both AIVs set
                party = self.members[(CoreKind.AIV, group)]
                receivers = self.members[(CoreKind.AIC, group)]
            sets = self.rounds[(mode, flag, tuple(party))]
            sets[setter].append(token)
            if len(sets[setter]) > self.limit:
                raise IllegalInstruction(f"{what} on core {setter}: {len(sets[setter])} sets of "
                                         f"flag {flag} pending, the counter holds {self.limit}")
            if all(sets[c] for c in party):
                done = [sets[c].popleft() for c in party]
                merged = (max(t for t, _ in done), tuple(p for _, ps in done for p in ps))
                for c in receivers:
                    self._deliver(c, flag, merged, what)

    def _deliver(self, core, flag: int, token, what: str) -> None:
        queue = self.pending[(core, flag)]
        queue.append(token)
        self.delivered += 1
        if len(queue) > self.limit:
            raise IllegalInstruction(
                f"{what}: cross-core flag {flag} of core {core} counts {len(queue)} sets not yet "
                f"waited for; its counter holds {self.limit} (an overflow is fatal) [XCORE]")

    def take(self, core: CoreId, flag: int) -> tuple[float, tuple[tuple[CoreId, int], ...]] | None:
        """One pending set of `flag` for `core` (fire time, setters), or None."""
        with self.lock:
            queue = self.pending.get((core, flag))
            return queue.popleft() if queue else None

    def ready(self, core: CoreId, flag: int) -> bool:
        with self.lock:
            return bool(self.pending.get((core, flag)))

    def unwaited(self) -> list[str]:
        """Flags set and never waited for, at the launch's end."""
        left = [f"core {c} flag {f} x{len(q)}" for (c, f), q in self.pending.items() if q]
        left += [f"core {c} flag {key[1]} (mode {key[0]}: its partners never set it)"
                 for key, sets in self.rounds.items() for c, q in sets.items() if q]
        return left
