"""The command line's consoles: rich output on stdout, errors and progress on stderr.

A terminal sets the width; piped output (logs, CI) gets 120 columns so tables stay readable.
Progress shows on a terminal only: piped, it would leave a blank line on stderr, where an
error must stay one line."""

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from rich.console import Console
from rich.progress import Progress


def _width(stream) -> int | None:
    return None if stream.isatty() else 120


out = Console(highlight=False, soft_wrap=True, width=_width(sys.stdout))
err = Console(stderr=True, highlight=False, soft_wrap=True, width=_width(sys.stderr))


@contextmanager
def progress(description: str) -> Iterator[Callable[..., None]]:
    """A transient progress bar; yields `update(completed=, total=, description=)`."""
    if not err.is_terminal:
        yield lambda **fields: None
        return
    with Progress(console=err, transient=True) as bar:
        task = bar.add_task(description, total=None)
        yield lambda **fields: bar.update(task, **fields)
