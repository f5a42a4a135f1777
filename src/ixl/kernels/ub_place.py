"""Where a template's UB buffers start: gaps between them so that an instruction's operands
meet in no bank group and no bank (the bank model: ascend/ubbanks.py, docs/chip-facts.md).

TPipe hands out buffers at consecutive addresses [TQUE]; the vendor's guide avoids bank
conflicts by padding buffers so that an instruction's two sources start in different bank
groups and its destination lies in other banks than its sources [BANK2]. The templates do the
same with a gap (a TBuf that is never read) before a buffer that must start elsewhere:

- `against`: a buffer starts half a bank-group cycle (bank groups x 32 bytes: 512 bytes on the
  A2) from where another starts. Two contiguous operands so placed use disjoint bank groups in
  every repeat, since a repeat's 8 blocks cover half the cycle.
- `apart`: a destination starts at least one bank stretch (bank groups x bank bytes: 64 KB on
  the A2) after a source, in the same place of the cycle, so no repeat reads and writes one
  bank; taken only when UB has room for it, else the buffer is placed `against` its own.
- `row_pitch`: the rows of a tile an odd number of blocks apart (of runs of blocks), so that
  one block (run) from each of consecutive rows lies in consecutive bank groups.

A chip whose banks are not published (ub_bank_groups = 0) gets no gaps.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..ascend import lang as asc
from ..ascend.chips import ChipSpec


@dataclass(frozen=True)
class Want:
    """Where one buffer (all its slots: `nbytes`) wants to start: indices of earlier buffers
    (None: right after the one before)."""

    nbytes: int
    against: int | None = None
    apart: int | None = None


def _at(cursor: int, residue: int, cycle: int) -> int:
    """The first address from `cursor` at `residue` in the bank-group cycle."""
    return cursor + (residue - cursor) % cycle


def _starts(wants: Sequence[Want], chip: ChipSpec, base: int, stretched: frozenset) -> list:
    cycle = chip.ub_bank_groups * chip.block_bytes
    starts: list[int] = []
    cursor = base
    for i, w in enumerate(wants):
        if i in stretched and w.apart is not None:
            anchor = starts[w.apart]
            start = _at(max(cursor, anchor + chip.ub_bank_groups * chip.ub_bank_bytes),
                        anchor % cycle, cycle)
        elif w.against is not None:
            start = _at(cursor, (starts[w.against] + cycle // 2) % cycle, cycle)
        else:
            start = cursor
        starts.append(start)
        cursor = start + w.nbytes
    return starts


def gaps(wants: Sequence[Want], chip: ChipSpec, room: int,
         base: int = 0) -> tuple[int, ...] | None:
    """Bytes of padding before each buffer, allocated in order from `base` within `room` bytes
    (UB less what is allocated after them): the half-cycle gaps, and each `apart` stretch, in
    order, when it still fits. None when even the half-cycle gaps do not fit."""
    if not chip.ub_bank_groups or not wants:
        return (0,) * len(wants)
    stretched: frozenset = frozenset()
    starts = _starts(wants, chip, base, stretched)
    if starts[-1] + wants[-1].nbytes > room:
        return None
    for i, w in enumerate(wants):
        if w.apart is None:
            continue
        trial = _starts(wants, chip, base, stretched | {i})
        if trial[-1] + wants[-1].nbytes <= room:
            stretched, starts = stretched | {i}, trial
    ends = [base] + [s + w.nbytes for s, w in zip(starts, wants)]
    return tuple(s - e for s, e in zip(starts, ends))


def pad(pipe: asc.TPipe, nbytes: int) -> None:
    """A gap of `nbytes` at the pipe's cursor: a buffer that is never read."""
    if nbytes:
        pipe.init_buffer(asc.TBuf(), nbytes)


def row_pitch(elems: int, itemsize: int, chip: ChipSpec, run: int = 1) -> int:
    """Elements from one row of a UB tile to the next: `elems` in whole blocks, and on a chip
    with published banks an odd multiple of `run` blocks, so that an instruction taking `run`
    consecutive blocks from each of several rows (TransDataTo5HD's 16 addresses: one block a
    row, or two for a float32 destination) finds them in as many bank groups."""
    blk = chip.block_elems(itemsize)
    blocks = -(-elems // blk)
    if chip.ub_bank_groups:
        odd = -(-blocks // run)
        blocks = (odd + 1 - odd % 2) * run
    return blocks * blk


def staggered(elems: int, itemsize: int, chip: ChipSpec) -> int:
    """Elements from one of several equal tiles carved from one buffer to the next: at least
    `elems`, and half a bank-group cycle on, so neighbouring tiles (a binary body's two
    operands) meet in no bank group."""
    if not chip.ub_bank_groups:
        return elems
    cycle, nbytes = chip.ub_bank_groups * chip.block_bytes, elems * itemsize
    return (nbytes + (cycle // 2 - nbytes) % cycle) // itemsize
