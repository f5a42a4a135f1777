"""One module per op family; importing this package registers every family."""

from . import elementwise  # noqa: F401
