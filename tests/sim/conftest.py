import numpy as np
import pytest

from ixl.ascend import AICore, Mode, get_chip
from ixl.ascend import lang as asc


@pytest.fixture
def core():
    """One debug-mode core with a block running: instructions can be issued directly."""
    c = AICore(get_chip("910B1"), 0, Mode(debug=True))
    c.begin_block(0, 1)
    yield c
    c.end_block(check=False)


def ub_tensor(core, dtype, count, fill=None):
    """A fresh UB scratch tensor of `count` elements on `core`, optionally filled."""
    pipe = core.pipes[0] if core.pipes else asc.TPipe()
    b = asc.TBuf()
    pipe.init_buffer(b, count * np.dtype(dtype).itemsize)
    t = b.get(dtype, count)
    if fill is not None:
        t.view()[:] = fill
    return t
