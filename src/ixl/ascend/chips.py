"""Chip specifications: every hardware limit a kernel or the simulator needs, as a named field.

Values come from ../shared/ascend-facts.md section 1 and 2 (sources [INI], [PTODSL], [EX-MM],
[S2201], [S2002], [TQUE], [VEC], [DC]). Kernels read these fields; they never hard-code a limit.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass

KB = 1024
MB = 1024 * KB
GB = 1024 * MB


@dataclass(frozen=True)
class ChipSpec:
    name: str
    arch: str                 # NPU architecture ("dav-c220" = A2, "dav-m200" = 310P)
    aic_cores: int            # Cube cores (AIC)
    aiv_cores: int            # Vector cores (AIV) a vector-only kernel is spread over
    clock_mhz: int
    hbm_bytes: int
    l2_bytes: int
    ub_bytes: int             # Unified Buffer per AIV
    l1_bytes: int
    l0a_bytes: int
    l0b_bytes: int
    l0c_bytes: int
    event_ids_per_position: int   # caps the TQue buffers of one TPosition
    max_buffers: int = 64         # TPipe: buffers per kernel
    block_bytes: int = 32         # UB data block; DataCopy length unit; UB address alignment
    repeat_bytes: int = 256       # one vector repeat = 8 blocks
    max_repeat: int = 255         # repeatTime field is u8
    gm_alloc_align: int = 512     # GM allocations: 512 B gives full-bandwidth bursts
    max_block_dim: int = 65535
    max_copy_blocks: int = 4095   # DataCopyParams.blockCount

    def lanes(self, itemsize: int) -> int:
        """Elements of `itemsize` bytes in one 256-byte vector repeat."""
        return self.repeat_bytes // itemsize

    def block_elems(self, itemsize: int) -> int:
        return self.block_bytes // itemsize


def _a2(name: str, cores: int, clock: int, hbm: int, l2: int) -> ChipSpec:
    return ChipSpec(
        name=name, arch="dav-c220", aic_cores=cores, aiv_cores=2 * cores, clock_mhz=clock,
        hbm_bytes=hbm, l2_bytes=l2, ub_bytes=192 * KB, l1_bytes=512 * KB, l0a_bytes=64 * KB,
        l0b_bytes=64 * KB, l0c_bytes=128 * KB, event_ids_per_position=8,
    )


CHIPS: dict[str, ChipSpec] = {
    "910B1": _a2("910B1", 24, 1850, 64 * GB, 192 * MB),
    "910B2": _a2("910B2", 24, 1800, 64 * GB, 192 * MB),
    "910B3": _a2("910B3", 20, 1800, 64 * GB, 192 * MB),
    # 910B4 L2: 96 MB is the value the ini reports upward ([C] in the facts: 168 MB real).
    "910B4": _a2("910B4", 20, 1500, 32 * GB, 96 * MB),
    # 310P3: 8 coupled AI Cores (cube + vector share a scalar unit). The 7 standalone Vector
    # Cores are not modeled. Clock ~1080 MHz is [U]; event ids per position are not published
    # for 310P, 8 is assumed as on A2.
    "310P3": ChipSpec(
        name="310P3", arch="dav-m200", aic_cores=8, aiv_cores=8, clock_mhz=1080,
        hbm_bytes=24 * GB, l2_bytes=16 * MB, ub_bytes=256 * KB, l1_bytes=1 * MB,
        l0a_bytes=64 * KB, l0b_bytes=64 * KB, l0c_bytes=256 * KB, event_ids_per_position=8,
    ),
}


class UnknownChipError(ValueError):
    pass


def get_chip(name: str) -> ChipSpec:
    try:
        return CHIPS[name]
    except KeyError:
        close = difflib.get_close_matches(name, CHIPS, n=2)
        hint = f" (did you mean {' or '.join(close)}?)" if close else ""
        raise UnknownChipError(
            f"unknown chip {name!r}{hint}; known chips: {', '.join(CHIPS)}") from None
