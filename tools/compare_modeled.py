"""Compare the modeled times of two `ixl verify --json` reports, case by case, bit for bit.

A change to the simulator's speed must not move a modeled time: make a report before the change
and one after, then

    python tools/compare_modeled.py before.json after.json

prints every case whose modeled_us (or status) differs, or that one report lacks, and exits 1 if
there is any.
"""

from __future__ import annotations

import argparse
import json
import sys


def case_key(row: dict) -> str:
    """What identifies a verify case: the op, its case name, shapes, dtype, chip and attrs."""
    return json.dumps([row.get(k) for k in ("op", "case", "shapes", "dtype", "chip", "attrs")],
                      sort_keys=True)


def load(path: str) -> dict[str, dict]:
    with open(path, encoding="utf-8") as f:
        return {case_key(row): row for row in json.load(f)}


def differences(before: dict[str, dict], after: dict[str, dict]) -> list[str]:
    found = []
    for key in sorted(before.keys() | after.keys()):
        a, b = before.get(key), after.get(key)
        if a is None or b is None:
            found.append(f"{'after' if a is None else 'before'} only: {key}")
        elif a.get("modeled_us") != b.get("modeled_us") or a.get("status") != b.get("status"):
            found.append(f"{key}: {a.get('status')} {a.get('modeled_us')!r} -> "
                         f"{b.get('status')} {b.get('modeled_us')!r}")
    return found


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("before")
    ap.add_argument("after")
    args = ap.parse_args()
    before, after = load(args.before), load(args.after)
    found = differences(before, after)
    for line in found:
        print(line)
    timed = sum(1 for row in after.values() if row.get("modeled_us") is not None)
    print(f"{len(after)} cases ({timed} timed): "
          f"{'identical' if not found else f'{len(found)} differ'}")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
