"""The tuning cache: the configuration `ixl tune` chose for an op, shape, dtype and chip, kept
as a small JSON file that the launch path consults when the caller gives no configuration.

The file is `$IXL_TUNING_CACHE` if set, else `~/.cache/ixl/tuning.json`.
"""

from __future__ import annotations

import json
import os
from pathlib import Path


def cache_path() -> Path:
    env = os.environ.get("IXL_TUNING_CACHE")
    return Path(env) if env else Path.home() / ".cache" / "ixl" / "tuning.json"


def key(chip: str, op: str, shapes, dtype: str | None) -> str:
    dims = ";".join("x".join(map(str, s)) if s is not None else "-" for s in shapes)
    return f"{chip}|{op}|{dims}|{dtype}"


def load() -> dict:
    path = cache_path()
    if not path.exists():
        return {}
    try:
        return json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):
        return {}


def lookup(chip: str, op: str, shapes, dtype: str | None) -> dict | None:
    return load().get(key(chip, op, shapes, dtype))


def store(chip: str, op: str, shapes, dtype: str | None, config: dict) -> Path:
    """Write atomically, so that a crash never leaves a half-written cache behind."""
    path = cache_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    data = load()
    data[key(chip, op, shapes, dtype)] = config
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=2, sort_keys=True))
    tmp.replace(path)
    return path
