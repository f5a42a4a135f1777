"""The kernels stay readable: no function over 60 lines and no class over 200 lines in
src/ixl/kernels (a longer one is split by concept: a host-side helper, a base class for the
queue set-up, a subclass for a strategy of its own)."""

import ast
from pathlib import Path

import ixl.kernels

KERNELS = Path(ixl.kernels.__file__).resolve().parent
LIMITS = {ast.FunctionDef: 60, ast.AsyncFunctionDef: 60, ast.ClassDef: 200}


def oversized(root: Path) -> list[str]:
    """Every function or class under `root` longer than its limit (lines from its `def` or
    `class` line to its last line), as 'path:line name (n lines, limit m)'."""
    found = []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            limit = LIMITS.get(type(node))
            if limit is None:
                continue
            lines = node.end_lineno - node.lineno + 1
            if lines > limit:
                found.append(f"{path.relative_to(root)}:{node.lineno} {node.name} "
                             f"({lines} lines, limit {limit})")
    return found


def test_no_kernel_function_or_class_is_over_its_size_limit():
    assert KERNELS.name == "kernels" and any(KERNELS.glob("*.py"))
    assert oversized(KERNELS) == []


def test_the_check_sees_an_oversized_class_and_function(tmp_path):
    body = "\n".join(f"    x{i} = {i}" for i in range(61))
    (tmp_path / "big.py").write_text(f"def long():\n{body}\n\nclass Big:\n"
                                     + "\n".join(f"    y{i} = {i}" for i in range(200)) + "\n",
                                     encoding="utf-8")
    assert oversized(tmp_path) == ["big.py:1 long (62 lines, limit 60)",
                                   "big.py:64 Big (201 lines, limit 200)"]
