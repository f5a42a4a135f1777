"""One module per op family; importing this package registers every family."""

from . import compare, conv, elementwise, index, matmul, norm, reduce, shape  # noqa: F401
