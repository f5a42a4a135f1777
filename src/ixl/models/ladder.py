"""The decode ladder: rewrites of a decoder's graph, each a rung of its own that a run may
take or leave, so that its effect on launches and modeled time is measured on its own.

A decode step at batch 1 is bound by launches first and weight bytes second; each rung takes
launches out of a step without changing what it computes. The rungs so far:

- `merged-projections`: the MatMuls that read one activation (Q, K and V; gate and up) as one
  MatMul by their weights concatenated once at load (onnx.projections); in a decode step the
  Split of its result is views.
- `fused-rotary`: a layer's query and key rotations (rotate_half, six launches) as one
  ApplyRotaryPosEmb (onnx.rotary); it needs the shapes, so it applies to each gear.
"""

from __future__ import annotations

from collections.abc import Iterable

from ..hixl import ArgSpec, BadInput
from ..nixl import Graph
from ..onnx.projections import merge_projections
from ..onnx.rotary import fuse_rotary

RUNGS = {
    "merged-projections": "Q, K and V (and gate and up) as one MatMul each, the weights "
                          "concatenated once at load",
    "fused-rotary": "a layer's query and key rotary embeddings as one ApplyRotaryPosEmb",
}
EVERY = tuple(RUNGS)


def parse_rungs(text: str) -> tuple[str, ...]:
    """`--rungs`: rung names separated by commas, `all` (every rung) or `none`."""
    names = [n.strip() for n in text.split(",") if n.strip()]
    if names == ["all"]:
        return EVERY
    if names == ["none"]:
        return ()
    if not names or "all" in names or "none" in names:
        raise BadInput(f"--rungs {text!r}: give rung names separated by commas ("
                       f"{', '.join(RUNGS)}), all, or none")
    return check_rungs(names)


def check_rungs(rungs: Iterable[str]) -> tuple[str, ...]:
    """The rungs named, in the ladder's order; BadInput naming an unknown one."""
    rungs = tuple(dict.fromkeys(rungs))
    unknown = [r for r in rungs if r not in RUNGS]
    if unknown:
        raise BadInput(f"unknown decode rung {unknown[0]!r}: choose from {', '.join(RUNGS)}")
    return tuple(r for r in RUNGS if r in rungs)


def climb(graph: Graph, weights: frozenset[str], rungs: tuple[str, ...]
          ) -> tuple[Graph, frozenset[str]]:
    """`graph` with the `rungs` applied, and the names of the constants that stay on the
    device (a merged weight stays where all of its parts would have)."""
    if "merged-projections" in rungs:
        graph, merges = merge_projections(graph)
        weights = weights | {m.weight for m in merges if weights.issuperset(m.sources)}
    return graph, frozenset(n for n in weights if n in graph.constants)


def climb_gear(graph: Graph, specs: dict[str, ArgSpec], rungs: tuple[str, ...]) -> Graph:
    """A gear's graph (specialised: `specs` has its values' shapes) with the rungs that need
    shapes applied."""
    if "fused-rotary" in rungs:
        graph, _ = fuse_rotary(graph, specs)
    return graph
