"""One module per op family; importing this package registers every family."""

from . import (compare, control, conv, conv_transpose, elementwise, index,  # noqa: F401
               matmul, norm, pool, reduce, resize, shape, transdata)
