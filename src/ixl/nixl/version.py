"""The runtime's version and the rule for which kernels it may start (R6, R14)."""

from __future__ import annotations

RUNTIME_VERSION = "1.0.0"


def _major_minor(version: str) -> tuple[int, int]:
    parts = version.split(".")
    return int(parts[0]), int(parts[1]) if len(parts) > 1 else 0


def compatible(built_for: str, runtime: str = RUNTIME_VERSION) -> bool:
    """A kernel built for runtime M.m starts on runtime M.n with n >= m."""
    (bm, bn), (rm, rn) = _major_minor(built_for), _major_minor(runtime)
    return bm == rm and bn <= rn
