"""Chip specifications: every hardware limit a kernel or the simulator needs, as a named field.

Values come from the facts in docs/chip-facts.md (sources [INI], [PTODSL], [EX-MM], [S2201],
[S2002], [TQUE], [VEC], [DC]; for the Cube [CATLASS], [VARCH], [MVIN], [MMAD], [FIX], [BT], [FB],
[FMT2], [XCORE]). Kernels read these fields; they never hard-code a limit.
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
    # ---- the Cube core (AIC) ----
    coupled: bool = False         # cube and vector share one core (310P): no AIC/AIV split
    bias_table_bytes: int = 1 * KB        # BiasTable (TPosition C2) [INI][CATLASS]
    fixpipe_buffer_bytes: int = 7 * KB    # Fixpipe buffer (C2PIPE2GM), "about 7 KB" [VARCH] [U]
    l1_align: int = 32                    # start-address alignments [S2201][MVIN]
    l0ab_align: int = 512                 # L0A / L0B: one fractal
    l0c_align: int = 64                   # L0C as read by Fixpipe [TPOS][FIX]
    mmad_dst_align: int = 1024            # L0C as an Mmad destination: one fp32 fractal [MMAD]
    bias_table_align: int = 64            # [BT]
    fixpipe_buffer_align: int = 128       # L1 -> Fixpipe buffer destination [FB] ([C] 64 [S2201])
    fractal_rows: int = 16                # a fractal is 16 rows of 32 bytes (L1, L0A, L0B) [FMT2]
    mmad_max_mnk: int = 4095              # MmadParams m, n, k [MMAD]
    unit_flag_bytes: int = 512            # L0C bytes per unit flag (Mmad <-> Fixpipe) [UF]
    cross_core_flag_ids: int = 11         # CrossCoreSetFlag ids 0-10 ([C]: 11-14 are SyncAll's)
    cross_core_flag_max_count: int = 15   # a flag's counter: a 16th pending set is fatal [XCORE]
    aiv_per_aic: int = 2                  # a mix kernel's group: 1 AIC + 2 AIV [KTYPE]

    def lanes(self, itemsize: int) -> int:
        """Elements of `itemsize` bytes in one 256-byte vector repeat."""
        return self.repeat_bytes // itemsize

    def block_elems(self, itemsize: int) -> int:
        return self.block_bytes // itemsize

    def c0(self, itemsize: int) -> int:
        """C0: elements of `itemsize` bytes in one 32-byte fractal row (16 for half, 8 for
        float, 32 for int8)."""
        return self.block_elems(itemsize)

    @property
    def fractal_bytes(self) -> int:
        """An L1 / L0A / L0B fractal: 16 rows of 32 bytes (512 B)."""
        return self.fractal_rows * self.block_bytes


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
    # Cores are not modeled, nor is its coupled Cube (L0C drains through the vector unit).
    # Clock ~1080 MHz is [U]; event ids per position are not published for 310P, 8 is assumed
    # as on A2.
    "310P3": ChipSpec(
        name="310P3", arch="dav-m200", aic_cores=8, aiv_cores=8, clock_mhz=1080,
        hbm_bytes=24 * GB, l2_bytes=16 * MB, ub_bytes=256 * KB, l1_bytes=1 * MB,
        l0a_bytes=64 * KB, l0b_bytes=64 * KB, l0c_bytes=256 * KB, event_ids_per_position=8,
        coupled=True, aiv_per_aic=1,
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
