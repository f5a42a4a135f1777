"""UB bank conflicts of a vector instruction: the extra cycles when its operands collide.

Facts (docs/chip-facts.md) [VARCH][BANK][BANK2]: the A2's UB is 16 bank groups x 3 banks of
4 KB; the 32-byte row at address A is in bank group (A / 32) mod 16 and in bank
16 * (A / 64 KB) + (A / 32) mod 16. The vector unit moves one 32-byte row per bank group per
cycle; two reads or two writes in one bank group serialize, and so do a read and a write in one
bank. The 950's UB is 8 bank groups x 2 banks of 16 KB (ChipSpec's bank fields).

The model: a repeat (8 blocks of 32 bytes per operand) takes one pass when its rows are
conflict-free; otherwise as many passes as the most rows it reads, or writes, in one bank group,
plus one when a read and a write share a bank. Each pass past the first costs a cycle
[U: the guide gives the passes (stride 16: 8, stride 8: 4), not their cycles; one pass is taken
as the cycle in which the unit moves one row per bank group]. A block whose lanes the mask
switches off entirely is still counted [U]. A chip whose banks are not published
(ub_bank_groups = 0) has no conflicts.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

BLOCK = 32          # bytes of a UB row, and of a vector block
BLOCKS = 8          # blocks of one 256-byte repeat


@dataclass(frozen=True)
class Operand:
    """Where a vector operand's blocks lie: block b of repeat r starts at byte
    addr + (r * rep_stride + b * blk_stride) * 32 (strides in blocks); `blocks` in all (a
    count-form operand's last repeat may be short; 0: every repeat is whole)."""

    addr: int
    blk_stride: int = 1
    rep_stride: int = BLOCKS
    blocks: int = 0

    @staticmethod
    def contiguous(addr: int, nbytes: int) -> Operand:
        return Operand(addr, 1, BLOCKS, -(-nbytes // BLOCK))


@dataclass(frozen=True)
class Layout:
    groups: int
    banks_per_group: int
    bank_bytes: int

    @property
    def stretch(self) -> int:
        return self.groups * self.bank_bytes


def layout(chip) -> Layout | None:
    if not chip.ub_bank_groups:
        return None
    return Layout(chip.ub_bank_groups, chip.ub_banks_per_group, chip.ub_bank_bytes)


def _rows(op: Operand, repeats: int) -> np.ndarray:
    """Row numbers (repeats, blocks) of an operand; -1 where it has no block."""
    r = np.arange(repeats)[:, None]
    b = np.arange(1 if op.blk_stride == 0 else BLOCKS)[None, :]   # stride 0: one row, read once
    rows = op.addr // BLOCK + r * op.rep_stride + b * op.blk_stride
    if op.blocks:
        rows = np.where(r * BLOCKS + b < op.blocks, rows, -1)
    return rows


def _per_group(rows: np.ndarray, lay: Layout) -> np.ndarray:
    """(repeats, groups): rows each repeat touches in each bank group (a row once)."""
    rows = np.sort(rows, axis=1)
    keep = rows >= 0
    keep[:, 1:] &= rows[:, 1:] != rows[:, :-1]
    onehot = (rows % lay.groups)[:, :, None] == np.arange(lay.groups)[None, None, :]
    return (onehot & keep[:, :, None]).sum(axis=1)


def _banks(rows: np.ndarray, lay: Layout) -> np.ndarray:
    return np.where(rows >= 0, lay.groups * (rows * BLOCK // lay.stretch) + rows % lay.groups, -1)


@lru_cache(maxsize=4096)
def conflict_cycles(lay: Layout, reads: tuple[Operand, ...], writes: tuple[Operand, ...],
                    repeats: int) -> tuple[int, int]:
    """(bank-group conflict cycles, bank conflict cycles) of one instruction of `repeats`
    repeats reading `reads` and writing `writes`."""
    if repeats <= 0 or not (reads or writes):
        return 0, 0
    r_rows = np.concatenate([_rows(o, repeats) for o in reads], axis=1) if reads else None
    w_rows = np.concatenate([_rows(o, repeats) for o in writes], axis=1) if writes else None
    passes = np.ones(repeats, np.int64)
    for rows in (r_rows, w_rows):
        if rows is not None:
            passes = np.maximum(passes, _per_group(rows, lay).max(axis=1))
    group = int((passes - 1).sum())
    bank = 0
    if r_rows is not None and w_rows is not None:
        rb, wb = _banks(r_rows, lay), _banks(w_rows, lay)
        shared = ((rb[:, :, None] == wb[:, None, :]) & (rb[:, :, None] >= 0)).any(axis=(1, 2))
        bank = int(shared.sum())
    return group, bank
