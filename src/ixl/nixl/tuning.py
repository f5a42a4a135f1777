"""The tuning configuration of a launch, and a kernel's tuning space (R10).

A `TuningConfig` says how a kernel may tile: slots per queue, the tile (in elements, or as a
fraction of the largest that fits), the cores, and the accumulation type of reductions. Launch
validates it once (a dict, as `dev.run(..., config={...})` and the tuning cache give it, is
converted there) and hands it to the host tiling function, whose tiling data carries it. A field
left unset means the kernel's default. The Cube's kernels (MatMul, Gemm, Conv) add theirs: the
base block of one Mmad (base_m, base_n, base_k), the L1 chunk in base_k steps (step_k), L0
double buffering (l0_buffers; buffer_num is L1's) and the float32 precision (hf32).

A `TuningSpace` is the set of configurations `ixl tune` sweeps for a kernel, declared as data on
its KernelEntry.

Two errors belong here: a host tiling raises `DoesNotFit` when a case does not fit the chip at a
configuration (UB, event ids); at the default configuration the runtime then runs the shim
(visibly), and for a configuration the caller chose launch raises `ConfigDoesNotFit`, which is
what a tuner may skip, and nothing else.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from typing import Any

from ..ascend.chips import ChipSpec
from .errors import KernelDeclined, NixlError

DEFAULT_BUFFER_NUM = 2          # double buffering: moves overlap compute (R10)
ACCUMULATE = ("float32", "float16")


class InvalidTuningConfig(NixlError, ValueError):
    """A configuration that is no configuration: an unknown field or a value out of range."""

    symptom = "bad attribute"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.detail = message          # without the explain hint, to quote in a longer message


class DoesNotFit(KernelDeclined):
    """A host tiling's clean refusal: this case does not fit the chip at this configuration."""


class ConfigDoesNotFit(NixlError):
    """A configuration the caller chose does not fit this case."""

    symptom = "ub overflow"


@dataclass(frozen=True)
class TuningConfig:
    buffer_num: int | None = None   # slots per queue: 1 single, 2 double buffering, 4 ...
    tile: int | None = None         # elements per tile (elementwise: whole float16 repeats)
    tile_div: int | None = None     # or the largest tile that fits, divided by this
    block_dim: int | None = None    # at most this many cores
    accumulate: str | None = None   # reductions' accumulation type (float16: R13's pitfall)
    base_m: int | None = None       # the Cube: rows of one Mmad (and of one output tile)
    base_n: int | None = None       # ... its columns
    base_k: int | None = None       # ... and its K
    step_k: int | None = None       # base_k steps per L1 chunk of A and B
    l0_buffers: int | None = None   # L0A / L0B slots: 1 single, 2 double buffering
    hf32: bool | None = None        # float32 products as HF32 (2x the rate, 11-bit mantissas)
    bank_gaps: bool | None = None   # UB buffers placed apart from bank conflicts (False: back
    #                                 to back, as consecutive InitBuffer calls place them)

    def __post_init__(self) -> None:
        for name in ("buffer_num", "tile", "tile_div", "block_dim", "base_m", "base_n",
                     "base_k", "step_k", "l0_buffers"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int)
                                      or value < 1):
                raise InvalidTuningConfig(f"tuning field {name} must be a positive integer, "
                                          f"got {value!r}")
        if self.tile is not None and self.tile_div is not None:
            raise InvalidTuningConfig("give tile or tile_div, not both (tile_div divides the "
                                      "largest tile that fits; tile sets it)")
        for name in ("hf32", "bank_gaps"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, bool):
                raise InvalidTuningConfig(f"tuning field {name} must be true or false, got "
                                          f"{value!r}")
        if self.l0_buffers is not None and self.l0_buffers > 2:
            raise InvalidTuningConfig(f"tuning field l0_buffers must be 1 or 2 (single or "
                                      f"double buffering of L0A and L0B), got {self.l0_buffers}")
        if self.accumulate is not None and self.accumulate not in ACCUMULATE:
            raise InvalidTuningConfig(f"tuning field accumulate must be one of "
                                      f"{', '.join(ACCUMULATE)}, got {self.accumulate!r}")

    @classmethod
    def of(cls, value: TuningConfig | Mapping | None, chip: ChipSpec | None = None
           ) -> TuningConfig:
        """The configuration `value` stands for (None: every default), checked against the
        chip's limits when one is given."""
        if value is None:
            config = cls()
        elif isinstance(value, cls):
            config = value
        elif isinstance(value, Mapping):
            unknown = [k for k in value if k not in FIELDS]
            if unknown:
                raise InvalidTuningConfig(f"unknown tuning field {unknown[0]!r}; the fields "
                                          f"are {', '.join(FIELDS)}")
            config = cls(**{k: _plain(v) for k, v in value.items()})
        else:
            raise InvalidTuningConfig(f"a tuning config is a dict or a TuningConfig, got "
                                      f"{type(value).__name__}")
        if chip is not None:
            config.check(chip)
        return config

    def check(self, chip: ChipSpec) -> None:
        most = chip.event_ids_per_position
        if self.buffer_num is not None and self.buffer_num > most:
            raise InvalidTuningConfig(f"tuning field buffer_num must be from 1 to {most} (the "
                                      f"event ids of one queue position on {chip.name}), got "
                                      f"{self.buffer_num}")
        for name in ("base_m", "base_n", "base_k"):
            value = getattr(self, name)
            if value is not None and (value % chip.fractal_rows or value > chip.mmad_max_mnk):
                raise InvalidTuningConfig(
                    f"tuning field {name} must be a multiple of {chip.fractal_rows} (a fractal) "
                    f"up to {chip.mmad_max_mnk} (an Mmad's m, n, k), got {value}")

    def only(self, allowed: tuple[str, ...], kernels: str) -> TuningConfig:
        """Self, when it sets no field but `allowed`: a kernel never ignores a field."""
        given = [k for k, v in asdict(self).items() if v is not None and k not in allowed]
        if given:
            raise InvalidTuningConfig(f"{kernels} take the tuning fields "
                                      f"{', '.join(allowed)}; not {given[0]}")
        return self

    @property
    def buffers(self) -> int:
        """Slots per queue."""
        return self.buffer_num or DEFAULT_BUFFER_NUM

    @property
    def divisor(self) -> int:
        """The fraction of the largest tile that fits to use (1: all of it)."""
        return self.tile_div or 1

    def cores(self, chip: ChipSpec) -> int:
        """The cores the work may spread over."""
        return min(self.block_dim or chip.aiv_cores, chip.aiv_cores)

    def to_dict(self) -> dict:
        """The fields set, as the tuning cache and the run records keep them."""
        return {k: v for k, v in asdict(self).items() if v is not None}


FIELDS = tuple(f.name for f in fields(TuningConfig))


def _plain(value):
    """JSON and numpy integers alike (a float that is an integer stays a float: refused)."""
    return int(value) if hasattr(value, "dtype") and value.dtype.kind in "iu" else value


LADDER = (("single buffer", {"buffer_num": 1}), ("double buffer", {"buffer_num": 2}),
          ("4-slot pipeline", {"buffer_num": 4}))


@dataclass(frozen=True)
class TuningSpace:
    """The configurations `ixl tune` sweeps: every combination of the values given, in this
    order: slots per queue, L0 slots, the Cube's base block, fractions of the largest tile and
    fractions of the cores (block_dim = cores // core_div, counted in `core_kind`). A field
    with no values is not swept (the kernel's default). `ladder` names the configurations the
    tuning ladder shows before the best of the sweep."""

    buffer_num: tuple[int, ...] = (1, 2, 4, 8)
    tile_div: tuple[int, ...] = (1, 2, 4)
    core_div: tuple[int, ...] = (1, 2)
    l0_buffers: tuple[int, ...] = ()
    base_m: tuple[int, ...] = ()
    base_n: tuple[int, ...] = ()
    base_k: tuple[int, ...] = ()
    core_kind: str = "aiv"          # what block_dim counts: "aiv" or "aic" cores
    ladder: tuple = LADDER

    def points(self, chip: ChipSpec) -> list[TuningConfig]:
        cores = chip.aic_cores if self.core_kind == "aic" else chip.aiv_cores
        axes = [("buffer_num", self.buffer_num), ("l0_buffers", self.l0_buffers),
                ("base_m", self.base_m), ("base_n", self.base_n), ("base_k", self.base_k),
                ("tile_div", self.tile_div),
                ("block_dim", tuple(cores // c for c in self.core_div))]
        points: list[dict[str, Any]] = [{}]
        for name, values in axes:
            if values:
                points = [{**p, name: v} for p in points for v in values]
        return [TuningConfig(**p) for p in points]
