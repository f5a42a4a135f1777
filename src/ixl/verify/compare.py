"""Compare a backend's output with the golden under the dtype's tolerance (R8)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..hixl import Tolerance


@dataclass(frozen=True)
class Comparison:
    ok: bool
    max_abs_err: float
    max_rel_err: float
    mismatches: int
    total: int
    first_mismatch: tuple[int, ...] | None
    got: float | None = None        # values at the first mismatch
    expected: float | None = None
    note: str = ""

    def summary(self) -> str:
        text = (f"max abs err {self.max_abs_err:.3g}, max rel err {self.max_rel_err:.3g}, "
                f"mismatches {self.mismatches} / {self.total}")
        if self.first_mismatch is not None:
            text += (f", first at {list(self.first_mismatch)}: got {self.got!r}, "
                     f"expected {self.expected!r}")
        return text + (f" ({self.note})" if self.note else "")


def compare(out: np.ndarray, ref: np.ndarray, tol: Tolerance) -> Comparison:
    """Elementwise |out - ref| <= atol + rtol*|ref|; NaN matches NaN and inf matches inf."""
    if out.shape != ref.shape:
        return Comparison(False, float("inf"), float("inf"), max(out.size, ref.size),
                          max(out.size, ref.size), None,
                          note=f"shape {out.shape} where the golden has {ref.shape}")
    if out.dtype == ref.dtype and out.dtype.itemsize in (2, 4, 8) and np.array_equal(
            out.view(f"u{out.dtype.itemsize}"), ref.view(f"u{ref.dtype.itemsize}")):
        return Comparison(True, 0.0, 0.0, 0, int(out.size), None)   # bit-identical
    wide = np.float32 if out.dtype.itemsize <= 2 and ref.dtype.itemsize <= 2 else np.float64
    o = out.astype(wide)
    r = ref.astype(wide)
    with np.errstate(invalid="ignore", over="ignore"):
        err = np.abs(o - r)
        same = (o == r) | (np.isnan(o) & np.isnan(r))
        close = same | (err <= tol.atol + tol.rtol * np.abs(r))
        finite = np.isfinite(err) & ~same
        rel = err / np.maximum(np.abs(r), np.finfo(wide).tiny)
    bad = ~close
    n_bad = int(bad.sum())
    first = None
    got = expected = None
    if n_bad:
        flat = int(np.flatnonzero(bad.reshape(-1))[0])
        first = tuple(int(i) for i in np.unravel_index(flat, out.shape)) if out.shape else ()
        got, expected = float(o.reshape(-1)[flat]), float(r.reshape(-1)[flat])
    max_abs = float(err[finite].max()) if finite.any() else 0.0
    max_rel = float(rel[finite].max()) if finite.any() else 0.0
    if n_bad and not finite[bad].all():      # NaN or inf where the golden has a number
        max_abs = max_rel = float("inf")
    return Comparison(n_bad == 0, max_abs, max_rel, n_bad, int(out.size), first, got, expected)
