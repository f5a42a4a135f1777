"""Errors of what the caller asked for: not what the op accepts, or not a valid request at all."""

from __future__ import annotations


class HixlError(ValueError):
    symptom = "shape mismatch"

    def __init__(self, message: str) -> None:
        super().__init__(f"{message} (see: ixl explain '{self.symptom}')")


class ShapeMismatch(HixlError):
    symptom = "shape mismatch"


def index_out_of_range(op: str, index: int, size: int, what: str) -> ShapeMismatch:
    """The error for one index outside [-size, size): the golden's, and that of a kernel or a
    runtime route that checks its indices (ScatterND's)."""
    return ShapeMismatch(f"{op}: index {index} is out of range for {what} of size {size} "
                         f"(allowed: {-size}..{size - 1})")


class DtypeError(HixlError):
    symptom = "unsupported dtype"


class AttrError(HixlError):
    symptom = "bad attribute"


class UnknownOp(HixlError):
    symptom = "unknown op"


class BadInput(HixlError, TypeError):
    """A value of the wrong kind: a Python argument, a command-line value, a file or an
    environment variable. A TypeError too, since most such mistakes are one."""

    symptom = "bad input"
