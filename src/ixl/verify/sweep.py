"""`ixl verify` as a sweep: one task per sample case and dtype, runnable in any worker.

A task names its case by the op and the case's index in the op's samples (the op database is
code, the same in every worker), so it stays a small picklable description even when the case
holds what does not pickle (an If's branch functions)."""

from __future__ import annotations

from dataclasses import dataclass

from ..executor import Outcome, Sweep, worker_local
from ..hixl import get_op
from ..nixl import device
from .cases import numbered_samples, run_case, sample_specs


@dataclass(frozen=True)
class VerifyCase:
    """Sample case `case` of `op` in `dtype`, against the golden on `chip` (debug or release
    mode), inputs drawn from `seed`."""

    op: str
    case: int
    dtype: str
    chip: str
    debug: bool
    seed: int

    @property
    def id(self) -> str:
        return f"{self.op}/{self.case}/{self.dtype}"

    @property
    def note(self) -> str:
        return get_op(self.op).samples[self.case].note

    def run(self) -> tuple[bool, dict]:
        schema = get_op(self.op)
        sample = schema.samples[self.case]
        dev = worker_local(("device", self.chip, self.debug),
                           lambda: device(self.chip, debug=self.debug))
        dev.flush_l2()          # a pure function of the task, whatever this worker ran before
        specs = sample_specs(dev, schema, sample, self.dtype)
        res = run_case(dev, schema, specs, sample.attrs, seed=self.seed, note=sample.note)
        return res.ok, {"row": res.to_json(),
                        "failures": [c.summary() for c in res.comparisons if not c.ok]}

    def row(self, outcome: Outcome) -> dict:
        """The case's `ixl verify --json` row: the comparison's, or for a case that raised,
        what it was and its error."""
        if outcome.result is not None:
            return outcome.result["row"]
        return {"op": self.op, "case": self.note, "dtype": self.dtype, "chip": self.chip,
                "status": "error", "error_type": outcome.error_type,
                "error": outcome.error_message}


def verify_sweep(ops: list[str] | None, chip: str, debug: bool, seed: int
                 ) -> Sweep[VerifyCase]:
    """Every sample case of `ops` (all ops by default) in each of its dtypes."""
    tasks = [VerifyCase(schema.name, index, dtype, chip, debug, seed)
             for schema, index, _, dtype in numbered_samples(ops)]
    return Sweep("verify", {"ops": ops or "all", "chip": chip,
                            "mode": "debug" if debug else "release", "seed": seed}, tasks)
