"""Print the README's op coverage table from the op database and the registry.

    python tools/coverage_table.py
"""

from __future__ import annotations

from ixl.hixl import all_ops
from ixl.nixl import REGISTRY
from ixl.nixl.views import VIEW_OPS
from ixl.onnx import node_case_counts


def main() -> None:
    counts = node_case_counts()
    print("| op | tier | family | path on the 910B | native dtypes | ONNX node cases passed |")
    print("|---|---|---|---|---|---|")
    for name, schema in all_ops().items():
        entry = REGISTRY.native(name)
        c = counts.get(name)
        cases = f"{c['passed']}/{c['total']}" if c else "-"
        dtypes = ", ".join(entry.dtypes) if entry else "-"
        path = "native" if entry else "view (no copy)" if name in VIEW_OPS else "shim"
        print(f"| {name} | {schema.tier} | {schema.family} | {path} | {dtypes} | {cases} |")


if __name__ == "__main__":
    main()
