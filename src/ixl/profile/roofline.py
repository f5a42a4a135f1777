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


def _copy_body(src: GlobalTensor, dst: GlobalTensor, per_core: int, tile: int, in_per_out: int):
    """Each core reads `in_per_out` bytes for every byte it writes, tile by tile."""
    def body(core: AICore) -> None:
        start = core.block_idx * per_core
        length = min(per_core, dst.count - start)
        pipe = asc.TPipe()
        q = asc.TQue(asc.TPosition.VECIN)
        pipe.init_buffer(q, 2, tile * in_per_out)
        for off in range(0, length, tile):
            n = min(tile, length - off)
            x = q.alloc_tensor(np.uint8)
            asc.data_copy_pad(x, src[(start + off) * in_per_out],
                              asc.DataCopyExtParams(1, n * in_per_out, 0, 0))
            q.enque(x)
            x = q.deque()
            asc.data_copy_pad(dst[start + off], x, asc.DataCopyExtParams(1, n, 0, 0))
            q.free_tensor(x)
    return body


@lru_cache(maxsize=64)
def speed_of_light_us(chip_name: str, read_bytes: int, write_bytes: int) -> float:
    """Modeled time of the copy kernel moving `read_bytes` in and `write_bytes` out."""
    chip = get_chip(chip_name)
    ratio = max(1, round(read_bytes / max(write_bytes, 1)))
    out_bytes = max(write_bytes, 1)
    gm = GlobalMemory()
    gm.map(BASE, out_bytes * ratio)
    gm.map(BASE + (1 << 40), out_bytes)
    src = GlobalTensor(gm, BASE, np.uint8, out_bytes * ratio, "src")
    dst = GlobalTensor(gm, BASE + (1 << 40), np.uint8, out_bytes, "dst")
    cores = chip.aiv_cores
    align = chip.gm_alloc_align
    per_core = -(-(-(-out_bytes // cores)) // align) * align
    tile = chip.ub_bytes // (2 * ratio) // align * align     # two slots of the read bytes
    sim = SimulatedChip(chip)
    sim.gm = gm
    blocks = -(-out_bytes // per_core)
    rec = sim.launch("copy", _copy_body(src, dst, per_core, tile, ratio), blocks,
                     Mode(timing_only=True))
    return rec.time_us
