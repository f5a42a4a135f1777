"""Errors of what the caller asked for: not what the op accepts, or not a valid request at all."""

from __future__ import annotations


class HixlError(ValueError):
    symptom = "shape mismatch"

    def __init__(self, message: str) -> None:
        super().__init__(f"{message} (see: ixl explain '{self.symptom}')")


class ShapeMismatch(HixlError):
    symptom = "shape mismatch"


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
