"""One module per op family; importing this package registers every family."""

from . import compare, elementwise, norm, reduce  # noqa: F401
