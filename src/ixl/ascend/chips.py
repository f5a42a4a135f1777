"""Chip specifications: every hardware limit a kernel or the simulator needs, as a named field.

Values come from the facts in docs/chip-facts.md (sources [INI], [PTODSL], [EX-MM], [S2201],
[S2002], [S3510], [TQUE], [VEC], [DC]; for the Cube [CATLASS], [VARCH], [MVIN], [MMAD], [FIX],
[BT], [FB], [FMT2], [XCORE]; the UB banks [VARCH][BANK]). Kernels read these fields; they never
hard-code a limit.
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
    arch: str                 # NPU architecture ("dav-c220" = A2, "dav-m200" = 310P,
                              # "dav-3510" = 950)
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
    cube_modeled: bool = True             # the AIC model (A2 layouts) fits this chip's Cube
    # ---- the UB's banks [VARCH][BANK]: A2 has 16 bank groups x 3 banks of 4 KB; a bank group
    # is every 32-byte row at (address / 32) mod groups, a bank one group within one
    # groups x bank_bytes stretch of UB. 0 groups: no bank model (not published).
    ub_bank_groups: int = 16
    ub_banks_per_group: int = 3
    ub_bank_bytes: int = 4 * KB
    vector_registers: bool = False        # register-based vector unit (950: RegTensor, VL 256 B)

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
    def bank_stretch(self) -> int:
        """Bytes of UB in which every bank group holds one bank (A2: 64 KB): bank(A) =
        groups * (A // stretch) + (A // 32) mod groups [BANK]."""
        return self.ub_bank_groups * self.ub_bank_bytes

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
        coupled=True, aiv_per_aic=1, ub_bank_groups=0,      # 310P's UB banks: not published
    ),
    # 950PR (arch 3510) [S3510][VARCH][EX-MM950]: 32 AIC / 64 AIV (a 28-AIC part is seen [U]),
    # 1650 MHz, 128 GB HBM [U]; UB 256 KB physical as 8 bank groups x 2 banks x 16 KB, of which
    # the ini gives 248 KB (253952 bytes) to kernels [C]; L0C 256 KB; L1 512 KB [U]. Not
    # published, carried over from A2 [U]: the L2 size (the facts give none), L0A/L0B 64 KB,
    # 8 event ids per position. Its vector unit is register-based (RegTensor, VL = 256 B, 256 B
    # per cycle). Its Cube takes NZ in L0A (A2: ZZ) and has no GM -> L0 path, which the AIC
    # model does not simulate: cube and mix kernels are refused on it.
    "950PR": ChipSpec(
        name="950PR", arch="dav-3510", aic_cores=32, aiv_cores=64, clock_mhz=1650,
        hbm_bytes=128 * GB, l2_bytes=192 * MB, ub_bytes=253952, l1_bytes=512 * KB,
        l0a_bytes=64 * KB, l0b_bytes=64 * KB, l0c_bytes=256 * KB, event_ids_per_position=8,
        cube_modeled=False, ub_bank_groups=8, ub_banks_per_group=2, ub_bank_bytes=16 * KB,
        vector_registers=True,
    ),
}

# Other names the facts use for a chip.
ALIASES = {"950": "950PR"}


class UnknownChipError(ValueError):
    pass


def get_chip(name: str) -> ChipSpec:
    try:
        return CHIPS[ALIASES.get(name, name)]
    except KeyError:
        close = difflib.get_close_matches(name, CHIPS, n=2)
        hint = f" (did you mean {' or '.join(close)}?)" if close else ""
        raise UnknownChipError(
            f"unknown chip {name!r}{hint}; known chips: {', '.join(CHIPS)}") from None
