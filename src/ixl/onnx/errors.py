"""Errors of the ONNX layer."""

from __future__ import annotations


class UnsupportedOnnx(ValueError):
    """The model uses an op, attribute, dtype or construct that ixl does not implement."""
