"""The model's speed of light for a memory-bound kernel: the modeled time of the best pure copy
kernel that reads and writes the same bytes (every core, large double-buffered tiles, moves
only). A kernel at 100% of it is as fast as the modeled chip can move its data."""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from ..ascend import AICore, Mode, SimulatedChip, get_chip
from ..ascend import lang as asc
from ..ascend.gm import GlobalMemory, GlobalTensor

BASE = 0x20_0000_0000


def _copy_body(src: GlobalTensor, dst: GlobalTensor, reads: int, writes: int, tile: int):
    """Each core reads its `reads` bytes and writes its `writes` bytes, tile by tile, a write
    riding along with each read until both are done (double buffered, moves only)."""
    def body(core: AICore) -> None:
        r0, w0 = core.block_idx * reads, core.block_idx * writes
        r_len = max(0, min(reads, src.count - r0))
        w_len = max(0, min(writes, dst.count - w0))
        pipe = asc.TPipe()
        q = asc.TQue(asc.TPosition.VECIN)
        pipe.init_buffer(q, 2, tile)
        for step in range(max(-(-r_len // tile), -(-w_len // tile))):
            off = step * tile
            x = q.alloc_tensor(np.uint8)
            if off < r_len:
                asc.data_copy_pad(x, src[r0 + off],
                                  asc.DataCopyExtParams(1, min(tile, r_len - off), 0, 0))
            q.enque(x)
            x = q.deque()
            if off < w_len:
                asc.data_copy_pad(dst[w0 + off], x,
                                  asc.DataCopyExtParams(1, min(tile, w_len - off), 0, 0))
            q.free_tensor(x)
    return body


@lru_cache(maxsize=64)
def speed_of_light_us(chip_name: str, read_bytes: int, write_bytes: int) -> float:
    """Modeled time of the copy kernel moving `read_bytes` in and `write_bytes` out."""
    chip = get_chip(chip_name)
    gm = GlobalMemory()
    gm.map(BASE, max(read_bytes, 1))
    gm.map(BASE + (1 << 40), max(write_bytes, 1))
    src = GlobalTensor(gm, BASE, np.uint8, read_bytes, "src")
    dst = GlobalTensor(gm, BASE + (1 << 40), np.uint8, write_bytes, "dst")
    cores = chip.aiv_cores
    align = chip.gm_alloc_align

    def share(n: int) -> int:
        return -(-(-(-n // cores)) // align) * align

    tile = chip.ub_bytes // 2 // align * align
    reads, writes = share(read_bytes), share(write_bytes)
    blocks = max(-(-read_bytes // reads) if reads else 0, -(-write_bytes // writes) if writes else 0)
    sim = SimulatedChip(chip)
    sim.gm = gm
    rec = sim.launch("copy", _copy_body(src, dst, reads, writes, tile), max(blocks, 1),
                     Mode(timing_only=True))
    return rec.time_us
