"""Rewrite node_cases.json from a fresh run: `python -m ixl.onnx.refresh_counts`.

Run it after a change to HIXL semantics, the ONNX translation or the case selection;
tests/external/test_onnx_node.py fails while the file is stale. The cases run as a sweep: on
every core by default (`--workers N`, `--ray auto|ADDRESS`), and with `--results FILE.jsonl`
an interrupted run resumes (`--resume`).
"""

from __future__ import annotations

import argparse
import json

import onnx

from ..console import err, out
from ..executor import one_line
from ..executor.display import print_summary
from ..executor.options import add_sweep_options, run_from_args
from ..hixl import BadInput
from .node_cases import COUNTS_FILE, count, node_case_sweep


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ixl.onnx.refresh_counts",
                                     description=__doc__.splitlines()[0])
    add_sweep_options(parser)
    args = parser.parse_args(argv)
    try:
        report = run_from_args(args, node_case_sweep(), "ONNX node cases")
    except BadInput as e:
        err.print(f"refresh_counts: error: {one_line(e)}", markup=False)
        return 2
    except KeyboardInterrupt:
        err.print("refresh_counts: interrupted; node_cases.json left as it was", markup=False)
        return 130
    passed = {o.id: o.ok for o in report.outcomes}
    COUNTS_FILE.write_text(json.dumps({"onnx": onnx.__version__, "ops": count(passed)},
                                      indent=1) + "\n")
    print_summary(report)
    out.print(f"{sum(passed.values())} of {len(passed)} ONNX node cases pass; wrote "
              f"{COUNTS_FILE}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
