"""A data-dependent If on the device: the host reads the condition back, then the chosen
branch runs as a graph of its own (native launches where its ops have kernels).

This is how a runtime runs an If it cannot fold: one synchronous copy of the condition to the
host (its modeled time is that copy, on the record's "host" path), then the branch's launches.
An If whose branches are not graphs (a numpy `FunctionBranch`) still runs on the shim.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..hixl import ArgSpec, get_op
from ..hixl.branch import Branch
from .record import RunRecord

if TYPE_CHECKING:
    from .device import Device
    from .graph import Graph, Node
    from .tensor import DeviceTensor

BRANCHES = ("then_branch", "else_branch")


class GraphBranch(Branch):
    """A branch that is an ixl graph: its inputs are the If's values, by position."""

    graph: Graph


def runs_as_graphs(node: Node) -> bool:
    """Whether this node is an If whose both branches can run on the device as graphs."""
    return node.op == "If" and all(isinstance(node.attrs.get(b), GraphBranch)
                                   for b in BRANCHES)


def choose_branch(device: Device, node: Node, args: list[DeviceTensor]
                  ) -> tuple[GraphBranch, RunRecord]:
    """Check the If's inputs, read its condition back and say which branch runs. In
    timing-only mode nothing is computed, so the condition is unknown: the then branch is the
    one timed."""
    schema = get_op("If")
    for role, t in zip(("cond", *("input",) * (len(args) - 1)), args):
        device._own(t, f"If {role}")
    schema.infer([ArgSpec(t.shape, t.dtype) for t in args], node.attrs)
    cond = args[0]
    taken = True if device.timing_only else bool(cond.numpy().reshape(-1)[0])
    branch = node.attrs[BRANCHES[0] if taken else BRANCHES[1]]
    reason = (f"the condition read back to the host; the "
              f"{'then' if taken else 'else'} branch runs on the device")
    record = RunRecord("If", device.chip.name, "host", [t.shape for t in args], cond.dtype,
                       reason=reason, attrs={}, nodes=[node.name],
                       host_us=device.backend.host_copy_us(cond.desc.nbytes))
    return branch, record
