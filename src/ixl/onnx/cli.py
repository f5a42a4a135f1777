"""`ixl onnx run MODEL.onnx` and `ixl onnx inspect MODEL.onnx` (thin: parse, call, print)."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import onnx
from rich.table import Table

from ..arguments import seed
from ..ascend import CHIPS
from ..console import out
from ..files import load_npy
from ..hixl import BadInput, to_numpy
from .backend import IxlBackend, IxlBackendRep, RunConvertedRep, check_shape, load_model
from .convert import ValueSpec
from .reference import compare_outputs, reference_outputs
from .support import inspect_model


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """Add `onnx run` and `onnx inspect` to the `ixl` command's subparsers."""
    parser = subparsers.add_parser("onnx", help="run ONNX models on the simulated chip")
    sub = parser.add_subparsers(dest="onnx_command", required=True)
    run = sub.add_parser("run", help="run MODEL.onnx node by node (native kernels or the shim)")
    run.add_argument("model", help="path of an .onnx file")
    run.add_argument("--input", action="append", default=[], metavar="NAME=FILE.npy",
                     help="a model input from a .npy file; once per input")
    run.add_argument("--random", action="store_true",
                     help="generate the inputs not given: floats uniform in [-1, 1), integers "
                          "0 or 1 (valid token ids, masks, class indices), random booleans")
    run.add_argument("--dim", action="append", default=[], metavar="NAME=SIZE",
                     help="the size of a named (symbolic) input dim, for --random")
    run.add_argument("--seed", type=seed, default=0, help="seed of --random (default 0)")
    run.add_argument("--bucket", action="append", default=[], metavar="[NAME=]SIZE",
                     help="pad named input dims up to a multiple of SIZE with zeros (every "
                          "named dim, or only NAME) and crop the outputs' dims of the same "
                          "names: fewer distinct shapes to prepare, for models that mask "
                          "padding (as an attention mask does)")
    run.add_argument("--fixed", action="append", default=[], metavar="NAME",
                     help="treat input NAME's value as known in advance: what depends only on "
                          "it (an attention mask's arithmetic) folds into constants")
    run.add_argument("--check", action="store_true",
                     help="compare every output with onnxruntime (when installed: ixl[ort]) "
                          "or onnx's ReferenceEvaluator: max error and cosine")
    run.add_argument("--tolerance", type=float, default=1e-3,
                     help="--check passes where |ixl - ref| <= tol * (1 + |ref|) (default 1e-3)")
    run.add_argument("--no-optimize", action="store_true",
                     help="run the graph as converted: no folding, no fused patterns")
    run.add_argument("--fuse", action="store_true",
                     help="run chains of elementwise nodes as fused kernels")
    run.add_argument("--chip", default="910B1", help=f"one of {', '.join(CHIPS)} (default 910B1)")
    run.add_argument("--profile", action="store_true",
                     help="per node: the ixl op, native or shim, and the modeled time")
    run.add_argument("--debug", action="store_true", help="debug mode (NaN-filled buffers, ...)")
    run.add_argument("--save", metavar="DIR", help="write each output to DIR/NAME.npy")
    run.set_defaults(func=cmd_run)
    ins = sub.add_parser("inspect", help="list MODEL.onnx's op types and how each would run "
                                         "(native, shim, view, unsupported), running nothing")
    ins.add_argument("model", help="path of an .onnx file")
    ins.set_defaults(func=cmd_inspect)


def _pairs(items: list[str], flag: str, form: str) -> dict[str, str]:
    """NAME=VALUE items, each name once."""
    pairs: dict[str, str] = {}
    for item in items:
        name, sep, text = item.partition("=")
        if not sep or not name or not text:
            raise BadInput(f"{flag} {item!r} does not parse: use {form}")
        if name in pairs:
            raise BadInput(f"{flag} {name} is given twice ({pairs[name]} and {text}); give "
                             f"each once")
        pairs[name] = text
    return pairs


def load_array(name: str, file: str) -> np.ndarray:
    return load_npy(file, f"--input {name}")


def parse_inputs(items: list[str]) -> dict[str, np.ndarray]:
    return {name: load_array(name, file)
            for name, file in _pairs(items, "--input", "NAME=FILE.npy").items()}


def random_input(spec: ValueSpec, dims: dict[str, int], rng: np.random.Generator) -> np.ndarray:
    shape = []
    for d in spec.shape:
        if isinstance(d, int):
            shape.append(d)
        elif d in dims:
            shape.append(dims[d])
        else:
            raise BadInput(f"--random: input {spec.name} has the named dim {d!r}; give its "
                             f"size with --dim {d}=SIZE")
    dtype = to_numpy(spec.dtype)
    if dtype.kind == "b":
        return rng.random(shape) < 0.5
    if dtype.kind in "iu":
        return rng.integers(0, 2, shape).astype(dtype)
    return rng.uniform(-1, 1, shape).astype(dtype)


def gather_feeds(rep: IxlBackendRep | RunConvertedRep, args: argparse.Namespace
                 ) -> dict[str, np.ndarray]:
    feeds = parse_inputs(args.input)
    declared = {s.name: s for s in rep.converted.inputs}
    unknown = sorted(set(feeds) - set(declared))
    if unknown:
        raise BadInput(f"inputs: the model takes {', '.join(map(str, declared.values()))}; "
                         f"unknown: {', '.join(unknown)}")
    missing = [s for name, s in declared.items() if name not in feeds]
    if missing and not args.random:
        raise BadInput(f"inputs: the model takes {', '.join(map(str, declared.values()))}; "
                         f"missing: {', '.join(map(str, missing))} (give --input NAME=FILE.npy "
                         f"or --random)")
    dims = {}
    for name, text in _pairs(args.dim, "--dim", "NAME=SIZE").items():
        if not text.isdigit():
            raise BadInput(f"--dim {name}={text}: the size must be a non-negative integer")
        dims[name] = int(text)
    rng = np.random.default_rng(args.seed)
    for spec in missing:
        feeds[spec.name] = random_input(spec, dims, rng)
    for name in args.fixed:
        if name not in declared:
            raise BadInput(f"--fixed {name}: the model has no input {name} (inputs: "
                             f"{', '.join(declared)})")
    for name, spec in declared.items():
        check_shape(spec, feeds[name].shape)
    return feeds


def parse_buckets(items: list[str]) -> dict[str, int]:
    """--bucket SIZE (every named dim) or NAME=SIZE."""
    buckets: dict[str, int] = {}
    for item in items:
        name, sep, text = item.rpartition("=")
        name = name if sep else "*"
        if not text.isdigit() or int(text) < 1 or (sep and not name):
            raise BadInput(f"--bucket {item!r} does not parse: use SIZE or NAME=SIZE, SIZE a "
                           f"positive integer")
        if name in buckets:
            raise BadInput(f"--bucket {name} is given twice")
        buckets[name] = int(text)
    return buckets


def prepared(model: onnx.ModelProto, args: argparse.Namespace
             ) -> tuple[dict, IxlBackendRep | RunConvertedRep]:
    """The feeds, and the model as it will run (optimised for these input shapes, padded to
    their buckets, and fixed values unless --no-optimize)."""
    buckets = parse_buckets(args.bucket)
    rep = IxlBackend.prepare(model, chip=args.chip, debug=args.debug, buckets=buckets)
    feeds = gather_feeds(rep, args)
    rep.feeds(feeds)                       # dtypes and shapes against the declared ones
    if args.no_optimize:
        return feeds, rep
    return feeds, rep.optimised(feeds, frozenset(args.fixed))


def cmd_run(args: argparse.Namespace) -> int:
    model = load_model(args.model)
    feeds, runner = prepared(model, args)
    results = runner.run({s.name: feeds[s.name] for s in runner.converted.inputs},
                         fuse=args.fuse)
    names = [s.name for s in runner.converted.outputs]
    for name, value in zip(names, results):
        out.print(f"{name}: {value.dtype}{list(value.shape)} "
                  f"{np.array2string(value.reshape(-1)[:8], precision=4)}"
                  + (" ..." if value.size > 8 else ""), markup=False)
        if args.save:
            Path(args.save).mkdir(parents=True, exist_ok=True)
            np.save(Path(args.save) / f"{name.replace('/', '_')}.npy", value)
    status = 0
    if args.check:
        expected, source = reference_outputs(model, feeds)
        status = print_check(names, results, expected, source, args.tolerance)
    if args.profile:
        print_profile(runner)
    if args.check or args.profile:
        print_by_op(runner)
    return status


def print_check(names: Sequence[str], results: Sequence[np.ndarray],
                expected: Sequence[np.ndarray], source: str, tolerance: float) -> int:
    table = Table(title=f"ixl against {source}")
    for col in ("output", "shape", "max abs error", "cosine", "verdict"):
        table.add_column(col)
    failed = 0
    for name, ours, theirs in zip(names, results, expected):
        c = compare_outputs(ours, theirs, tolerance)
        failed += not c.ok
        table.add_row(name, str(list(ours.shape)), f"{c.max_abs_err:.3g}", f"{c.cosine:.7f}",
                      "[green]ok[/]" if c.ok else f"[red]differs[/] ({c.reason})")
    out.print(table)
    return 1 if failed else 0


def print_profile(rep: IxlBackendRep | RunConvertedRep) -> None:
    record = rep.last_graph
    assert record is not None                       # printed after a run
    table = Table(title=f"{len(record.runs)} runs on {rep.chip}")
    for col in ("node (+ the others fused in)", "op", "path", "kernel / why not native",
                "modeled us"):
        table.add_column(col)
    colour = {"native": "green", "view": "green", "host": "cyan"}
    for run in record.runs:
        more = f" (+{len(run.nodes) - 1})" if len(run.nodes) > 1 else ""
        path = f"[{colour.get(run.path, 'yellow')}]{run.path}[/]"
        table.add_row((run.nodes[0] if run.nodes else "-") + more, run.op, path,
                      run.kernel or run.reason or "-", f"{run.time_us:.2f}")
    out.print(table)


def print_by_op(rep: IxlBackendRep | RunConvertedRep) -> None:
    """The modeled time by op and path, largest first."""
    record = rep.last_graph
    assert record is not None                       # printed after a run
    totals: dict[tuple[str, str], list] = {}
    for run in record.runs:
        entry = totals.setdefault((run.op, run.path), [0, 0.0])
        entry[0] += 1
        entry[1] += run.time_us
    table = Table(title=f"profile by op on {rep.chip}")
    for col in ("op", "path", "count", "modeled us", "share"):
        table.add_column(col)
    total = record.time_us or 1.0
    for (op, path), (count, us) in sorted(totals.items(), key=lambda kv: -kv[1][1]):
        table.add_row(op, path, str(count), f"{us:.1f}", f"{100 * us / total:.1f}%")
    out.print(table)
    shims = sum(1 for r in record.runs if r.path == "shim")
    host = sum(1 for r in record.runs if r.path == "host")
    native = sum(r.time_us for r in record.runs if r.path == "native")
    out.print(f"modeled time {record.time_us:.2f} us: {record.launches} launches "
              f"({record.launch_us:.2f} us of launch overhead), {shims} node(s) on the shim, "
              f"{host} evaluated on the host, {100 * native / total:.1f}% of the time on the "
              f"native path")


def cmd_inspect(args: argparse.Namespace) -> int:
    report = inspect_model(load_model(args.model))
    table = Table(title=f"{args.model}: {report.nodes} nodes, opset {report.opset}")
    for col in ("ONNX op", "count", "status", "runs as"):
        table.add_column(col)
    colour = {"native": "green", "view": "green", "shim": "yellow", "unsupported": "red"}
    for row in report.rows:
        table.add_row(row.op_type, str(row.count),
                      f"[{colour.get(row.status.split()[0], 'yellow')}]{row.status}[/]",
                      row.detail)
    out.print(table)
    unsupported = [r.op_type for r in report.rows if r.status == "unsupported"]
    out.print(f"{len(unsupported)} unsupported op type(s)"
              + (f": {', '.join(unsupported)}" if unsupported else ""))
    return 1 if unsupported else 0
