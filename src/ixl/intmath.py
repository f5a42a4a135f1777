"""Integer arithmetic every layer needs for tiles, blocks and alignment, spelled once.

A leaf module: it imports nothing of ixl, so any layer may use it.
"""

from __future__ import annotations


def ceil_div(a: int, b: int) -> int:
    """The number of `b`-sized pieces that cover `a` (Ascend C's CeilDiv)."""
    return -(-a // b)


def round_up(a: int, b: int) -> int:
    """`a` rounded up to a multiple of `b` (Ascend C's AlignUp)."""
    return -(-a // b) * b
