"""The environment variables ixl reads, checked when a device is made and when the command
starts: a bad value is an error naming the variable and what it may be, never a silent default.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from ..hixl import BadInput

LOG_LEVELS = ("info", "debug")            # IXL_LOG: info (the default) or debug
FLAGS = {"1": True, "true": True, "yes": True, "on": True,
         "0": False, "false": False, "no": False, "off": False}


def _value(name: str) -> str:
    return os.environ.get(name, "").strip()


def _check_choice(name: str, allowed, meaning: str) -> str | None:
    value = _value(name)
    if value and value.lower() not in allowed:
        return f"{name}={value!r} is not allowed: {meaning}"
    return None


def _check_threads() -> str | None:
    value = _value("IXL_THREADS")
    if value and not (value.isdigit() and int(value) >= 1):
        return (f"IXL_THREADS={value!r} is not allowed: a positive integer (it is no longer "
                f"read: the cores of a launch run interleaved in modeled time on one host "
                f"thread)")
    return None


def _check_tuning_cache() -> str | None:
    if "IXL_TUNING_CACHE" not in os.environ:
        return None
    value = os.environ["IXL_TUNING_CACHE"]
    path = Path(value)
    if not value.strip():
        return "IXL_TUNING_CACHE is empty: give the path of a JSON file, or unset it"
    if path.is_dir():
        return f"IXL_TUNING_CACHE={value!r} is a directory: give the path of a JSON file"
    if path.exists():
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
            return (f"IXL_TUNING_CACHE={value!r} is not a readable JSON file ({e}): fix or "
                    f"delete it, or point the variable elsewhere")
        if not isinstance(data, dict):
            return f"IXL_TUNING_CACHE={value!r} holds no JSON object: fix or delete it"
        return None
    existing = next(p for p in path.absolute().parents if p.exists())
    if not existing.is_dir():
        return (f"IXL_TUNING_CACHE={value!r} cannot be created: {existing} is a file, "
                f"not a directory")
    return None


def check() -> None:
    """Raise BadInput naming every ixl variable whose value is not allowed."""
    problems = [p for p in (
        _check_choice("IXL_LOG", LOG_LEVELS, "debug (print each launch's descs, addresses and "
                                             "tiling) or info (the default)"),
        _check_threads(),
        _check_choice("IXL_DEBUG", FLAGS, f"one of {', '.join(FLAGS)} (default off)"),
        _check_tuning_cache()) if p]
    if problems:
        raise BadInput("; ".join(problems))


def debug_default() -> bool:
    """Debug mode when a device is made without saying (IXL_DEBUG)."""
    return FLAGS.get(_value("IXL_DEBUG").lower(), False)
