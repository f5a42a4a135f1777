"""The L2 cache between HBM and the cores: which GM bytes a move finds in L2, which it brings
in, and which dirty bytes it pushes out to HBM.

Facts (docs/chip-facts.md): the 910B's L2 holds 192 MB [INI]; the vendor's documents take
L2 at about 5-5.2 TB/s against HBM at about 1.8 TB/s [PERFAN][EX-COPY]; a GlobalTensor's
`SetL2CacheHint(CACHE_MODE_DISABLE)` keeps read-once data from evicting what is reused, and
PERSISTENT is not yet supported [L2H][L2M]; when the working set exceeds L2, dirty lines are
written back to HBM before new data enters [L2S]; several cores reading the same 512 bytes at
the same time serialize, costing about 10-20% [MEMOPT].

The model:
- L2 is an LRU cache of 128-byte lines [U: the line size is not published; 128 B is the
  smallest piece GM requests are split into [MEMOPT]] over every GM segment, write-back and
  write-allocate. A segment keeps, per line, a stamp (the order of its last use: resident
  while above the eviction threshold) and a dirty bit, as numpy arrays; the LRU order is a
  histogram of stamps, so a move costs a few array operations whatever its size, never a
  loop over lines.
- A read served by L2 moves at the L2's rate, a miss at HBM's (and allocates, unless its
  tensor is CacheMode.DISABLE); a write goes into L2 (a DISABLE write straight to HBM, and
  drops the lines from L2).
- Sharing. The cores of a launch run on the host interleaved in modeled time: each hands over
  at every GM move, and the move that starts first runs next (ties by the cores' run order,
  schedule.py). So a move meets L2 as every earlier move of every core left it: a line one
  core brought in is a hit for any core that reads it later in the same launch, as when cores
  share a matrix's columns. A line another core requested earlier is served at the L2 rate at
  once [U: the model does not follow a fill's progress, so a read right behind another core's
  miss does not wait for that miss's data]. A core's moves on different pipes need not start
  in program order, so a move may come after another core's later one: a line whose last
  touch starts after the move is not there for it. Within a phase (a launch, or the stretch between
  two SyncAlls) the phase keeps, per line, the phase's allocation count when a move last
  touched it: the line stays while the phase's moves allocate fewer lines than L2 holds since,
  and the lines L2 held when the phase began leave oldest first as the phase allocates. At the
  phase's end every core's moves enter L2 in the order of their modeled times (ties by core
  id), which fixes what the next phase sees; the state depends on the order of launches on one
  device, as a real L2 does, never on the host.
- The dirty lines a phase's allocations evict cost HBM time, shared by the phase's cores: each
  core pays its share on its next move that allocates.
- One core may stand in for the identical cores of a launch (benchmarks/fit_costs.py times
  block 0 alone): its allocations and writes then count once per core of the launch.
- Cores reading the same lines at overlapping times serialize: a read that meets another
  core's read from the same first line still in flight costs `same_line_extra` (15%, the
  middle of [MEMOPT]'s 10-20% [U]) more port time (cores that start at staggered offsets pay
  nothing).

Timing reuse: a launch's time depends on the L2 state it starts from, so a replay may take an
earlier replay's timing only from a state that gives its moves the same answers
(`L2Cache.fingerprint`; memo.py).
"""

from __future__ import annotations

import enum
import hashlib
import threading
from collections import deque
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING

import numpy as np

from .costs import cost_table

if TYPE_CHECKING:
    from collections.abc import Iterable

    from .chips import ChipSpec
    from .gm import GlobalTensor, Segment

READ, WRITE, BYPASS_READ, INVALIDATE = "read", "write", "bypass read", "invalidate"
BATCH_LINES = 8192        # one core's moves enter L2 in batches of this many line touches
_NONE = np.zeros(0, np.int64)     # no stamps


class CacheMode(enum.IntEnum):
    """GlobalTensor::SetL2CacheHint's modes [L2H]."""

    DISABLE = 0        # bypass: read-once data that must not evict reused data
    NORMAL = 1         # the default
    PERSISTENT = 4     # not yet supported by Ascend C


@dataclass
class L2Stats:
    """What one core's moves did in L2, in bytes (msprof's L2Cache counts requests; the model
    counts their bytes)."""

    read_hit: int = 0        # reads served by L2
    read_miss: int = 0       # reads from HBM, allocated in L2
    bypass_read: int = 0     # CacheMode.DISABLE reads from HBM, not allocated
    write_hit: int = 0       # writes into lines L2 held
    write_miss: int = 0      # writes that allocated new lines
    bypass_write: int = 0    # CacheMode.DISABLE writes, straight to HBM
    writeback: int = 0       # dirty bytes this core's allocations evicted to HBM
    same_line_reads: int = 0     # reads serialized behind another core's read of the lines
    stall_cycles: float = 0.0    # what that serialization cost

    def add(self, other: L2Stats) -> None:
        for f in fields(self):
            setattr(self, f.name, getattr(self, f.name) + getattr(other, f.name))

    def copy(self) -> L2Stats:
        """Its own counters (every launch's report copies a memo's: copy.copy took longer)."""
        twin = object.__new__(L2Stats)
        twin.__dict__.update(self.__dict__)
        return twin

    @property
    def hbm_bytes(self) -> int:
        """Bytes that crossed the HBM interface: misses, bypasses and write-backs."""
        return self.read_miss + self.bypass_read + self.bypass_write + self.writeback

    @property
    def l2_bytes(self) -> int:
        """Bytes L2 served or absorbed: read hits and writes into it."""
        return self.read_hit + self.write_hit + self.write_miss

    @property
    def requests(self) -> int:
        return (self.read_hit + self.read_miss + self.bypass_read + self.write_hit
                + self.write_miss + self.bypass_write)


class _Lines:
    """A GM segment's lines in L2: a stamp (0: never in L2) and a dirty bit per line."""

    __slots__ = ("stamp", "dirty")

    def __init__(self, lines: int) -> None:
        self.stamp = np.zeros(lines, np.int64)
        self.dirty = np.zeros(lines, bool)


def _count(idx) -> int:
    """Lines in a move's index: a slice, an array, or one line's number."""
    if isinstance(idx, slice):
        return idx.stop - idx.start
    return 1 if isinstance(idx, int) else len(idx)


def line_index(base: int, count: int, width: int, pitch: int, outer: int, outer_pitch: int,
               line: int) -> slice | np.ndarray:
    """The lines touched by `outer` x `count` rows of `width` bytes (rows `pitch` apart, groups
    of rows `outer_pitch` apart) from byte `base` of a segment: a slice when contiguous, else
    a sorted array of distinct line numbers."""
    if outer == 1 and (count == 1 or pitch == width):
        return slice(base // line, (base + count * width - 1) // line + 1)
    starts = np.arange(count) * pitch + base
    if outer > 1:
        starts = (np.arange(outer)[:, None] * outer_pitch + starts[None, :]).ravel()
    first = starts // line
    n = (starts + width - 1) // line - first + 1
    if n.min() == n.max():
        idx = (first[:, None] + np.arange(n[0])).ravel()
    else:
        ends = np.cumsum(n)
        idx = np.arange(ends[-1]) - np.repeat(ends - n, n) + np.repeat(first, n)
    if outer == 1 and pitch >= width + line:      # rows never share a line: already distinct
        return idx
    if (idx[1:] > idx[:-1]).all():                # ascending, so distinct: unique's sort is moot
        return idx
    return np.unique(idx)


def line_hulls(touched: Iterable[tuple[Segment, slice | np.ndarray | int]]
               ) -> dict[int, tuple[Segment, int, int]]:
    """Per segment (by address) the first and past-the-last line of `touched`, pairs of a
    segment and lines (a slice, an array of line numbers, or one line's number)."""
    out: dict = {}
    for seg, idx in touched:
        if isinstance(idx, slice):
            lo, hi = idx.start, idx.stop
        elif isinstance(idx, np.ndarray):
            lo, hi = int(idx.min()), int(idx.max()) + 1
        else:
            lo, hi = int(idx), int(idx) + 1
        seen = out.get(seg.addr)
        out[seg.addr] = (seg, lo, hi) if seen is None else (seg, min(lo, seen[1]),
                                                            max(hi, seen[2]))
    return out


class Phase:
    """L2 during a phase (a launch, or the stretch between SyncAlls), shared by its cores in
    the order of their moves' modeled times (module doc): the eviction order L2 had when the
    phase began, as cumulative bytes, and what the phase's moves did since."""

    def __init__(self, cache: L2Cache, cores: int, stand_in: bool = False) -> None:
        self.cache = cache
        self.cores = max(cores, 1)
        self.weight = self.cores if stand_in else 1     # lines one allocation stands for
        self.line = cache.line
        self.capacity_lines = cache.capacity // cache.line
        self.threshold = cache.threshold
        self.free = cache.capacity - cache.resident * cache.line
        self.stamps, lines, dirty = cache.order.live()
        self.cum_bytes = np.cumsum(lines) * cache.line
        self.cum_dirty = np.cumsum(dirty) * cache.line
        self.allocated = 0                 # lines the phase's moves allocated
        self.marks: dict[int, tuple[np.ndarray, np.ndarray]] = {}   # segment addr -> per line:
        #   0 untouched in the phase, -1 dropped (a DISABLE write), else 1 + `allocated` when
        #   last touched; and when the move that touched it starts
        self.snap_threshold = self.threshold     # the phase's starting lines above it remain
        self.evicted = 0                   # entries of the starting order evicted so far
        self.points: list[int] = []        # `allocated` at each eviction check (a timing
        #   memo's fingerprint asks the starting order what it evicts at these points)
        self.next_evicted = self.cum_bytes[0] if len(self.stamps) else float("inf")
        self.dirty_log: deque = deque()    # (mark, segment addr, lines) of the phase's writes
        self.owed = 0.0                    # write-back bytes each core owes so far
        self.reads: dict[int, tuple[float, float, int]] = {}   # the GM address of a read's
        #   first line -> (when the latest read from that line starts, ends, its core)

    def view(self, core_id: int) -> L2View:
        return L2View(self, core_id)

    def marks_of(self, seg: Segment) -> tuple[np.ndarray, np.ndarray]:
        """The segment's marks and, per line, when the move that last touched it starts."""
        marks = self.marks.get(seg.addr)
        if marks is None:
            lines = -(-seg.nbytes // self.line)
            marks = self.marks[seg.addr] = (np.zeros(lines, np.int64), np.zeros(lines))
        return marks

    def evict(self) -> None:
        """The phase allocated: the starting lines leave oldest first, then the phase's own
        oldest writes; the dirty bytes among them add to what each core owes HBM (the chip
        writes them back through the bandwidth every core has a share of)."""
        dirty = 0
        self.points.append(self.allocated)
        pressure = self.allocated * self.line - self.free
        if pressure >= self.next_evicted:
            i = int(np.searchsorted(self.cum_bytes, pressure, side="right"))
            before = self.cum_dirty[self.evicted - 1] if self.evicted else 0
            dirty += int(self.cum_dirty[i - 1] - before)
            self.evicted = i
            self.next_evicted = self.cum_bytes[i] if i < len(self.stamps) else float("inf")
            self.snap_threshold = max(self.threshold, int(self.stamps[i - 1]))
        log = self.dirty_log
        floor = self.allocated + 1 - self.capacity_lines
        while log and log[0][0] <= floor:
            mark, addr, idx = log.popleft()
            dirty += int(np.count_nonzero(self.marks[addr][0][idx] == mark)) * self.line \
                * self.weight
        self.owed += dirty / self.cores


class L2View:
    """One core's moves in one phase: its stats and the batches the merge reads; what it
    finds in L2 is the phase's (shared by every core of the launch)."""

    def __init__(self, phase: Phase, core_id: int) -> None:
        self.phase = phase
        self.core_id = core_id
        self.stats = L2Stats()
        self.paid = 0                      # of the phase's write-backs (Phase.owed)
        self.entries: list[_Batch] = []    # its moves, in batches, for the merge
        self.batches: dict = {}            # (segment addr, kind) -> the open batch
        self._last: _Batch | None = None   # the latest move's batch, until it is timed
        self._read: tuple | None = None    # the latest read's key in Phase.reads, until timed

    # ---- a move ----
    def access(self, gm: GlobalTensor, offset: int, count: int, width: int, pitch: int,
               outer: int = 1, outer_pitch: int = 0, write: bool = False,
               ready: float = 0.0) -> tuple[int, int, int, float]:
        """A move of `outer` x `count` rows of `width` bytes of `gm` from byte `offset` (rows
        `pitch` apart) whose port time starts at `ready`: returns (bytes L2 serves or absorbs,
        bytes HBM serves or takes, dirty bytes written back to make room, 1.0 when it starts
        while another core's read from the same first line is in flight, else 0.0)."""
        nbytes = outer * count * width
        seg = gm.segment
        self._last = self._read = None
        if nbytes == 0 or seg is None:
            return 0, 0, 0, 0.0
        ph = self.phase
        span = line_index(gm.addr - seg.addr + offset, count, width, pitch, outer, outer_pitch,
                          ph.line)
        first = span.start if isinstance(span, slice) else int(span[0])
        marks, touched = ph.marks_of(seg)
        lines = seg.l2
        floor = max(0, ph.allocated + 1 - ph.capacity_lines)
        n = _count(span)
        idx: slice | np.ndarray | int = first if n == 1 else span   # one line: no arrays
        if n == 1:
            mine = marks[first]
            hit_lines = int((mine > floor and touched[first] <= ready)
                            or (lines is not None and mine >= 0
                                and lines.stamp[first] > ph.snap_threshold))
        else:
            mine = marks[idx]
            resident = (mine > floor) & (touched[idx] <= ready)     # not a later move's line
            if lines is not None:
                resident |= (lines.stamp[idx] > ph.snap_threshold) & (mine >= 0)
            hit_lines = int(np.count_nonzero(resident))
        hit = nbytes * hit_lines // n
        st = self.stats
        met = 0.0
        if not write:
            key = seg.addr + first * ph.line          # an int: a key the collector skips
            last = ph.reads.get(key)
            if last is not None and last[0] <= ready < last[1] and last[2] != self.core_id:
                met = 1.0
                st.same_line_reads += 1
            self._read = (key, ready)
        if gm.l2_mode is CacheMode.DISABLE:
            if write:
                marks[idx] = -1
                st.bypass_write += nbytes
                self._log(INVALIDATE, seg, idx)
                return 0, nbytes, 0, 0.0
            st.read_hit += hit
            st.bypass_read += nbytes - hit
            self._log(BYPASS_READ, seg, idx)
            return hit, nbytes - hit, 0, met
        ph.allocated += ph.weight * (n - hit_lines)
        marks[idx] = ph.allocated + 1
        touched[idx] = ready
        writeback = 0
        if write:
            st.write_hit += hit
            st.write_miss += nbytes - hit
            ph.dirty_log.append((ph.allocated + 1, seg.addr, idx))
        else:
            st.read_hit += hit
            st.read_miss += nbytes - hit
        if hit_lines < n:
            ph.evict()
            writeback = int(ph.owed) - self.paid
            self.paid += writeback
            st.writeback += writeback
        self._log(WRITE if write else READ, seg, idx)
        return (nbytes, 0, writeback, 0.0) if write else (hit, nbytes - hit, writeback, met)

    def timed(self, end: float, stall: float) -> None:
        """The latest move ends at `end`, `stall` cycles of it spent behind other cores'
        reads of its lines."""
        batch = self._last
        if batch is not None:
            batch.end = end
            batch.timed = True
            self._last = None
        if self._read is not None:
            key, ready = self._read
            self.phase.reads[key] = (ready, end, self.core_id)
            self._read = None
        self.stats.stall_cycles += stall

    # ---- the log the merge reads ----
    def _log(self, kind: str, seg, idx) -> None:
        """The move joins the open batch of its kind and segment."""
        key = (seg.addr, kind)
        batch = self.batches.get(key)
        if batch is None or batch.touched >= BATCH_LINES:
            batch = self.batches[key] = _Batch(seg, kind, len(self.entries))
            self.entries.append(batch)
        batch.parts.append(idx)
        batch.touched += _count(idx)
        self._last = batch

    def close(self) -> list[_Batch]:
        """The phase is over: its batches of moves, in the order they opened."""
        self.batches = {}
        return self.entries


class _Batch:
    """Moves of one kind into one segment by one core, which enter L2 together at the merge
    (at most BATCH_LINES line touches, so the LRU order keeps a resolution of about 1 MB of
    each core's traffic): the end of its latest move, and its lines."""

    __slots__ = ("seg", "kind", "seq", "parts", "touched", "end", "timed")

    def __init__(self, seg, kind: str, seq: int) -> None:
        self.seg, self.kind, self.seq = seg, kind, seq
        self.parts: list = []
        self.touched = 0
        self.end = 0.0
        self.timed = False

    def lines(self):
        """Every line its moves touched, once: a slice when contiguous."""
        parts = self.parts
        if len(parts) == 1:
            part = parts[0]
            return slice(part, part + 1) if isinstance(part, int) else part
        if all(isinstance(p, int) for p in parts):          # one-line moves
            idx = np.unique(np.array(parts, np.int64))
        else:
            idx = np.unique(np.concatenate([np.arange(p.start, p.stop) if isinstance(p, slice)
                                            else np.atleast_1d(p) for p in parts]))
        if idx[-1] - idx[0] + 1 == len(idx):
            return slice(int(idx[0]), int(idx[-1]) + 1)
        return idx


def l2_cache(chip: ChipSpec) -> L2Cache:
    """An empty L2 for `chip`, sized by its spec, lines and costs from its cost table."""
    raw = cost_table(chip.arch).raw["l2"]
    return L2Cache(chip.l2_bytes, raw["line_bytes"], raw["same_line_extra"])


class _Order:
    """The LRU order as a histogram of stamps: per stamp (the clock of one batch's entry into
    L2) the lines that still carry it and how many of them are dirty, in numpy arrays indexed
    by stamp, oldest first. Stamps are consecutive (each entry takes the next clock), so a
    stamp's counts sit at `stamp - base`; an entry whose lines all moved on stays, with zero
    lines (it holds no line, so neither the eviction order nor a threshold between stamps
    changes), until eviction passes it. Entries before `head` are evicted."""

    def __init__(self):
        self.base = 1                       # the stamp at index 0
        self.head = self.end = 0            # live entries: [head, end)
        self.lines = np.zeros(1024, np.int64)
        self.dirty = np.zeros(1024, np.int64)

    def live(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(stamps, lines, dirty lines) of the live entries, oldest first (the counts as views:
        read them before the order changes)."""
        h, e = self.head, self.end
        return (np.arange(self.base + h, self.base + e, dtype=np.int64), self.lines[h:e],
                self.dirty[h:e])

    def append(self, stamp: int, lines: int, dirty: int) -> None:
        if self.end == len(self.lines):
            self._make_room()
        assert stamp == self.base + self.end, "stamps enter the order consecutively"
        self.lines[self.end], self.dirty[self.end] = lines, dirty
        self.end += 1

    def forget(self, stamps: np.ndarray, dirty_stamps: np.ndarray) -> None:
        for counts, gone in ((self.lines, stamps), (self.dirty, dirty_stamps)):
            if gone.size:
                np.subtract.at(counts, gone - self.base, 1)     # a stamp may repeat

    def evict(self, excess: int) -> tuple[int, int, int] | None:
        """Drop the oldest entries until `excess` lines have left: (the last stamp dropped,
        lines, dirty lines dropped), or None when nothing needed to go."""
        if excess <= 0 or self.head == self.end:
            return None
        h = self.head
        cum = np.cumsum(self.lines[h:self.end])
        last = min(int(np.searchsorted(cum, excess)), len(cum) - 1)
        self.head = h + last + 1
        return self.base + h + last, int(cum[last]), int(self.dirty[h:self.head].sum())

    def clear(self) -> int:
        """Every entry leaves; returns their dirty lines."""
        dirty = int(self.dirty[self.head:self.end].sum())
        self.head = self.end
        return dirty

    def _make_room(self) -> None:
        """Drop the evicted entries from the front, and grow when over half is live."""
        live = self.end - self.head
        size = len(self.lines) * (2 if 2 * live > len(self.lines) else 1)
        for name in ("lines", "dirty"):
            grown = np.zeros(size, np.int64)
            grown[:live] = getattr(self, name)[self.head:self.end]
            setattr(self, name, grown)
        self.base += self.head
        self.head, self.end = 0, live


class L2Cache:
    """The chip's L2: resident lines per GM segment and their LRU order (module doc)."""

    def __init__(self, capacity: int, line: int, same_line_extra: float) -> None:
        self.capacity = capacity
        self.line = line
        self.same_line_extra = same_line_extra
        self.order = _Order()
        self.threshold = 0          # stamps at or below it are evicted
        self.clock = 0
        self.resident = 0           # lines
        self.written_back = 0       # bytes, over the cache's life
        self._lock = threading.Lock()

    def phase(self, cores: int, stand_in: bool = False) -> Phase:
        with self._lock:
            return Phase(self, cores, stand_in)

    # ---- the end of a phase ----
    def merge(self, views: list[L2View]) -> list[tuple[Segment, slice | np.ndarray, str]]:
        """Every core's moves of the phase enter L2 in modeled-time order; returns what
        entered, in that order (segment, lines, kind)."""
        entries = sorted(((b.end, v.core_id, b.seq, b) for v in views for b in v.close()
                          if b.timed), key=lambda t: t[:3])
        entered = [(b.seg, b.lines(), b.kind) for _, _, _, b in entries]
        self.enter(entered)
        return entered

    def enter(self, entered: list[tuple[Segment, slice | np.ndarray, str]]) -> None:
        """Lines enter L2 in order, as a phase's merge enters them (a timing memo enters a
        launch's again)."""
        with self._lock:
            for seg, idx, kind in entered:
                self._apply(seg, idx, kind)
                self._evict()           # as it goes: a line re-read after L2 turned over misses

    def checkpoint(self, entering: list[tuple[Segment, slice | np.ndarray, str]]) -> tuple:
        """What entering these lines can change (the LRU order, the counters, the lines'
        stamps and dirty bits), to put back with `restore` (a timing memo tries a launch's
        phases one by one on the L2 they leave)."""
        lines = []
        for seg, lo, hi in line_hulls((seg, idx) for seg, idx, _ in entering).values():
            held = getattr(seg, "l2", None)
            lines.append((seg, lo, None if held is None else held.stamp[lo:hi].copy(),
                          None if held is None else held.dirty[lo:hi].copy()))
        o = self.order
        return ((o.base, o.head, o.end, o.lines.copy(), o.dirty.copy()),
                (self.threshold, self.clock, self.resident, self.written_back), lines)

    def restore(self, checkpoint: tuple) -> None:
        """L2 as it was at `checkpoint`."""
        order, counters, lines = checkpoint
        o = self.order
        o.base, o.head, o.end, o.lines, o.dirty = order
        self.threshold, self.clock, self.resident, self.written_back = counters
        for seg, lo, stamp, dirty in lines:
            if stamp is None:
                seg.l2 = None
            else:
                seg.l2.stamp[lo:lo + len(stamp)] = stamp
                seg.l2.dirty[lo:lo + len(dirty)] = dirty

    def fingerprint(self, points: np.ndarray, evicted: int,
                    regions: list[tuple[Segment, slice]]) -> bytes:
        """What a phase's hits, evictions and write-backs can depend on in the L2 it starts
        from, for a phase whose eviction checks came at allocation counts `points`
        (Phase.points; `evicted`: how many starting entries they evicted from the state the
        phase was timed from, where to start looking) and whose moves touched lines within
        `regions`. The starting order meets the phase only at those checks: the k-th evicts
        the oldest entries up to `left[k]`, writing back the dirty lines among them, and a
        starting line stays resident while its entry's place in the order is at least
        `left[k]`. So the fingerprint holds the dirty lines the checks have evicted, check by
        check, and per line of the regions how many checks it stays resident through (-1:
        not in L2); not where the entries they evict begin and end. A phase of the same
        moves from two states with one fingerprint gets the same answers, move by move."""
        with self._lock:
            order = self.order
            head = order.head
            first = order.base + head
            room = self.capacity - self.resident * self.line
            pressure = points * self.line - room
            most = int(pressure[-1]) if pressure.size else 0
            n = evicted + 1
            while True:            # enough entries to reach past the last check's pressure
                reach = np.cumsum(order.lines[head:min(head + n, order.end)]) * self.line
                if head + n >= order.end or (reach.size and reach[-1] > most):
                    break
                n *= 2
            left = np.searchsorted(reach, pressure, side="right")
            dirty = np.concatenate([[0], np.cumsum(order.dirty[head:head + len(reach)])])
            digest = hashlib.blake2b(digest_size=16)
            digest.update(dirty[left].astype(np.int64).tobytes())
            for seg, span in regions:
                digest.update(b"|")
                lines = getattr(seg, "l2", None)
                if lines is None:
                    digest.update(np.full(span.stop - span.start, -1, np.int32).tobytes())
                    continue
                stamps = lines.stamp[span]
                through = np.searchsorted(left, stamps - first, side="right")
                digest.update(np.where(stamps > self.threshold, through, -1)
                              .astype(np.int32).tobytes())
            return digest.digest()

    def _apply(self, seg, idx, kind: str) -> None:
        if kind is BYPASS_READ:
            return
        lines = seg.l2
        if lines is None:
            lines = seg.l2 = _Lines(-(-seg.nbytes // self.line))
        old = lines.stamp[idx]
        held = old > self.threshold
        n_held = int(np.count_nonzero(held))
        n_dirty = 0
        dirty: np.ndarray | bool = False
        if n_held:                  # lines L2 holds leave their place (most moves: none, all)
            dirty = lines.dirty[idx] if n_held == held.size else lines.dirty[idx] & held
            n_dirty = int(np.count_nonzero(dirty))
            self.order.forget(old if n_held == held.size else old[held],
                              old[dirty] if n_dirty else _NONE)
            self.resident -= n_held
        if kind is INVALIDATE:
            lines.stamp[idx] = 0
            lines.dirty[idx] = False
            return
        self.clock += 1
        lines.stamp[idx] = self.clock
        n = _count(idx)
        if kind is WRITE:
            lines.dirty[idx] = True
            n_dirty = n
        elif n_dirty != n:          # a read keeps the dirty bits of the lines L2 held
            lines.dirty[idx] = dirty if n_dirty else False
        self.order.append(self.clock, n, n_dirty)
        self.resident += n

    def _forget(self, stamps: np.ndarray, dirty_stamps: np.ndarray) -> None:
        """Lines leave their place in the LRU order (touched again, dropped or unmapped)."""
        if not stamps.size:
            return
        self.order.forget(stamps, dirty_stamps)
        self.resident -= stamps.size

    def _evict(self) -> None:
        dropped = self.order.evict(self.resident - self.capacity // self.line)
        if dropped is not None:
            self.threshold, lines, dirty = dropped
            self.resident -= lines
            self.written_back += dirty * self.line

    # ---- the host's side ----
    def flush(self) -> None:
        """Every line leaves L2 (dirty ones written back, untimed), as a benchmark flushes the
        cache between two measurements: the next launch starts from a cold L2."""
        with self._lock:
            self.written_back += self.order.clear() * self.line
            self.threshold = self.clock
            self.resident = 0

    def invalidate(self, seg: Segment, offset: int, nbytes: int) -> None:
        """The host wrote GM [offset, offset + nbytes) of `seg` (by DMA, not through L2 [U]):
        L2's copies of those lines are dropped."""
        if getattr(seg, "l2", None) is None or nbytes <= 0:
            return
        with self._lock:
            self._apply(seg, slice(offset // self.line, (offset + nbytes - 1) // self.line + 1),
                        INVALIDATE)

    def drop(self, seg: Segment) -> None:
        """`seg` is unmapped: its lines leave L2 (dirty ones are not written back: the memory
        is gone)."""
        lines = getattr(seg, "l2", None)
        if lines is None:
            return
        with self._lock:
            held = lines.stamp > self.threshold
            self._forget(lines.stamp[held], lines.stamp[held & lines.dirty])
            seg.l2 = None

    def resident_bytes(self, seg: Segment | None = None) -> int:
        """Bytes L2 holds (of one segment, or in all)."""
        if seg is None:
            return self.resident * self.line
        lines = getattr(seg, "l2", None)
        if lines is None:
            return 0
        return int(np.count_nonzero(lines.stamp > self.threshold)) * self.line
