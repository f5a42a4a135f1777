"""Print the README's op coverage table from the op database and the registry.

    python tools/coverage_table.py
"""

from __future__ import annotations

from ixl.hixl import DTYPES, all_ops
from ixl.nixl import REGISTRY
from ixl.nixl.views import VIEW_OPS
from ixl.onnx import node_case_counts
from ixl.onnx.passes import SHAPE_ONLY
from ixl.onnx.translate import EXPANSIONS


def on_the_host(schema) -> bool:
    """An op a graph evaluates on the host: it reads only shapes, or only values the host
    reads anyway (its inputs are all shapes, counts and bounds)."""
    return schema.name in SHAPE_ONLY or set(schema.inputs) <= set(schema.host_inputs)


def main() -> None:
    counts = node_case_counts()
    print("| op | tier | family | path on the 910B | native dtypes | ONNX node cases passed |")
    print("|---|---|---|---|---|---|")
    for name, schema in all_ops().items():
        entry = REGISTRY.native(name)
        c = counts.get(name)
        cases = f"{c['passed']}/{c['total']}" if c else "-"
        dtypes = "-" if not entry else "every dtype" if set(entry.dtypes) == set(DTYPES) \
            else ", ".join(entry.dtypes)
        path = "native" if entry else "view (no copy)" if name in VIEW_OPS else \
            "host in a graph, shim alone" if on_the_host(schema) else "shim"
        print(f"| {name} | {schema.tier} | {schema.family} | {path} | {dtypes} | {cases} |")
    for name in sorted(EXPANSIONS):       # ONNX ops the import expands into ixl ops
        c = counts.get(name)
        cases = f"{c['passed']}/{c['total']}" if c else "-"
        print(f"| {name} (ONNX) | - | expanded at import | the ops it expands into | - | "
              f"{cases} |")


if __name__ == "__main__":
    main()
