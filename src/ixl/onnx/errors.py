"""Errors of the ONNX layer."""

from __future__ import annotations


class UnsupportedOnnx(ValueError):
    """The model uses an op, attribute, dtype or construct that ixl does not implement."""


class NeedsShapes(UnsupportedOnnx):
    """A node's conversion needs what the model leaves open until it runs: a static shape (an
    LSTM's sequence length) or a known value (a Loop's trip count). The backend converts such a
    model at its first run, with the inputs' concrete shapes (and, where those are not enough,
    the values of its small inputs), once per distinct set."""
