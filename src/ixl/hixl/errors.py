"""Errors of op semantics: what the caller asked for is not what the op accepts."""

from __future__ import annotations


class HixlError(ValueError):
    symptom = "shape mismatch"

    def __init__(self, message: str):
        super().__init__(f"{message} (see: ixl explain '{self.symptom}')")


class ShapeMismatch(HixlError):
    symptom = "shape mismatch"


class DtypeError(HixlError):
    symptom = "unsupported dtype"


class AttrError(HixlError):
    symptom = "bad attribute"


class UnknownOp(HixlError):
    symptom = "unknown op"
