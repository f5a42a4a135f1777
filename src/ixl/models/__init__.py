"""Real models on the simulated chip: a committed weightless graph, weights from a package."""

from .minilm import MiniLM, ModelUnavailable

__all__ = ["MiniLM", "ModelUnavailable"]
