"""The command line's consoles: rich output on stdout, errors and progress on stderr.

A terminal sets the width; piped output (logs, CI) gets 120 columns so tables stay readable."""

import sys

from rich.console import Console


def _width(stream) -> int | None:
    return None if stream.isatty() else 120


out = Console(highlight=False, soft_wrap=True, width=_width(sys.stdout))
err = Console(stderr=True, highlight=False, soft_wrap=True, width=_width(sys.stderr))
