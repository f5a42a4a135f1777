"""Value types the commands' options share, so that a bad value is one clear line that says
what is allowed (argparse prints it as `argument --seed: ...`)."""

from __future__ import annotations

import argparse


def seed(text: str) -> int:
    """A random seed: numpy's generators take any non-negative integer."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer: give a seed such as "
                                         f"0 or 1234") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"{value} is negative: a seed is an integer from 0 up")
    return value
