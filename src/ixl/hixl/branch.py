"""A branch of an If: what it produces from given input specs and how to compute it on the
host. Its own module (not the If's op module) so that the runtime and the ONNX layer can name
branches without loading the op database."""

from __future__ import annotations

from abc import ABC, abstractmethod

import numpy as np

from .schema import ArgSpec


class Branch(ABC):
    """A subgraph of an If: its inputs are the If's values (after the condition)."""

    @abstractmethod
    def infer(self, specs: list[ArgSpec]) -> list[ArgSpec]:
        """The specs of the outputs for these input specs (checks every node on the way)."""

    @abstractmethod
    def evaluate(self, arrays: list[np.ndarray]) -> list[np.ndarray]:
        """The outputs, computed on the host."""
