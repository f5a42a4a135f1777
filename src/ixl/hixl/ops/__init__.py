"""One module per op family; importing this package registers every family."""

from . import compare, elementwise  # noqa: F401
