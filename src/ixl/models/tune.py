"""`ixl tune --model minilm|smollm2`: every native op of the model tuned at the shapes the
model runs it, as one sweep of timing-only tasks (`profile.timing_task.TimingCase`): per
distinct case (op, input shapes and dtypes, attributes), the kernel's default configuration
and each point of its tuning space. Printed per case: the best configuration and its gain over
the default; `--save` stores the best ones in the tuning cache, as `ixl tune --save` does.

The cases come from one unfused run of the model: MiniLM timing-only on a short text (the
tokenizer pads every text up to 128 tokens to the 128-token bucket); SmolLM2 a short prompt's
prefill and one decode step (the decode shapes are the ones every later token repeats). The
run's records say which nodes ran natively and with which attributes; the graph's shape walk
gives each input's shape and dtype. Fused chains are not tuned here (`ixl tune OP --then OP2`
tunes a chain).
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from dataclasses import dataclass, replace

from rich.table import Table

from ..ascend import get_chip
from ..console import out
from ..executor import ERROR, Outcome, Sweep
from ..executor.display import print_summary
from ..executor.options import run_from_args
from ..hixl import ArgSpec, BadInput, get_op
from ..hixl.dtypes import name_of
from ..nixl import REGISTRY, Graph, GraphRecord, tuning_cache
from ..nixl.graph import Node
from ..onnx.passes import Known, propagate
from ..profile.timing_task import TimingCase
from .minilm import DTYPES as MINILM_DTYPES
from .minilm import MiniLM
from .smollm2 import DTYPES as SMOLLM2_DTYPES
from .smollm2 import SmolLM2

SAMPLE_TEXT = "Tuning runs every kernel of the model at the shapes it meets."
SAMPLE_PROMPT = "The capital of France is"
DEFAULT = ()            # a TimingCase config of no field set: the kernel's own choice, no cache
DOES_NOT_FIT = ("ConfigDoesNotFit",)


@dataclass(frozen=True)
class OpCase:
    """A distinct native launch of the model and how often one run makes it."""

    op: str
    specs: tuple[ArgSpec | None, ...]
    attrs: tuple[tuple[str, object], ...]
    launches: int

    def timing(self, chip: str, config: tuple) -> TimingCase:
        return TimingCase(chip, self.op, self.specs, self.attrs, config)

    def inputs(self) -> str:
        return " ".join("-" if s is None else f"{list(s.shape)}:{s.dtype}"
                        + ("" if s.value is None else f"={list(s.value)}") for s in self.specs)


def minilm_cases(chip: str, dtype: str) -> list[OpCase]:
    """The native launches of one unfused run of MiniLM, by distinct case, in run order."""
    model = MiniLM(chip, dtype)
    encoded = model.encode(SAMPLE_TEXT)
    _, record = model.run(encoded, fuse=False, timing_only=True)
    graph = model.rep(encoded.length).graph
    specs = {name: ArgSpec(value.shape, "int64")
             for name, value in encoded.feeds.items() if name in graph.inputs}
    return launch_cases([(record, graph, specs)], chip)


def smollm2_cases(chip: str, dtype: str) -> list[OpCase]:
    """The native launches of SmolLM2's prefill of a short prompt and of one decode step,
    unfused, by distinct case, in run order."""
    model = SmolLM2(chip, dtype)
    generation = model.generate(SAMPLE_PROMPT, max_new_tokens=2, fuse=False)
    decoder = model.decoder
    runs = []
    for record, length in zip(generation.records, (len(generation.prompt_ids), 1)):
        graph = decoder.gear(length, generation.capacity)
        specs = {name: ArgSpec((1, length), "int64") for name in graph.inputs[:2]}
        specs.update({name: ArgSpec(decoder.cache_shape(name, generation.capacity), dtype)
                      for name, _ in decoder.cache})
        specs.update({name: ArgSpec(decoder.graph.constants[name].shape,
                                    name_of(decoder.graph.constants[name].dtype))
                      for name in graph.inputs if name in decoder.weights})
        runs.append((record, graph, specs))
    return launch_cases(runs, chip)


def launch_cases(runs: list[tuple[GraphRecord, Graph, dict[str, ArgSpec]]], chip: str
                 ) -> list[OpCase]:
    """The native launches of graph runs (each with its graph and input specs), by distinct
    case, in run order; a case's `launches` counts them over all the runs."""
    cases: dict[str, OpCase] = {}
    for record, graph, specs in runs:
        known = propagate(graph, specs)
        nodes = {node.name: node for node in known.kept}
        for run in record.runs:
            if run.path != "native":
                continue
            node = nodes[run.nodes[0]]
            case = OpCase(run.op, _input_specs(node, known), tuple(sorted(run.attrs.items())),
                          1)
            key = case.timing(chip, DEFAULT).id          # attribute values may be lists
            cases[key] = replace(case, launches=cases[key].launches + 1) if key in cases \
                else case
    return list(cases.values())


def _input_specs(node: Node, known: Known) -> tuple[ArgSpec | None, ...]:
    """A node's input specs; a value the walk knows (a host input: a Slice's starts) rides in
    its spec, as a launch reads it."""
    schema = get_op(node.op)
    return tuple(None if not name else schema.spec_of(role, known.values[name])
                 if name in known.values else known.specs[name]
                 for name, role in zip(node.inputs, schema.input_names(len(node.inputs))))


@dataclass(frozen=True)
class TunableModel:
    name: str
    dtypes: tuple[str, ...]
    cases: Callable[[str, str], list[OpCase]]


MODELS = {"minilm": TunableModel("all-MiniLM-L6-v2", MINILM_DTYPES, minilm_cases),
          "smollm2": TunableModel("SmolLM2-135M-Instruct", SMOLLM2_DTYPES, smollm2_cases)}


def spread(points: list, most: int | None) -> list:
    """At most `most` of `points`, evenly spread over the list (all of them by default)."""
    if most is None or most >= len(points):
        return points
    return [points[i * len(points) // most] for i in range(most)]


def tune_plan(cases: list[OpCase], chip: str, max_points: int | None
              ) -> list[tuple[OpCase, list[TimingCase]]]:
    """Per case, its timing tasks: the default first, then the points of its tuning space."""
    spec = get_chip(chip)
    plan = []
    for case in cases:
        entry = REGISTRY.native(case.op)
        assert entry is not None        # the cases are the model's native launches
        space = spread(entry.tuning_space.points(spec), max_points)
        plan.append((case, [case.timing(chip, DEFAULT),
                            *(case.timing(chip, tuple(p.to_dict().items())) for p in space)]))
    return plan


def tune_sweep(plan: list[tuple[OpCase, list[TimingCase]]], model: str, chip: str, dtype: str,
               max_points: int | None) -> Sweep:
    return Sweep("tune model", {"model": model, "chip": chip, "dtype": dtype,
                                "max_points": max_points},
                 [task for _, tasks in plan for task in tasks])


@dataclass
class Tuned:
    """One case's outcome: the default's time, the best point (None: none beats it), or why
    the case could not be tuned."""

    case: OpCase
    default_us: float | None = None
    best_us: float | None = None
    config: dict | None = None
    why: str | None = None

    @property
    def gain(self) -> float | None:
        if self.default_us is None or not self.best_us:
            return None
        return self.default_us / self.best_us

    def to_json(self) -> dict:
        return {"op": self.case.op,
                "inputs": [None if s is None else {"shape": list(s.shape), "dtype": s.dtype,
                                                   **({} if s.value is None
                                                      else {"value": list(s.value)})}
                           for s in self.case.specs],
                "attrs": dict(self.case.attrs), "launches": self.case.launches,
                "default_us": self.default_us, "best_us": self.best_us, "gain": self.gain,
                "config": self.config, "why_not": self.why}


def best_of(case: OpCase, tasks: list[TimingCase], outcomes: dict[str, Outcome]) -> Tuned:
    """The fastest native point of `case` (the first of equals, in the space's order), when it
    beats the default (`tasks[0]`)."""
    default = outcomes[tasks[0].id]
    if default.status == ERROR:
        return Tuned(case, why=default.error_line())
    if default.found["path"] != "native":
        return Tuned(case, why=f"runs on the {default.found['path']} at its default")
    tuned = Tuned(case, default.found["time_us"], default.found["time_us"])
    for task in tasks[1:]:
        o = outcomes[task.id]
        if o.ok and o.found["path"] == "native" and o.found["time_us"] < tuned.best_us:
            assert task.config is not None          # the points after the default have one
            tuned.best_us, tuned.config = o.found["time_us"], dict(task.config)
    return tuned


def save(results: list[Tuned], chip: str) -> tuple[str | None, list[str]]:
    """Store each case's best configuration under its tuning-cache key (chip, op, input
    shapes, first input's dtype, as a launch looks it up). Attributes are not part of the key:
    cases that share a key but not their best configuration are left out and named."""
    by_key: dict[tuple, list[Tuned]] = {}
    for t in results:
        if t.why is None:
            shapes = tuple(None if s is None else s.shape for s in t.case.specs)
            dtype = next(s.dtype for s in t.case.specs if s is not None)
            by_key.setdefault((t.case.op, shapes, dtype), []).append(t)
    path, clashes = None, []
    for (op, shapes, dtype), group in by_key.items():
        configs = {json.dumps(t.config, sort_keys=True) for t in group}
        if len(configs) > 1:
            clashes.append(f"{op} {' '.join(map(str, shapes))} {dtype}")
        elif group[0].config is not None:
            path = str(tuning_cache.store(chip, op, list(shapes), dtype, group[0].config))
    return path, clashes


def cmd_tune_model(args: argparse.Namespace) -> int:
    given = [flag for flag, value in (("OP", args.op), ("--shape", args.shape),
                                      ("--then", args.then), ("--attr", args.attr)) if value]
    if given:
        raise BadInput(f"tune --model tunes the model's own ops at its shapes: drop "
                       f"{', '.join(given)}")
    model = MODELS[args.model]
    dtype = args.dtype or "float32"
    if dtype not in model.dtypes:
        raise BadInput(f"--dtype {dtype}: {model.name} runs in {', '.join(model.dtypes)}")
    if args.max_points is not None and args.max_points < 1:
        raise BadInput(f"--max-points {args.max_points}: give at least 1")
    chip = get_chip(args.chip).name
    plan = tune_plan(model.cases(chip, dtype), chip, args.max_points)
    report = run_from_args(args, tune_sweep(plan, model.name, chip, dtype, args.max_points),
                           "tuning", label=lambda task: task.op)
    results = [best_of(case, tasks, report.by_id) for case, tasks in plan]
    saved, clashes = save(results, chip) if args.save else (None, [])
    default_us = sum(t.default_us * t.case.launches for t in results if t.default_us)
    tuned_us = sum(t.best_us * t.case.launches for t in results if t.best_us)
    if args.json:
        print(json.dumps({"model": model.name, "chip": chip, "dtype": dtype,
                          "cases": [t.to_json() for t in results], "default_us": default_us,
                          "tuned_us": tuned_us, "saved": saved, "not_saved": clashes}))
        return 0
    print_table(results, model.name, chip, dtype)
    out.print(f"native launches of one run: {default_us:.1f} us at the default configurations, "
              f"{tuned_us:.1f} us tuned ({default_us / tuned_us:.2f}x)" if tuned_us else
              "no case could be tuned")
    if saved:
        out.print(f"stored in {saved} (the tiling uses them when no config is given)")
    for clash in clashes:
        out.print(f"not stored: {clash}: cases with other attributes share this cache key and "
                  f"disagree")
    print_summary(report, quiet=DOES_NOT_FIT)
    return 0


def print_table(results: list[Tuned], model: str, chip: str, dtype: str) -> None:
    table = Table(title=f"{model} ({dtype}), every native op at its shapes, on the modeled "
                        f"{chip}")
    for col in ("op", "inputs", "attributes", "launches", "default (us)", "best (us)", "gain",
                "best config"):
        table.add_column(col, justify="right" if col in ("launches", "default (us)",
                                                         "best (us)", "gain") else "left")
    for t in results:
        attrs = json.dumps(dict(t.case.attrs)) if t.case.attrs else ""
        if t.why:
            table.add_row(t.case.op, t.case.inputs(), attrs, str(t.case.launches), "-", "-",
                          "-", f"not tuned: {t.why}")
            continue
        config = ", ".join(f"{k} {v}" for k, v in t.config.items()) if t.config \
            else "the default is best"
        table.add_row(t.case.op, t.case.inputs(), attrs, str(t.case.launches),
                      f"{t.default_us:.2f}", f"{t.best_us:.2f}", f"{t.gain:.2f}x", config)
    out.print(table)
