"""The op database: one registry of schemas, filled by one module per op family."""

from __future__ import annotations

import difflib

from .errors import UnknownOp
from .schema import OpSchema

_OPS: dict[str, OpSchema] = {}


def register(schema: OpSchema) -> OpSchema:
    if schema.name in _OPS:
        raise ValueError(f"op {schema.name} is registered twice")
    _OPS[schema.name] = schema
    return schema


def _load() -> None:
    if not _OPS:
        from . import ops  # noqa: F401  (each family module registers its ops)


def all_ops() -> dict[str, OpSchema]:
    _load()
    return dict(sorted(_OPS.items()))


def get_op(name: str) -> OpSchema:
    _load()
    if name in _OPS:
        return _OPS[name]
    by_lower = {k.lower(): k for k in _OPS}
    if name.lower() in by_lower:
        hint = f" (did you mean {by_lower[name.lower()]}?)"
    else:
        close = difflib.get_close_matches(name, list(_OPS), n=3, cutoff=0.5)
        hint = f" (did you mean {', '.join(close)}?)" if close else ""
    raise UnknownOp(f"unknown op {name!r}{hint}; `ixl list` shows the {len(_OPS)} known ops")
