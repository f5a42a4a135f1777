"""One module per op family; importing this package registers every family."""

from . import (  # noqa: F401
    compare,
    control,
    conv,
    conv_transpose,
    elementwise,
    index,
    matmul,
    norm,
    pool,
    position,
    reduce,
    resize,
    shape,
    transdata,
)
