"""TransDataTo5HD on the V pipe: 16 x 16 transposes of 16-bit elements gathered from and
scattered to sixteen 32-byte blocks anywhere in UB [5HD].

Per repeat, the 16 source blocks (one per address in `src_list`) form a 16 x 16 matrix, row i
the block of address i; destination block j (address j of `dst_list`) receives column j: its
element i is element j of source block i. Repeat r moves every source address on by r x
src_rep_stride blocks and every destination address by r x dst_rep_stride blocks; with a
single repeat the strides are still added once (set them to 0). NCHW -> NC1HWC0: the sources
are 16 channel planes, the destinations 16 consecutive positions of C0 channels, and repeats
walk the plane. The 8- and 32-bit forms (half blocks chosen by dst_high_half / src_high_half,
two destination blocks per column) are not modeled [U].
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .errors import IllegalInstruction
from .observe import Access, Space
from .pipe import LocalTensor
from .timeline import Pipe

LANES = 16      # a 16 x 16 transpose per repeat


@dataclass(frozen=True)
class TransDataTo5HDParams:
    dst_high_half: bool = False
    src_high_half: bool = False
    repeat_times: int = 1
    dst_rep_stride: int = 0
    src_rep_stride: int = 0


def trans_data_to_5hd(dst_list: list[LocalTensor], src_list: list[LocalTensor],
                      params: TransDataTo5HDParams) -> None:
    """TransDataTo5HD(dstList, srcList, TransDataTo5HDParams), 16-bit form."""
    what = "trans_data_to_5hd"
    if len(dst_list) != LANES or len(src_list) != LANES:
        raise IllegalInstruction(f"{what} takes {LANES} destination and {LANES} source block "
                                 f"addresses, got {len(dst_list)} and {len(src_list)}")
    first = src_list[0]
    core = first.core
    chip = core.chip
    if any(t.itemsize != 2 for t in (*dst_list, *src_list)):
        raise IllegalInstruction(f"{what}: this model has the 16-bit form only (the 8- and "
                                 f"32-bit forms are not modeled)")
    if any(t.space is not Space.UB for t in (*dst_list, *src_list)):
        raise IllegalInstruction(f"{what}: every block is in UB")
    for role, ts in (("dst", dst_list), ("src", src_list)):
        for i, t in enumerate(ts):
            core.check_ub_aligned(t.offset, f"{what} {role}[{i}]")
    n = params.repeat_times
    if not 0 <= n <= chip.max_repeat:
        raise IllegalInstruction(f"{what} repeat_times {n} outside [0, {chip.max_repeat}]")
    blk = chip.block_bytes
    steps = np.arange(n) if n > 1 else np.ones(n, np.int64)
    src_addr = np.array([t.offset for t in src_list])[None, :] + \
        steps[:, None] * params.src_rep_stride * blk          # (repeat, block)
    dst_addr = np.array([t.offset for t in dst_list])[None, :] + \
        steps[:, None] * params.dst_rep_stride * blk
    if n:
        top = int(max(src_addr.max(), dst_addr.max())) + blk
        if top > chip.ub_bytes:
            raise IllegalInstruction(f"{what} reaches UB {top:#x}, UB holds {chip.ub_bytes} "
                                     f"bytes")
    lane = np.arange(LANES)
    # element j of source block i (repeat r) -> element i of destination block j
    src_el = (src_addr[:, :, None] // 2 + lane[None, None, :])              # (r, i, j)
    dst_el = (dst_addr[:, None, :] // 2 + lane[None, :, None])              # (r, i, j)
    if n and not core.mode.timing_only:
        ub = core.ub.view(np.uint16)
        ub[dst_el.reshape(-1)] = ub[src_el.reshape(-1)].copy()
    core.issue(Pipe.V, what, core.costs.vector(what, 2, n * LANES * LANES))
    if core.observers:
        ops = ((Access(Space.UB, 0, 2, src_el.reshape(n, -1), "src"),),
               (Access(Space.UB, 0, 2, dst_el.reshape(n, -1), "dst"),)) if n else ((), ())
        core.observe(Pipe.V, what, *ops)
