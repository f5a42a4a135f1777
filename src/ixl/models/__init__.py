"""Real models on the simulated chip: a committed weightless graph, weights from a package."""

from .minilm import MiniLM
from .smollm2 import Generation, SmolLM2
from .weights import ModelUnavailable

__all__ = ["MiniLM", "SmolLM2", "Generation", "ModelUnavailable"]
