"""Rewrite node_cases.json from a fresh run: `python -m ixl.onnx.refresh_counts`.

Run it after a change to HIXL semantics, the ONNX translation or the case selection;
tests/external/test_onnx_node.py fails while the file is stale.
"""

from __future__ import annotations

import json

import onnx

from .node_cases import COUNTS_FILE, count, run_cases


def main() -> int:
    passed = run_cases()
    counts = count(passed)
    COUNTS_FILE.write_text(json.dumps({"onnx": onnx.__version__, "ops": counts}, indent=1) + "\n")
    print(f"{sum(passed.values())} of {len(passed)} ONNX node cases pass; wrote {COUNTS_FILE}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
