"""One module per op family; importing this package registers every family."""

from . import compare, conv, elementwise, matmul, norm, reduce  # noqa: F401
