"""The op database: one registry of schemas, filled by one module per op family.

The family modules load on first use, once, under a lock: a second thread asking meanwhile
waits for the whole database instead of seeing half of it.
"""

from __future__ import annotations

import difflib
import threading

from .errors import BadInput, UnknownOp
from .schema import OpSchema

_OPS: dict[str, OpSchema] = {}
_lock = threading.RLock()       # re-entrant: the family modules register while it is held
_loaded = False
_loading = False                # this thread is inside the import (a nested call returns)


def register(schema: OpSchema) -> OpSchema:
    with _lock:
        if schema.name in _OPS:
            raise ValueError(f"op {schema.name} is registered twice")
        _OPS[schema.name] = schema
    return schema


def _load() -> None:
    """Import every family module; marked loaded only once all of them registered."""
    global _loaded, _loading
    if _loaded:
        return
    with _lock:
        if _loaded or _loading:
            return
        _loading = True
        try:
            from . import ops  # noqa: F401  (each family module registers its ops)
            _loaded = True
        finally:
            _loading = False


def all_ops() -> dict[str, OpSchema]:
    _load()
    return dict(sorted(_OPS.items()))


def get_op(name: str) -> OpSchema:
    if not isinstance(name, str):
        raise BadInput(f"an op is named by a string such as 'Add', got {type(name).__name__} "
                       f"{name!r}")
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
