"""`ixl onnx run MODEL.onnx`: run a model file on a simulated chip (thin: parse, run, print)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from rich.table import Table

from ..ascend import CHIPS
from ..console import out
from ..files import load_npy
from .backend import IxlBackend, IxlBackendRep



def add_parser(subparsers) -> None:
    """Add `onnx run` to the `ixl` command's subparsers."""
    parser = subparsers.add_parser("onnx", help="run ONNX models on the simulated chip")
    sub = parser.add_subparsers(dest="onnx_command", required=True)
    run = sub.add_parser("run", help="run MODEL.onnx node by node (native kernels or the shim)")
    run.add_argument("model", help="path of an .onnx file")
    run.add_argument("--input", action="append", default=[], metavar="NAME=FILE.npy",
                     help="a model input from a .npy file; once per input")
    run.add_argument("--chip", default="910B1", help=f"one of {', '.join(CHIPS)} (default 910B1)")
    run.add_argument("--profile", action="store_true",
                     help="per node: the ixl op, native or shim, and the modeled time")
    run.add_argument("--debug", action="store_true", help="debug mode (NaN-filled buffers, ...)")
    run.add_argument("--save", metavar="DIR", help="write each output to DIR/NAME.npy")
    run.set_defaults(func=cmd_run)


def load_model(path: str) -> onnx.ModelProto:
    if not Path(path).is_file():
        raise ValueError(f"no such model file: {path}")
    try:
        return onnx.load(path)
    except Exception as e:
        raise ValueError(f"{path} is not a readable ONNX model ({e})") from None


def parse_inputs(items: list[str]) -> dict[str, np.ndarray]:
    feeds = {}
    for item in items:
        name, sep, file = item.partition("=")
        if not sep or not name or not file:
            raise ValueError(f"--input {item!r} does not parse: use NAME=FILE.npy")
        if not Path(file).is_file():
            raise ValueError(f"--input {name}: no such file {file}")
        feeds[name] = load_npy(file, f"--input {name}")
    return feeds


def prepare(model: onnx.ModelProto, chip: str, debug: bool) -> IxlBackendRep:
    try:
        return IxlBackend.prepare(model, chip=chip, debug=debug)
    except onnx.checker.ValidationError as e:
        raise ValueError(f"the model is not valid ONNX: {e}") from None


def cmd_run(args) -> int:
    rep = prepare(load_model(args.model), args.chip, args.debug)
    feeds = parse_inputs(args.input)
    declared = {s.name: s for s in rep.converted.inputs}
    unknown = sorted(set(feeds) - set(declared))
    missing = [str(s) for name, s in declared.items() if name not in feeds]
    if unknown or missing:
        raise ValueError(f"inputs: the model takes {', '.join(map(str, declared.values()))}"
                         + (f"; unknown: {', '.join(unknown)}" if unknown else "")
                         + (f"; missing: {', '.join(missing)}" if missing else ""))
    results = rep.run(feeds)
    for name, value in zip(rep.graph.outputs, results):
        out.print(f"{name}: {value.dtype}{list(value.shape)} "
                  f"{np.array2string(value.reshape(-1)[:8], precision=4)}"
                  + (" ..." if value.size > 8 else ""))
        if args.save:
            Path(args.save).mkdir(parents=True, exist_ok=True)
            np.save(Path(args.save) / f"{name.replace('/', '_')}.npy", value)
    if args.profile:
        print_profile(rep)
    return 0


def print_profile(rep: IxlBackendRep) -> None:
    record = rep.last_graph
    table = Table(title=f"{len(record.runs)} nodes on {rep.chip}")
    for col in ("node", "op", "path", "kernel / why the shim", "modeled us"):
        table.add_column(col)
    for node, run in zip(rep.graph.nodes, record.runs):
        path = "[green]native[/]" if run.path == "native" else "[yellow]shim[/]"
        table.add_row(node.name, node.op, path, run.kernel or run.reason or "-",
                      f"{run.time_us:.2f}")
    out.print(table)
    shims = sum(1 for r in record.runs if r.path == "shim")
    out.print(f"modeled time {record.time_us:.2f} us: {record.launches} launches "
              f"({record.launch_us:.2f} us of launch overhead), {shims} node(s) on the shim")
