"""The tuning cache: the configuration `ixl tune` chose for an op, shape, dtype and chip, kept
as a small JSON file that the launch path consults when the caller gives no configuration.

The file is `$IXL_TUNING_CACHE` if set, else `~/.cache/ixl/tuning.json`. Entries are the dict
form of a TuningConfig; one that is not (or a file that is not JSON) is an error naming the
file, never silently ignored.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Sequence
from pathlib import Path

from .tuning import InvalidTuningConfig, TuningConfig

_WRITE_LOCK = threading.Lock()       # two threads storing at once must not lose an entry


def cache_path() -> Path:
    env = os.environ.get("IXL_TUNING_CACHE")
    return Path(env) if env else Path.home() / ".cache" / "ixl" / "tuning.json"


def _where(path: Path) -> str:
    source = "$IXL_TUNING_CACHE" if os.environ.get("IXL_TUNING_CACHE") else "the default path"
    return f"the tuning cache {path} ({source})"


def key(chip: str, op: str, shapes: Sequence[Sequence[int] | None], dtype: str | None) -> str:
    dims = ";".join("x".join(map(str, s)) if s is not None else "-" for s in shapes)
    return f"{chip}|{op}|{dims}|{dtype}"


# the file as last parsed, by path: (its inode, size and modification time, its entries);
# every launch asks, and parsing the file each time cost more than a replayed launch
_parsed: dict[Path, tuple[tuple, dict]] = {}


def load() -> dict:
    """Every entry, as stored (dict form; not to be changed in place); {} when there is no
    cache yet. The file is parsed again whenever it changed (a store replaces it: a new
    inode)."""
    path = cache_path()
    try:
        st = path.stat()
        seen = _parsed.get(path)
        stamp = (st.st_ino, st.st_size, st.st_mtime_ns)
        if seen is not None and seen[0] == stamp:
            return seen[1]
        text = path.read_text()
    except FileNotFoundError:
        return {}
    except OSError as e:
        raise InvalidTuningConfig(f"{_where(path)} cannot be read: {e.strerror}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise InvalidTuningConfig(f"{_where(path)} is not JSON ({e.msg}, line {e.lineno}): "
                                  f"fix or delete it") from None
    if not isinstance(data, dict):
        raise InvalidTuningConfig(f"{_where(path)} must hold an object of configurations, "
                                  f"holds a {type(data).__name__}: fix or delete it")
    _parsed[path] = (stamp, data)
    return data


def check() -> None:
    """Every entry is a valid configuration (what a start-up check calls)."""
    for name, entry in load().items():
        _config(name, entry)


def _config(name: str, entry) -> TuningConfig:
    try:
        return TuningConfig.of(entry)
    except InvalidTuningConfig as e:
        raise InvalidTuningConfig(f"{_where(cache_path())}, entry {name!r}: {e.detail}"
                                  ) from None


def lookup(chip: str, op: str, shapes: Sequence[Sequence[int] | None], dtype: str | None
           ) -> TuningConfig | None:
    name = key(chip, op, shapes, dtype)
    entry = load().get(name)
    return None if entry is None else _config(name, entry)


def store(chip: str, op: str, shapes: Sequence[Sequence[int] | None], dtype: str | None,
          config: dict | TuningConfig) -> Path:
    """Write atomically, so that a crash never leaves a half-written cache behind."""
    entry = TuningConfig.of(config).to_dict()
    path = cache_path()
    with _WRITE_LOCK:
        path.parent.mkdir(parents=True, exist_ok=True)
        data = dict(load())
        data[key(chip, op, shapes, dtype)] = entry
        tmp = path.with_name(f"{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
        tmp.write_text(json.dumps(data, indent=2, sort_keys=True))
        tmp.replace(path)
    return path
