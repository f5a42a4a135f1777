"""The `ixl` command: parses, calls the library, prints. No logic of its own."""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import traceback
from collections.abc import Sequence
from typing import Any, NoReturn

import numpy as np
from rich.table import Table

from . import explain as explain_mod
from . import files, versions
from .arguments import seed
from .ascend import CHIPS, ChipError, UnknownChipError, get_chip
from .console import err, out, progress
from .executor import ERROR, FAILED, one_line
from .executor.display import print_summary
from .executor.options import add_sweep_options, run_from_args
from .hixl import ArgSpec, BadInput, HixlError, all_ops, get_op
from .hixl.dtypes import to_numpy
from .models.cli import add_parser as add_model_parser
from .models.minilm import ModelUnavailable
from .nixl import REGISTRY, NixlError, device, environment, log
from .nixl.views import VIEW_OPS
from .onnx.cli import add_parser as add_onnx_parser
from .onnx.translate import UnsupportedOnnx
from .profile import launch_metrics, plot_timeline, timing_run, write_shim_trace, write_trace
from .verify import CaseResult, host_bytes, run_case
from .verify.sweep import verify_sweep

# ixl's own errors: what the user asked for is wrong, and the message says what is allowed.
KNOWN_ERRORS = (HixlError, NixlError, ChipError, UnknownChipError, ModelUnavailable,
                UnsupportedOnnx)
EXIT_ERROR = 2
EXIT_INTERRUPTED = 130          # 128 + SIGINT, as shells report it
EXIT_BROKEN_PIPE = 141          # 128 + SIGPIPE


def parse_shape(text: str) -> tuple[int, ...]:
    t = text.strip().lower()
    if t in ("", "()", "scalar"):
        return ()
    parts = re.split(r"\s*[,x]\s*", t)
    if not all(p.isdigit() for p in parts):
        raise BadInput(f"shape {text!r} does not parse: give comma-separated non-negative "
                       f"integers such as 8192,8192 (or 'scalar')")
    return tuple(int(p) for p in parts)


def parse_attr(text: str, flag: str = "--attr") -> tuple[str, object]:
    """NAME=VALUE, the value as JSON (a bare word is a string)."""
    name, sep, value = text.partition("=")
    if not sep or not name:
        raise BadInput(f"{flag} {text!r} does not parse: use NAME=VALUE")
    try:
        return name, json.loads(value)
    except json.JSONDecodeError:
        return name, value


def parse_pairs(items: list[str], flag: str) -> dict:
    """Every NAME=VALUE of a repeated flag; a name given twice is refused, not overwritten."""
    pairs: dict = {}
    for item in items:
        name, value = parse_attr(item, flag)
        if name in pairs:
            raise BadInput(f"{flag} {name} is given twice ({pairs[name]!r} and {value!r}); "
                           f"give it once")
        pairs[name] = value
    return pairs


def _jsonable(value):
    """numpy values (array attributes such as Constant's) as plain JSON; any other attribute
    value (an If's branch) by its type name, which is all a reader can use."""
    if isinstance(value, (np.ndarray, np.generic)):
        return value.tolist()
    return f"<{type(value).__name__}>"


def _emit_json(obj) -> None:
    print(json.dumps(obj, indent=2, default=_jsonable))


# ---------------------------------------------------------------- list

def cmd_list(args: argparse.Namespace) -> int:
    from .onnx import node_case_counts
    counts = node_case_counts()
    rows: list[dict[str, Any]] = []
    for name, schema in all_ops().items():
        entry = REGISTRY.native(name)
        rows.append({
            "op": name, "tier": schema.tier, "family": schema.family,
            "path": "native" if entry else "view" if name in VIEW_OPS else "shim",
            "dtypes": list(schema.dtypes),
            "native_dtypes": list(entry.dtypes) if entry else [],
            "kernel": getattr(entry.kernel, "__name__", None) if entry else None,
            "inputs": list(schema.inputs), "attrs": list(schema.attrs),
            "onnx_node_cases": counts.get(name),
        })
    if args.json:
        _emit_json(rows)
        return 0
    table = Table(title=f"ixl ops ({len(rows)})")
    for col in ("op", "tier", "family", "path", "dtypes", "ONNX node cases"):
        table.add_column(col)
    for r in rows:
        path = {"native": "[green]native[/]", "view": "[green]view[/]"}.get(r["path"],
                                                                          "[yellow]shim[/]")
        cases = r["onnx_node_cases"]
        table.add_row(r["op"], r["tier"], r["family"], path, ", ".join(r["dtypes"]),
                      f"{cases['passed']}/{cases['total']}" if cases else "-")
    out.print(table)
    return 0


# ---------------------------------------------------------------- run

def _describe(res: CaseResult) -> list[str]:
    rec = res.record
    assert rec is not None                          # run_case keeps the run's record
    lines = []
    if res.path == "native":
        t = rec.tiling
        detail = f"{res.kernel}, {res.block_dim} blocks"
        if hasattr(t, "describe"):
            detail += f"; {t.describe()}"
        lines.append(f"  path: native ({detail})")
    elif res.path == "view":
        lines.append(f"  path: view ({res.reason})")
    else:
        lines.append(f"  path: shim ({res.reason})")
    for i, c in enumerate(res.comparisons):
        label = f"output {i}: " if len(res.comparisons) > 1 else ""
        lines.append(f"  {label}{c.summary()}")
    if rec.launch is not None:
        lines.append(f"  modeled time: {rec.time_us:.2f} us on {res.chip} "
                     f"(launch {rec.launch.launch_us:.2f} us + cores {rec.launch.core_us:.2f} us)")
    elif res.path in ("native", "view"):
        lines.append("  modeled time: 0 us (no launch)")
    else:
        lines.append(f"  modeled time: {rec.time_us:.2f} us on {res.chip} (host round trips "
                     f"of the shim, nothing overlapped)")
    return lines


def _metrics_table(m) -> Table:
    table = Table(title="profile (modeled)", show_header=True)
    table.add_column("metric")
    table.add_column("value", justify="right")
    for k, v in m.values.items():
        table.add_row(k, f"{v:.4g}" if isinstance(v, float) else str(v))
    table.add_row("instructions", ", ".join(f"{k} {n}" for k, n in m.instructions.items()))
    return table


def _profile_outputs(args: argparse.Namespace, rec) -> dict:
    """Metrics, trace and plot of one run; returns the JSON to merge into --json output."""
    extra: dict[str, Any] = {}
    if rec.launch is None:
        if args.plot or (args.trace and rec.path != "shim"):   # declined at tiling time
            asked = " and ".join(f for f, v in (("--trace", args.trace), ("--plot", args.plot))
                                 if v)
            raise BadInput(f"{asked}: nothing written: {rec.op} ran on the {rec.path} "
                           f"({rec.reason}), which launches no kernel")
        if args.trace:
            write_shim_trace(rec.op, rec.reason, rec.host_us, args.trace)
            extra["trace"] = args.trace
            if not args.json:
                out.print(f"trace written to {args.trace}: the shim's host span (no kernel "
                          f"launch to draw)")
        if args.profile and not args.json:
            out.print(f"profile: no kernel launch to profile ({rec.op} ran on the {rec.path}: "
                      f"{rec.reason})")
        return extra
    if args.profile:
        m = launch_metrics(rec.launch)
        extra["metrics"] = m.to_json()
        if not args.json:
            out.print(_metrics_table(m))
            out.print(f"diagnosis: {m.diagnosis}")
    if args.trace:
        write_trace(rec.launch, args.trace)
        extra["trace"] = args.trace
        if not args.json:
            out.print(f"trace written to {args.trace} (open in Perfetto or chrome://tracing)")
    if args.plot:
        plot_timeline(rec.launch, args.plot)
        extra["plot"] = args.plot
        if not args.json:
            out.print(f"timeline plot written to {args.plot}")
    return extra


def _values(args: argparse.Namespace, schema, names: list[str], shapes, dtypes) -> dict[str, tuple]:
    """--value NAME=JSON: the contents of an input, as many numbers as its shape holds."""
    values = parse_pairs(getattr(args, "value", []), "--value")
    unknown = set(values) - set(names)
    if unknown:
        raise BadInput(f"--value for {', '.join(sorted(unknown))}: {schema.name}'s inputs "
                       f"are {', '.join(names)}")
    out = {}
    for name, shape, dtype in zip(names, shapes, dtypes):
        if name not in values:
            continue
        try:
            array = np.asarray(values[name], dtype=np.float64).reshape(-1)
        except (TypeError, ValueError):
            raise BadInput(f"--value {name}={values[name]!r}: give JSON numbers such as 3 or "
                           f"[0, 1]") from None
        size = int(np.prod(shape, dtype=np.int64))
        if array.size != size:
            raise BadInput(f"--value {name}: {array.size} value(s) for an input of shape "
                           f"{list(shape)}, which holds {size}")
        if to_numpy(dtype).kind in "iub" and not np.array_equal(array, np.round(array)):
            raise BadInput(f"--value {name}: {name} is {dtype}, give whole numbers")
        out[name] = tuple(array.astype(to_numpy(dtype)).tolist())
    return out


def _call(args: argparse.Namespace):
    """The op, its input shapes, attributes, input specs and output specs from the command
    line: one --shape per input (or one for all), each input in the dtype the op gives it for
    --dtype (indices stay integers; optional inputs are left out unless given), --value
    NAME=JSON for inputs whose contents decide the output shape. The call is checked in full
    (shapes broadcast, attributes of the right kind) before anything is made."""
    schema = get_op(args.op)
    to_numpy(args.dtype)
    shapes = [parse_shape(s) for s in args.shape]
    required = max(len(schema.inputs) - schema.optional, 1)
    if len(shapes) == 1 and required > 1:      # one shape for every required input
        shapes = shapes * required
    names = schema.input_names(len(shapes))   # more shapes than inputs: refused here
    dtypes = schema.input_dtypes(args.dtype, len(shapes))
    values = _values(args, schema, names, shapes, dtypes)
    specs = [ArgSpec(s, d, values.get(n)) for s, d, n in zip(shapes, dtypes, names)]
    attrs = parse_pairs(args.attr, "--attr")
    out_specs = schema.infer(specs, attrs)
    return schema, shapes, attrs, specs, out_specs


def _refuse_untraceable(args: argparse.Namespace, schema) -> None:
    """--plot draws a kernel launch and --trace a launch or the shim's host span: refused at
    once for an op that has none."""
    if schema.name in VIEW_OPS:
        asked = [f for f, v in (("--trace", args.trace), ("--plot", args.plot)) if v]
        why = "is answered with a view of its input (no data moved)"
    elif REGISTRY.native(schema.name) is None:
        asked = ["--plot"] if args.plot else []
        why = "has no native kernel (it runs on the shim)"
    else:
        return
    if not asked:
        return
    raise BadInput(f"{' and '.join(asked)}: {schema.name} {why}, so there is no kernel launch "
                   f"to draw")


def cmd_run(args: argparse.Namespace) -> int:
    schema, shapes, attrs, specs, out_specs = _call(args)
    _refuse_untraceable(args, schema)
    dev = device(args.chip, debug=args.debug, timing_only=args.timing_only,
                 record=bool(args.trace or args.plot))
    try:
        what = f"{schema.name} {args.dtype} {' , '.join(str(list(s)) for s in shapes)}"
        dev.check_fits([*specs, *out_specs], what,
                       host_bytes=0 if args.timing_only else host_bytes(specs, out_specs))
        if args.timing_only:
            return _run_timing_only(args, dev, schema, specs, attrs, shapes)
        res = run_case(dev, schema, specs, attrs, seed=args.seed)
    finally:
        dev.close()
    if not args.json:
        status = "[green]PASS[/]" if res.ok else "[red]FAIL[/]"
        joined = " , ".join(str(list(s)) for s in shapes)
        out.print(f"{schema.name} {args.dtype} {joined} on {res.chip}: {status}")
        for line in _describe(res):
            out.print(line)
    extra = _profile_outputs(args, res.record)
    if args.json:
        _emit_json({**res.to_json(), **extra})
    return 0 if res.ok else 1


def _run_timing_only(args: argparse.Namespace, dev, schema, specs, attrs, shapes) -> int:
    rec = timing_run(dev, schema.name, specs, attrs)
    if not args.json:
        joined = " , ".join(str(list(s)) for s in shapes)
        out.print(f"{schema.name} {args.dtype} {joined} on {dev.chip.name}: TIMING ONLY "
                  f"(no data computed or compared)")
        path = f"native ({rec.kernel}, {rec.block_dim} blocks)" if rec.path == "native" \
            else f"shim ({rec.reason})"
        out.print(f"  path: {path}")
        out.print(f"  modeled time: {rec.time_us:.2f} us on {dev.chip.name}")
    extra = _profile_outputs(args, rec)
    if args.json:
        _emit_json({"op": schema.name, "shapes": [list(s) for s in shapes], "dtype": args.dtype,
                    "chip": dev.chip.name, "status": "timing-only", "path": rec.path,
                    "reason": rec.reason, "kernel": rec.kernel, "block_dim": rec.block_dim,
                    "max_abs_err": None, "max_rel_err": None,
                    "modeled_us": round(rec.time_us, 3), **extra})
    return 0


# ---------------------------------------------------------------- verify

def cmd_verify(args: argparse.Namespace) -> int:
    ops = [get_op(args.op).name] if args.op else None
    chip = get_chip(args.chip).name
    sweep = verify_sweep(ops, chip, debug=not args.release, seed=args.seed)
    report = run_from_args(args, sweep, "verifying",
                           label=lambda task: f"{task.op} {task.note[:30]} {task.dtype}")
    cases = [(task, report.by_id[task.id]) for task in sweep.tasks if task.id in report.by_id]
    if args.json:
        _emit_json([task.row(outcome) for task, outcome in cases])
        return 0 if report.all_ok else 1
    table = Table(title=f"sample cases on {chip} ({'release' if args.release else 'debug'} mode)")
    for col in ("op", "case", "dtype", "shapes", "path", "status", "max abs err", "max rel err"):
        table.add_column(col)
    for task, outcome in cases:
        r = task.row(outcome)
        if outcome.status == ERROR:
            table.add_row(r["op"], r["case"], r["dtype"], "-", "-", "[red]ERROR[/]", "-", "-")
            continue
        status = "[green]pass[/]" if outcome.ok else "[red]FAIL[/]"
        table.add_row(r["op"], r["case"], r["dtype"], " ".join("-" if s is None else str(s)
                                                               for s in r["shapes"]),
                      r["path"], status, f"{r['max_abs_err']:.3g}", f"{r['max_rel_err']:.3g}")
    out.print(table)
    failed = [(task, outcome) for task, outcome in cases if not outcome.ok]
    out.print(f"{len(cases) - len(failed)} passed, {len(failed)} failed")
    for task, outcome in failed:
        if outcome.status == FAILED:
            assert outcome.result is not None         # a failed case ran and says what it found
            out.print(f"[red]FAIL[/] {task.op} {task.note} {task.dtype}: "
                      + "; ".join(outcome.result["failures"]))
    print_summary(report)
    return 0 if report.all_ok else 1


# ---------------------------------------------------------------- tune

def cmd_tune(args: argparse.Namespace) -> int:
    from .nixl import tuning_cache
    from .profile.tune_sweep import LadderSweep
    if args.model:
        from .models.tune import cmd_tune_model
        return cmd_tune_model(args)
    if args.op is None or not args.shape:
        raise BadInput("tune: give an op and its --shape (or --model NAME to tune every op of "
                       "a model)")
    if args.max_points is not None:
        raise BadInput("--max-points goes with --model (the op's ladder sweeps its whole "
                       "tuning space)")
    args.dtype = args.dtype or "float16"
    for name in args.then:
        get_op(name)
    schema, shapes, attrs, specs, _ = _call(args)
    if REGISTRY.native(schema.name) is None:
        raise BadInput(f"{schema.name} has no native kernel to tune (it runs on the shim)")
    ladder = LadderSweep(get_chip(args.chip).name, schema.name, specs, attrs, args.then)
    sweep = ladder.sweep()
    if args.workers is None and args.ray is None:
        args.workers = 1        # a few dozen launches of milliseconds: no pool pays off
    report = run_from_args(args, sweep, "tuning")
    rows, chosen = ladder.ladder(report.outcomes)
    saved = None
    if args.save:
        saved = tuning_cache.store(args.chip, args.op, shapes, args.dtype, chosen.config)
    if args.json:
        _emit_json([r.to_json() for r in rows])
        return 0
    title = " then ".join([args.op, *args.then])
    table = Table(title=f"{title} {args.dtype} {' , '.join(str(list(s)) for s in shapes)} "
                        f"on the modeled {args.chip}")
    for col in ("version", "time (us)", "AI Core utilisation", "move share of time", "config"):
        table.add_column(col, justify="left" if col in ("version", "config") else "right")
    for r in rows:
        cfg = ", ".join(f"{k} {v}" for k, v in r.config.items())
        table.add_row(r.variant, f"{r.time_us:.1f}", f"{r.ai_core_util:.0%}",
                      f"{r.move_ratio:.0%}", cfg)
    out.print(table)
    chosen_cfg = ", ".join(f"{k} {v}" for k, v in chosen.config.items())
    out.print(f"chosen: {chosen.variant} ({chosen_cfg})")
    if saved:
        out.print(f"stored in {saved} for {args.op} (the tiling uses it when no config is given)")
    if args.workers != 1 or args.results:
        print_summary(report, quiet=("ConfigDoesNotFit",))
    return 0


# ---------------------------------------------------------------- calibrate

def cmd_calibrate(args: argparse.Namespace) -> int:
    from .calibration import MEASURED_CHIP, calibrate, no_measurements, provenance
    costs = provenance(args.chip)
    why = no_measurements(args.chip)
    if args.json:
        if why:
            _emit_json({"chip": args.chip, "measurements": [], "note": why,
                        "costs": [{"cost": c, "provenance": p} for c, p in costs]})
        else:
            _emit_json([p.to_json() for p in calibrate(args.chip)])
        return 0
    table = Table(title=f"costs of the modeled {args.chip}: what each value rests on")
    table.add_column("cost")
    table.add_column("provenance")
    for cost, source in costs:
        table.add_row(cost, source)
    out.print(table)
    if why:
        out.print(why)
        return 0
    with progress("calibrating") as update:
        points = calibrate(args.chip, lambda i, n, name: update(completed=i, total=n,
                                                                 description=name))
    table = Table(title=f"calibration on the modeled {args.chip} (measured on a real "
                        f"{MEASURED_CHIP})")
    for col in ("workload", "modeled (us)", "measured (us)", "ratio"):
        table.add_column(col, justify="left" if col == "workload" else "right")
    for p in points:
        table.add_row(p.name, f"{p.modeled_us:.1f}", f"{p.measured_us:.1f}", f"{p.ratio:.3f}")
    out.print(table)
    worst = max(abs(p.ratio - 1) for p in points)
    out.print(f"worst deviation {worst:.1%} (goal: every point within 10%)")
    return 0


# ---------------------------------------------------------------- env, explain

def cmd_env(args: argparse.Namespace) -> int:
    rep = versions.report()
    checks = versions.checks() if args.check else []
    if args.json:
        _emit_json({"versions": rep, "checks": [c.__dict__ for c in checks]})
    else:
        for k, v in rep.items():
            out.print(f"{k:>22}: {v}")
        for c in checks:
            mark = "[green]ok[/]" if c.ok else "[red]MISMATCH[/]"
            out.print(f"check {c.name}: {mark} ({c.detail})")
    bad = [c for c in checks if not c.ok]
    if bad:
        err.print("ixl: error: kernel start failed: " + "; ".join(c.detail for c in bad))
        return 1
    return 0


def cmd_explain(args: argparse.Namespace) -> int:
    entries = explain_mod.lookup(" ".join(args.symptom)) if args.symptom else explain_mod.ENTRIES
    if not entries:
        err.print(f"ixl: no entry for {' '.join(args.symptom)!r}; known symptoms: "
                  + ", ".join(e.symptom for e in explain_mod.ENTRIES))
        return 2
    table = Table(title="error quick reference", show_lines=True)
    for col in ("symptom", "likely cause", "where to look"):
        table.add_column(col)
    for e in entries:
        table.add_row(e.symptom, e.cause, e.where)
    out.print(table)
    return 0


# ---------------------------------------------------------------- parser

NEGATIVE_VALUE = re.compile(r"-\d")      # "-3,4", "-1": a value, not an option


class Parser(argparse.ArgumentParser):
    """A usage mistake is raised as BadInput, so that it leaves through the command's one error
    path as one line (argparse would print the usage too). An option's value may start with a
    minus sign and a digit (`--shape -3,4`): it is the option's value, as `--shape=-3,4` says,
    so that the value's own check answers (argparse would take it for an unknown option)."""

    def error(self, message: str) -> NoReturn:
        raise BadInput(f"{self.prog}: {message} (`{self.prog} --help` lists the options)")

    def parse_known_args(  # type: ignore[override]
            self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None,
    ) -> tuple[argparse.Namespace, list[str]]:
        given = list(sys.argv[1:] if args is None else args)
        return super().parse_known_args(self._negative_values_attached(given), namespace)

    def _negative_values_attached(self, args: list[str]) -> list[str]:
        takes_value = {o for a in self._actions if a.option_strings and a.nargs != 0
                       for o in a.option_strings}
        out, i = [], 0
        while i < len(args):
            if args[i] in takes_value and i + 1 < len(args) and NEGATIVE_VALUE.match(args[i + 1]):
                out.append(f"{args[i]}={args[i + 1]}")
                i += 2
            else:
                out.append(args[i])
                i += 1
        return out


def build_parser() -> argparse.ArgumentParser:
    p = Parser(prog="ixl", description=(
        "Port ops from their semantics (HIXL) to a runtime (NIXL) on a simulated Ascend "
        "AI Core: check against the golden, see where the time goes."))
    sub = p.add_subparsers(dest="command", required=True)

    s = sub.add_parser("list", help="ops with tier, native or shim, dtypes")
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd_list)

    s = sub.add_parser("run", help="run one op on random inputs and compare with the golden")
    s.add_argument("op")
    s.add_argument("--shape", action="append", required=True,
                   help="input shape such as 8192,8192; once per input, or once for all")
    s.add_argument("--dtype", default="float16",
                   help="float16, bfloat16 or float32 (default float16)")
    s.add_argument("--attr", action="append", default=[], metavar="NAME=VALUE",
                   help="op attribute (JSON value)")
    s.add_argument("--value", action="append", default=[], metavar="INPUT=JSON",
                   help="contents of an input that decides the output shape (k, axes, shape)")
    s.add_argument("--chip", default="910B1", help=f"one of {', '.join(CHIPS)} (default 910B1)")
    s.add_argument("--seed", type=seed, default=0,
                   help="seed of the random inputs (default 0)")
    s.add_argument("--debug", action="store_true",
                   help="debug mode: NaN-filled fresh buffers, truncated-copy and flag checks")
    s.add_argument("--timing-only", action="store_true",
                   help="skip the data math: only the timeline runs (profile huge shapes fast)")
    s.add_argument("--profile", action="store_true", help="print the launch's metrics")
    s.add_argument("--trace", metavar="FILE", help="write a Chrome trace (JSON) of the launch")
    s.add_argument("--plot", metavar="FILE.png", help="draw the pipeline timeline")
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd_run)

    s = sub.add_parser("verify", help="run every sample case of the op database (debug mode)")
    s.add_argument("--op", help="only this op")
    s.add_argument("--chip", default="910B1")
    s.add_argument("--seed", type=seed, default=0)
    s.add_argument("--release", action="store_true", help="release mode instead of debug")
    s.add_argument("--json", action="store_true")
    add_sweep_options(s)
    s.set_defaults(func=cmd_verify)

    s = sub.add_parser("tune", help="sweep buffers, tile and cores; print the tuning ladder")
    s.add_argument("op", nargs="?")
    s.add_argument("--shape", action="append")
    s.add_argument("--dtype", help="the op's dtype (default float16); with --model, the "
                                   "model's (default float32)")
    s.add_argument("--then", action="append", default=[], metavar="OP",
                   help="a following elementwise op: adds the fused version to the ladder")
    s.add_argument("--attr", action="append", default=[], metavar="NAME=VALUE")
    s.add_argument("--chip", default="910B1")
    s.add_argument("--save", action="store_true",
                   help="store the chosen configuration in the tuning cache")
    s.add_argument("--model", choices=("minilm", "smollm2"),
                   help="tune every native op of the model at the shapes it runs them (instead "
                        "of OP --shape)")
    s.add_argument("--max-points", type=int, metavar="N",
                   help="with --model: at most N configurations of each op's tuning space, "
                        "evenly spread over it (default: all)")
    s.add_argument("--json", action="store_true")
    add_sweep_options(s)
    s.set_defaults(func=cmd_tune)

    s = sub.add_parser("calibrate", help="the measured 910B1 workloads, modeled vs measured; "
                                         "each chip's costs and what they rest on")
    s.add_argument("--chip", default="910B1", help="chip model to run them on (default 910B1)")
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd_calibrate)

    s = sub.add_parser("env", help="versions of the runtime, chip model, kernels and toolkit")
    s.add_argument("--check", action="store_true", help="exit 1 when versions do not align")
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd_env)

    s = sub.add_parser("explain", help="the error quick reference: likely cause, where to look")
    s.add_argument("symptom", nargs="*", help="e.g. 'aicore memory out of bound'")
    s.set_defaults(func=cmd_explain)

    add_onnx_parser(sub)
    add_model_parser(sub)
    return p


def check_outputs(args: argparse.Namespace) -> None:
    """Every output path, as it will really be written, checked before anything runs."""
    for flag, written in (("trace", str), ("plot", files.plot_path), ("out", files.npy_path)):
        path = getattr(args, flag, None)
        if path:
            files.check_output_file(f"--{flag}", path)      # as given: a directory is refused
            setattr(args, flag, written(path))
            files.check_output_file(f"--{flag}", written(path))
    save = getattr(args, "save", None)
    if isinstance(save, str):                 # a directory of outputs
        files.check_output_dir("--save", save)
    elif save:                                # `tune --save`: the tuning cache
        from .nixl import tuning_cache
        files.check_output_file("--save (the tuning cache, IXL_TUNING_CACHE)",
                                tuning_cache.cache_path(), make_parents=True)


def main(argv: list[str] | None = None) -> int:
    """The one error path: ixl's own errors print `ixl: error: ...` with their `ixl explain`
    hint; anything else prints one line asking for IXL_LOG=debug, which shows the traceback;
    Ctrl-C prints one line and exits 130."""
    try:
        args = build_parser().parse_args(argv)
        environment.check()
        check_outputs(args)
        return args.func(args)
    except KeyboardInterrupt:
        err.print("ixl: interrupted", markup=False)
        return EXIT_INTERRUPTED
    except BrokenPipeError:     # the reader stopped early (`ixl list | head`): nothing to say
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_BROKEN_PIPE
    except KNOWN_ERRORS as e:
        message = one_line(e)
        if "ixl explain" not in message:
            message += " (see: ixl explain 'bad input')"
        err.print(f"ixl: error: {message}", markup=False)
        return EXIT_ERROR
    except Exception as e:      # noqa: BLE001  (the one place an unexpected error ends)
        if log.enabled():
            traceback.print_exc()
        err.print(f"ixl: error: {type(e).__name__}: {one_line(e)} (unexpected: run with "
                  f"IXL_LOG=debug to see the traceback)", markup=False)
        return EXIT_ERROR


if __name__ == "__main__":
    sys.exit(main())
