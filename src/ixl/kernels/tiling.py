"""Host tiling helpers shared by every kernel: tile size from the chip (R11), core split (R7).

Nothing here holds a chip number: UB capacity, vector width and alignment come from the spec,
so a different chip gives a different tile with no code change.
"""

from __future__ import annotations

from collections.abc import Callable

from ..ascend.chips import ChipSpec
from ..intmath import ceil_div, round_up
from ..nixl.tuning import DoesNotFit, TuningConfig


class Tiling:
    """What every tiling dataclass is: tiling data that carries the TuningConfig it was planned
    for (its `config` field) and answers the fields tools read of any tiling."""

    config: TuningConfig

    @property
    def buffer_num(self) -> int:
        """Slots per queue."""
        return self.config.buffers

    def describe(self) -> str:
        """The host tiling's choices in one line (`ixl run`, the debug log, a sweep's failure
        say which path ran); a tiling with strategies of its own names them."""
        tile = getattr(self, "tile", None)
        size = f"tile {tile}, " if isinstance(tile, int) else ""
        return f"{size}buffers {self.buffer_num}"


def tile_elements(chip: ChipSpec, *, queued_bytes: int, buffer_num: int,
                  scratch_bytes: int = 0, vector_itemsize: int, reserved_bytes: int = 0) -> int:
    """Elements per tile so that every buffer fits in UB.

    `queued_bytes`: bytes per element summed over the queued tensors (each gets `buffer_num`
    slots); `scratch_bytes`: bytes per element of single-buffered scratch (TBuf);
    `reserved_bytes`: UB set aside first for fixed-size buffers. The tile is a whole number of
    vector repeats of the compute type, so full tiles never need a mask.
    """
    per_element = queued_bytes * buffer_num + scratch_bytes
    lanes = chip.lanes(vector_itemsize)
    tile = (chip.ub_bytes - reserved_bytes) // per_element // lanes * lanes
    if tile <= 0:
        raise DoesNotFit(f"no tile fits: {per_element} bytes per element beside "
                         f"{reserved_bytes} reserved, against {chip.ub_bytes} bytes of UB")
    return tile


def split_cores(total: int, chip: ChipSpec, itemsize: int, max_cores: int | None = None
                ) -> tuple[int, int]:
    """(block_dim, elements per core): contiguous ranges whose starts are burst-aligned in GM.

    The last core takes the remainder; no core gets an empty range, and an empty tensor gets
    no core at all (the launch is skipped).
    """
    if total <= 0:
        return 0, 0
    cores = min(max_cores or chip.aiv_cores, chip.aiv_cores)
    align = max(1, chip.gm_alloc_align // itemsize)
    per_core = round_up(ceil_div(total, cores), align)
    return ceil_div(total, per_core), per_core


def split_units(units: int, chip: ChipSpec, max_cores: int | None = None) -> tuple[int, int]:
    """(block_dim, units per core) for work that comes in indivisible units (rows, columns):
    contiguous ranges, the last core taking the remainder; no units, no cores."""
    if units <= 0:
        return 0, 0
    cores = min(max_cores or chip.aiv_cores, chip.aiv_cores)
    per_core = ceil_div(units, cores)
    return ceil_div(units, per_core), per_core


def largest_fit(bytes_of: Callable[[int], int], limit: int, upper: int) -> int:
    """The largest n in [0, upper] with bytes_of(n) <= limit, for a bytes_of that grows with n."""
    lo, hi = 0, upper
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if bytes_of(mid) <= limit:
            lo = mid
        else:
            hi = mid - 1
    return lo


def ub_total(sizes: dict, queued: tuple[str, ...], buffers: int, chip: ChipSpec) -> int:
    """UB bytes of a plan's buffers (name -> bytes): each rounded up to a block, as InitBuffer
    rounds it, the queued ones `buffers` times."""
    return sum(round_up(n, chip.block_bytes) * (buffers if name in queued else 1)
               for name, n in sizes.items())


def split_bands(planes: int, rows: int, bytes_of: Callable[[int], int], chip: ChipSpec,
                config: TuningConfig, what: str) -> tuple[int, int, int]:
    """(band, block_dim, units per core) for `planes` independent planes of `rows` output rows
    each, cut into bands of output rows whose UB bytes (`bytes_of(band)`, at the config's tile
    fraction) fit; bands short enough that every core gets a unit when there are fewer planes
    than cores. `what` names one row for the refusal when none fits."""
    fit = largest_fit(lambda b: config.divisor * bytes_of(b) if b else 0, chip.ub_bytes, rows)
    if fit == 0:
        raise DoesNotFit(f"one output row of {what} does not fit in {chip.ub_bytes} bytes of "
                         f"UB at {config.buffers} buffers")
    band = min(fit, ceil_div(rows, ceil_div(config.cores(chip), planes)))
    block_dim, per_core = split_units(planes * ceil_div(rows, band), chip, config.block_dim)
    return band, block_dim, per_core
