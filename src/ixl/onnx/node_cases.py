"""ONNX's backend node cases per ixl op, and how many of them ixl passes.

The cases are ONNX's own (onnx 1.22.0 ships them as files): every node case whose op under test
is in ixl's list, its `_expanded` variants (the op's function body: a composition of other ops)
included, plus the PyTorch-converted Conv2d, Linear, Embedding and Softmax cases.

`python -m ixl.onnx.refresh_counts` runs them all through IxlBackend and rewrites
node_cases.json; `node_case_counts()` reads that file (for `ixl list`), so listing ops never
runs a model.
"""

from __future__ import annotations

import functools
import json
import re
import unittest
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import onnx

from ..executor import Backend as ExecBackend
from ..executor import Sweep, one_line, run_sweep, worker_local
from ..hixl import all_ops
from .translate import EXPANSIONS, NOT_ONNX

if TYPE_CHECKING:
    from onnx.backend.base import Backend

    from .backend import IxlBackend

COUNTS_FILE = Path(__file__).with_name("node_cases.json")
ONNX_NAMES = {"Max": "Maximum", "Min": "Minimum"}    # ONNX op -> ixl op, where names differ
PYTORCH_CASES = re.compile(r"^test_(Conv2d|Linear|Embedding|Softmax)(_.*)?$")
EXPANDED = re.compile(r"_expanded(_ver\d+)?$")


def ixl_op(onnx_op: str) -> str | None:
    """The ixl op of ixl's list that an ONNX op type is, if any (an ONNX op the import expands
    into ixl ops counts under its own name)."""
    if onnx_op in EXPANSIONS:
        return onnx_op
    name = ONNX_NAMES.get(onnx_op, onnx_op)
    return name if name in all_ops() and onnx_op not in NOT_ONNX else None


def _op_under_test(model_dir: str | None) -> str:
    """The op a case tests: its last node's (a node case has one node; a PyTorch case may
    prepare operands first, as Linear without bias transposes its weight)."""
    assert model_dir is not None                # node and PyTorch cases are model directories
    graph = onnx.load(Path(model_dir) / "model.onnx", load_external_data=False).graph
    return graph.node[-1].op_type


@functools.cache
def node_cases() -> dict[str, str]:
    """Case name (test_...) -> the ixl op it exercises, for every case of ixl's list."""
    from onnx.backend.test.loader import load_model_tests
    tested = {c.name: _op_under_test(c.model_dir) for c in load_model_tests(kind="node")}
    tested.update({c.name: _op_under_test(c.model_dir)
                   for c in load_model_tests(kind="pytorch-converted")
                   if PYTORCH_CASES.match(c.name)})
    cases = {}
    for name in sorted(tested):
        op = ixl_op(tested.get(EXPANDED.sub("", name), tested[name]))
        if op is not None:
            cases[name] = op
    return cases


def backend_test_cases(backend: type[Backend], module: str,
                       mark: Callable[[str, Callable], Callable] = lambda name, fn: fn
                       ) -> dict[str, type]:
    """onnx's BackendTest over node_cases() on the "CPU" device, as unittest classes (one per
    category); `mark(case_name, test_fn)` may wrap each test (xfail marks)."""
    import onnx.backend.test
    wanted = node_cases()
    classes = {}
    for category, cls in onnx.backend.test.BackendTest(backend, module).test_cases.items():
        methods = {name: mark(name.removesuffix("_cpu"), fn) for name, fn in vars(cls).items()
                   if name.endswith("_cpu") and name.removesuffix("_cpu") in wanted}
        if methods:
            classes[category] = type(category, (unittest.TestCase,),
                                     {**methods, "__module__": module})
    return classes


def debug_backend() -> type[IxlBackend]:
    """IxlBackend in debug mode (fresh buffers NaN-filled): a kernel that reads what it never
    wrote fails its case instead of passing by luck."""
    from .backend import IxlBackend

    class DebugIxlBackend(IxlBackend):
        @classmethod
        def prepare(cls, model, device="CPU", **kwargs):  # type: ignore[override]  # debug: True
            return super().prepare(model, device, debug=True, **kwargs)
    return DebugIxlBackend


@dataclass(frozen=True)
class NodeCase:
    """One ONNX node case through IxlBackend in debug mode, as a sweep task: passed, or failed
    with the assertion that stopped it (an exception of the backend is the task's error)."""

    name: str

    @property
    def id(self) -> str:
        return self.name

    def run(self) -> tuple[bool, dict]:
        test = worker_local(("onnx node cases",), _suite)[self.name]
        try:
            test.debug()          # raises what the case raises (SkipTest included)
        except AssertionError as e:
            return False, {"assertion": one_line(e)}
        return True, {}


def _suite() -> dict[str, unittest.TestCase]:
    """Case name -> its test, built once per worker process."""
    return {name.removesuffix("_cpu"): cls(name)
            for cls in backend_test_cases(debug_backend(), __name__).values()
            for name in vars(cls) if name.startswith("test_")}


def node_case_sweep(names: list[str] | None = None) -> Sweep:
    """The cases `names` (all of node_cases() by default) as a sweep."""
    names = list(node_cases()) if names is None else names
    return Sweep("onnx node cases", {"onnx": onnx.__version__, "mode": "debug",
                                     "cases": "all" if names == list(node_cases()) else names},
                 [NodeCase(name) for name in names])


def run_cases(backend: ExecBackend | None = None, names: list[str] | None = None
              ) -> dict[str, bool]:
    """Run the cases (all by default) through IxlBackend in debug mode, in this process unless
    a backend is given: case name -> passed."""
    return {o.id: o.ok for o in run_sweep(node_case_sweep(names), backend).outcomes}


def count(passed: dict[str, bool]) -> dict[str, dict[str, int]]:
    """Per ixl op: cases passed and cases in total."""
    counts: dict[str, dict[str, int]] = {}
    for name, op in node_cases().items():
        entry = counts.setdefault(op, {"passed": 0, "total": 0})
        entry["total"] += 1
        entry["passed"] += int(passed.get(name, False))
    return dict(sorted(counts.items()))


def node_case_counts() -> dict[str, dict[str, int]]:
    """Per ixl op, {"passed": n, "total": m} ONNX node cases, as last recorded."""
    if not COUNTS_FILE.exists():
        return {}
    return json.loads(COUNTS_FILE.read_text())["ops"]
